"""Per-pair cost of the sandbox identity (issue 30 items 1 and 6): a root harness handing a
pair's writable trees to the identity, and the reaper's child switching to it before exec.

Each figure is the mean over ``--runs`` rounds (the variants take turns), printed with the
load average; root only (an unprivileged harness never switches):

- hand over: ``scoring.workspace.hand_over`` on a fresh pair directory (four ``chmod``, two
  ``chown``, one ``mkdir``), against making that directory alone;
- one supervised ``/bin/true`` under ``supervise.process.run`` as the identity
  (``setgroups``, ``setgid``, ``setuid`` in the child) and as the harness: the difference is
  what the switch costs a pair's start.

    python benchmarks/identity_cost.py [--runs 200]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from interleaved import mean_ms  # benchmarks/ is sys.path[0] when run as a script

from lean_eval.sandbox import identity
from lean_eval.scoring import workspace
from lean_eval.supervise import process


def _true(user: tuple[int, int] | None) -> Callable[[], object]:
    def step() -> None:
        out = process.run(("/bin/true",), env={}, cwd=Path("/"), timeout=30, user=user)
        if out.returncode != 0:
            raise SystemExit(f"/bin/true failed as {user}: {out}")
    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("only a root harness switches identity: run this as root")
    user = identity.default()
    switch = user.switch_to()
    root = Path(tempfile.mkdtemp(prefix="lean-eval-identity-bench-"))
    count = iter(range(1 << 30))

    def fresh() -> workspace.PairDirs:
        dirs = workspace.pair_dirs(root, "sub", f"p{next(count)}")
        dirs.root.mkdir(mode=0o700, parents=True)
        (dirs.workspace / ".lake").mkdir(parents=True)
        dirs.state.mkdir(mode=0o700)
        return dirs

    def handed() -> None:
        workspace.hand_over(root, fresh(), switch)

    try:
        print(f"identity {user.describe()}; load average {os.getloadavg()[0]:.1f}")
        made, over, as_user, as_root = mean_ms(args.runs, fresh, handed, _true(switch),
                                                _true(None))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"  make a pair directory:            {made:7.3f} ms")
    print(f"  ... and hand it over:             {over:7.3f} ms")
    print(f"  /bin/true as the identity:        {as_user:7.2f} ms")
    print(f"  /bin/true as the harness:         {as_root:7.2f} ms")
    print(f"per pair: hand-over {over - made:+.3f} ms, switch {as_user - as_root:+.2f} ms "
          f"({(over - made + as_user - as_root) / as_root:+.1%} of a bare supervised start)")


if __name__ == "__main__":
    main()
