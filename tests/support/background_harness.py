"""Another lean-eval harness, in a pid namespace of its own, scoring batches in a loop beside
whatever else runs on this machine (issue 30: the project's whole check must pass while one
does). Root only (``unshare --pid --fork --mount-proc``); the stand-in toolchain and real
bubblewrap, as the suite uses them.

    sudo python3 tests/support/background_harness.py [--rounds N] [--base DIR]

Each round scores a fresh batch of a correct pair and a correct pair whose build sleeps a few
seconds (so its group lives while other harnesses start and reclaim) at ``-j 2`` under this
tree's code, and checks that both end ``accepted`` under a cgroup; a line per round says how
it went. It runs until ``--rounds`` rounds are done or it is sent SIGINT/SIGTERM, and exits 1
if any round failed. Everything it writes is under ``--base`` (default: a fresh directory
under LEAN_EVAL_TEST_OUTSIDE, else /srv/lean-eval-tests), removed at the end; its harness's
temporary files go there too (TMPDIR), never into /tmp.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess  # noqa: TID251 - a harness in a namespace of its own is a real child process
import sys
import tempfile
from pathlib import Path
from types import FrameType

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run as a script: ``support`` is importable

from support.files import copy_benchmark, good, sleeper  # noqa: E402
from support.namespaces import in_pid_namespace, pid_namespace_problem  # noqa: E402
from support.places import BWRAP_FLOOR, PROBLEM, REPO, STANDIN  # noqa: E402

SLEEP = 4  # seconds the slow pair's build sleeps
_stop: list[int] = []


def _stopped(signum: int, frame: FrameType | None) -> None:
    del frame
    _stop.append(signum)


def one_round(base: Path, bench: Path, subs: Path, n: int) -> str | None:
    """Score the batch once in a new pid namespace; why it failed (None: both accepted)."""
    out, work = base / f"out-{n}", base / f"work-{n}"
    argv = in_pid_namespace((
        sys.executable, "-m", "lean_eval", "run-eval", str(subs / "good"), str(subs / "slow"),
        "--out", str(out), "--work-dir", str(work), "--benchmark", str(bench),
        "--toolchain", str(STANDIN), "--timeout", "300", "-q", "--skip-probes", "-j", "2",
        "--allow-bwrap-version", BWRAP_FLOOR))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PYTEST")},
           "PYTHONPATH": str(REPO), "TMPDIR": str(base)}
    work.mkdir()
    try:
        done = subprocess.run(argv, env=env, cwd=base, capture_output=True, text=True,
                              timeout=900, check=False)
        if done.returncode != 0:
            return f"exit {done.returncode}: {(done.stdout + done.stderr).strip()[-400:]}"
        for sub in ("good", "slow"):
            found = json.loads((out / sub / f"{PROBLEM}.json").read_text())
            mechanism = found["limits"]["mechanism"]
            if found["verdict"] != "accepted" or not mechanism.startswith("cgroup"):
                return (f"{sub}: {found['verdict']} ({found['execution']}) under {mechanism}: "
                        f"{found['reason']['message'][:300]}")
        return None
    finally:
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=0, help="stop after N rounds (0: never)")
    parser.add_argument("--base", type=Path, default=None, help="where it writes")
    args = parser.parse_args()
    problem = pid_namespace_problem()
    if problem is not None:
        print(f"background harness: {problem}", file=sys.stderr)
        return 2
    outside = Path(os.environ.get("LEAN_EVAL_TEST_OUTSIDE", "/srv/lean-eval-tests"))
    if args.base is None:
        outside.mkdir(parents=True, exist_ok=True)
    base = args.base or Path(tempfile.mkdtemp(prefix="background-", dir=outside))
    base.mkdir(parents=True, exist_ok=True)
    base.chmod(0o755)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _stopped)
    failed = n = 0
    try:
        bench, subs = base / "bench", base / "subs"
        bench.mkdir()
        copy_benchmark(bench)
        good(subs)
        sleeper(subs, "slow", SLEEP)
        while not _stop and (args.rounds == 0 or n < args.rounds):
            n += 1
            why = one_round(base, bench, subs, n)
            failed += why is not None
            print(f"background harness: round {n}: {why or 'both pairs accepted'}", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"background harness: {n} round(s), {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
