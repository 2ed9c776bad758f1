"""Per-pair cost of the kernel mechanism for limits (issue 23 item 5): making a pair's cgroup
(v2, or v1 memory and pids), the child joining it before exec, and removing it.

Each figure is the mean over ``--runs`` rounds (the variants take turns), printed with the
mechanism in use and the load average:

- make + remove: ``cgroup.make_pair_group`` with a memory and a process limit, then
  ``PairGroup.remove`` (no process ever joins);
- one supervised ``/bin/true`` under ``supervise.process.run`` with limits enforced by the
  kernel mechanism, by the watchdog, and with no limits at all: the first minus the last is
  what the mechanism costs a pair end to end (making, joining, the reaper's looks, removing).

    python benchmarks/cgroup_cost.py [--runs 200]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from interleaved import mean_ms  # benchmarks/ is sys.path[0] when run as a script

from lean_eval.supervise import cgroup, process
from lean_eval.supervise.resources import PairLimits

LIMITS = PairLimits(128 << 20, 64)



def _true(limits: PairLimits | None) -> Callable[[], object]:
    def step() -> None:
        out = process.run(("/bin/true",), env={}, cwd=Path("/"), timeout=30, limits=limits)
        if out.returncode != 0:
            raise SystemExit(f"/bin/true failed under {limits}: {out}")
    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    parent = cgroup.cgroup_parent()
    if parent is None:
        raise SystemExit(f"no kernel mechanism here: {cgroup.unavailable_reason()}")

    def make_remove() -> None:
        group = cgroup.make_pair_group(parent, LIMITS.memory_limit, LIMITS.max_processes)
        error = group.remove()
        if error:
            raise SystemExit(error)

    print(f"mechanism {parent.version} ({', '.join(map(str, parent.paths))}); "
          f"load average {os.getloadavg()[0]:.1f}")
    bare, kernel, watchdog, none = mean_ms(
        args.runs, make_remove, _true(LIMITS), _true(LIMITS._replace(mechanism="watchdog")),
        _true(None))
    print(f"  make + remove a pair group:        {bare:7.2f} ms")
    print(f"  /bin/true, {parent.version} limits:      {kernel:7.2f} ms")
    print(f"  /bin/true, watchdog limits:       {watchdog:7.2f} ms")
    print(f"  /bin/true, no limits:             {none:7.2f} ms")
    print(f"per pair: {parent.version} {kernel - none:+.2f} ms, watchdog {watchdog - none:+.2f} ms "
          "against no limits")


if __name__ == "__main__":
    main()
