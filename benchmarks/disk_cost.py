"""Per-pair cost of the disk budget's kernel mechanism (issue 30 items 2 and 6): a size-capped
tmpfs of the pair's own, mounted before its workspace is copied in and unmounted before its
directory is removed (``supervise.pair_fs``).

Each figure is the mean over ``--runs`` rounds (the variants take turns, so a change in the
machine's load falls on all alike), printed with the load average:

- mount + unmount: ``pair_fs.mount`` of a 4 GiB, 100,000-inode tmpfs on an empty directory,
  then ``pair_fs.unmount``;
- a pair's directory life without running anything: ``workspace.prepare``, the filesystem
  (or not), ``workspace.materialise`` of a trusted workspace of ``--files`` files of 4 KiB,
  ``workspace.remove``; with a filesystem of its own and without;
- one supervised ``/bin/true`` under ``supervise.process.run`` with a 4 GiB disk budget, its
  reaper reading the pair filesystem's ``statvfs`` or walking the trees (the watchdog).

    python benchmarks/disk_cost.py [--runs 200 --files 64]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from interleaved import mean_ms  # benchmarks/ is sys.path[0] when run as a script

from lean_eval.scoring import workspace
from lean_eval.supervise import pair_fs, process
from lean_eval.supervise.resources import PairLimits

BUDGET = 4 << 30
FILES = 100_000



def _mount_cycle(base: Path) -> Callable[[], object]:
    point = base / "mount"
    point.mkdir()

    def step() -> None:
        pair_fs.mount(point, BUDGET, FILES)
        pair_fs.unmount(point)
    return step


def _pair_life(base: Path, name: str, trusted: dict[str, bytes], own: bool
               ) -> Callable[[], object]:
    dirs = workspace.pair_dirs(base / name, "sub", "problem")

    def step() -> None:
        workspace.prepare(dirs)
        if own and not workspace.own_filesystem(dirs, BUDGET, FILES):
            raise SystemExit("the pair filesystem was refused")
        workspace.materialise(dirs, trusted, {}, (), None)
        if workspace.remove(dirs):
            raise SystemExit(f"{dirs.root} was not removed")
    return step


def _true(base: Path, name: str, own: bool) -> Callable[[], object]:
    dirs = workspace.pair_dirs(base / name, "sub", "problem")
    workspace.prepare(dirs)
    if own and not workspace.own_filesystem(dirs, BUDGET, FILES):
        raise SystemExit("the pair filesystem was refused")
    dirs.workspace.mkdir()
    dirs.state.mkdir()
    limits = PairLimits(None, None, "watchdog", BUDGET, FILES,
                        (str(dirs.workspace), str(dirs.state)),
                        disk_mount=str(dirs.root) if own else None)

    def step() -> None:
        out = process.run(("/bin/true",), env={}, cwd=Path("/"), timeout=30, limits=limits)
        if out.returncode != 0 or out.limit_exceeded:
            raise SystemExit(f"/bin/true failed: {out}")
    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--files", type=int, default=64)
    args = parser.parse_args()
    why = pair_fs.unavailable_reason()
    if why is not None:
        raise SystemExit(f"no pair filesystem here: {why}")
    trusted = {f"Lib/M{i}.lean": os.urandom(4096) for i in range(args.files)}
    with tempfile.TemporaryDirectory(prefix="disk-cost-", dir="/srv") as tmp:
        base = Path(tmp)
        try:
            (cycle,) = mean_ms(args.runs, _mount_cycle(base))
            own, plain = mean_ms(args.runs, _pair_life(base, "own", trusted, True),
                                  _pair_life(base, "plain", trusted, False))
            true_own, true_walk = mean_ms(args.runs, _true(base, "t-own", True),
                                           _true(base, "t-walk", False))
        finally:
            pair_fs.unmount_below(base)
    print(f"mount + unmount of a pair filesystem: {cycle:.3f} ms")
    print(f"a pair's directory ({args.files} trusted files): {own:.2f} ms with a filesystem of "
          f"its own, {plain:.2f} ms without ({own - plain:+.2f} ms)")
    print(f"supervised /bin/true with a disk budget: {true_own:.1f} ms (pair filesystem), "
          f"{true_walk:.1f} ms (watchdog walk) ({true_own - true_walk:+.1f} ms)")
    print(f"{args.runs} rounds; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
