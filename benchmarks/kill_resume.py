"""SIGKILL a 100-pair run at random moments, re-run after each kill (issue 7 item 9).

``--kills`` times: start ``run-eval`` on the same ``--out`` and ``--work-dir``, SIGKILL the
harness after a random delay, wait for its tree to go, then check. A last run goes to the end.
Counted over the whole sequence:

- lost: pairs without a verdict after the last run (target 0);
- scored twice: verdict files that changed (inode or mtime) after they were first seen
  complete and not ``error`` (target 0);
- half-written: verdict files that do not parse, and ``*.tmp`` files left after the last run
  (target 0);
- survivors: processes of the run still alive after each kill (target 0).

    python benchmarks/kill_resume.py [--pairs 100 --kills 20 --seed 1]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import threading
import time
from pathlib import Path

from batch_setup import bench_copy, correct, run_eval, starter, submission, survivors, workdir


def _scan(out: Path, seen: dict[Path, tuple[int, int]]) -> tuple[int, int]:
    """(verdicts changed after completion, unparsable verdicts) since the last scan."""
    twice = broken = 0
    for path in out.glob("*/*.json"):
        try:
            st = path.stat()
            data = json.loads(path.read_bytes())
        except (OSError, ValueError):
            broken += 1
            continue
        key = (st.st_ino, st.st_mtime_ns)
        if path in seen and seen[path] != key:
            twice += 1
        if data.get("verdict") != "error":
            seen.setdefault(path, key)
        else:
            seen.pop(path, None)
    return twice, broken


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, default=Path("/srv/lean-eval-bench"))
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)  # noqa: S311 - reproducible kill moments, not secrets
    where = workdir(args.base, "kill")
    twice = broken = alive = 0
    try:
        bench = bench_copy(where)
        # Every pair is a real sandboxed build lasting a second or two; every fifth is an
        # unchanged starter (verdict without a sandbox), so kills land in both kinds of work.
        build = correct() + "\n-- standin-io: sleep 1\n"
        subs = [submission(where / "subs", f"k{i:03d}",
                           {"Submission.lean": starter() if i % 5 == 4 else build})
                for i in range(args.pairs)]
        out, work, pidfile = where / "out", where / "work", where / "harness.pid"
        extra = ("--work-dir", str(work), "--jobs", "2")
        seen: dict[Path, tuple[int, int]] = {}
        kills = mid_run = 0
        for _ in range(args.kills):
            pidfile.unlink(missing_ok=True)
            delay = rng.uniform(1.0, 10.0)  # start-up is ~3 s, a full run ~100 s

            def killer(wait: float = delay) -> None:
                deadline = time.monotonic() + 60
                while not pidfile.exists() and time.monotonic() < deadline:
                    time.sleep(0.01)
                time.sleep(wait)
                with contextlib.suppress(OSError, ValueError):
                    os.kill(int(pidfile.read_text()), signal.SIGKILL)

            thread = threading.Thread(target=killer)
            result = run_eval(bench, subs, out, *extra, on_start=thread.start,
                              env_extra={"BENCH_PIDFILE": str(pidfile)})
            thread.join()
            kills += result.signal == signal.SIGKILL
            mid_run += result.signal == signal.SIGKILL and not (out / "summary.json").exists()
            time.sleep(0.5)
            alive += len(survivors(str(where)))
            t, b = _scan(out, seen)
            twice, broken = twice + t, broken + b
            done = len(list(out.glob("*/*.json")))
            print(f"  kill after {delay:.1f} s: {done} verdicts on disk "
                  f"({'killed' if result.signal else f'finished, exit {result.returncode}'})")
        final = run_eval(bench, subs, out, *extra)
        t, b = _scan(out, seen)
        twice, broken = twice + t, broken + b + len(list(out.rglob("*.tmp")))
        alive += len(survivors(str(where)))
        verdicts = {p.parent.name for p in out.glob("*/*.json")}
        lost = sum(1 for s in subs if s.name not in verdicts)
        reused = json.loads((out / "summary.json").read_text())["reused"]
        print(f"last run: exit {final.returncode}, {reused} verdicts reused")
    finally:
        shutil.rmtree(where, ignore_errors=True)
    print(f"{kills} SIGKILLs ({mid_run} before any run had finished) of a {args.pairs}-pair "
          f"run: lost {lost}, scored twice {twice}, "
          f"half-written {broken}, survivors {alive} (target 0 each: "
          f"{'met' if lost == twice == broken == alive == 0 else 'MISSED'})")


if __name__ == "__main__":
    main()
