"""Parallel efficiency of run-eval --jobs (issue 7 item 9), printed as ratios from one run.

- sleep-bound: ``--sleepers`` correct pairs whose build sleeps ``--sleep`` seconds, scored with
  ``--jobs 1`` then ``--jobs 4``; target speed-up >= 3.6x.
- CPU-bound: ``--burners`` correct pairs whose build spins a shell loop (``--loops``
  iterations, about 2 s of CPU each), ``--jobs 1`` then ``--jobs 2``; target >= 1.7x on a
  2-core machine. Other load on the machine lowers this one directly: the load average is
  printed with it.

    python benchmarks/parallel.py [--sleepers 16 --sleep 8 --burners 4 --loops 1500000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

from batch_setup import bench_copy, correct, run_eval, startup, submission, summary, workdir


def _not_accepted(out: Path) -> str:
    """Each pair that was not accepted: its verdict, reason and log tail (the run's directory
    is removed afterwards, so this is all that is kept of it)."""
    lines = []
    for pair in summary(out)["pairs"]:
        if pair["verdict"] != "accepted":
            data = json.loads((out / pair["path"]).read_text(encoding="utf-8"))
            lines.append(f"{pair['submission']}: {data['verdict']} ({data['execution']}) "
                         f"{data['reason']} last_phase={data.get('last_phase')}\n  "
                         + "\n  ".join(data["log"]["tail"][-15:]) + "\n")
    return "".join(lines)


def _speedup(base: Path, name: str, line: str, count: int,
             jobs: tuple[int, int]) -> tuple[float, float]:
    """Speed-up of the whole run, and of the run minus its fixed start-up cost."""
    where = workdir(base, name)
    try:
        bench = bench_copy(where)
        fixed = startup(bench, where)
        print(f"  {name}: start-up (one unchanged pair): {fixed:.1f} s")
        subs = [submission(where / "subs", f"{name}{i}",
                           {"Submission.lean": correct() + f"\n-- standin-io: {line}\n"})
                for i in range(count)]
        walls = []
        for j in jobs:
            out = where / f"out-j{j}"
            result = run_eval(bench, subs, out, "--jobs", str(j), "--work-dir",
                              str(where / "work"))
            counts = summary(out)["counts"]
            if result.returncode != 0 or counts["accepted"] != count:
                raise SystemExit(f"{name} --jobs {j} did not accept every pair: {counts}\n"
                                 f"{_not_accepted(out)}{result.stderr[-2000:]}")
            walls.append(result.wall)
            print(f"  {name}: --jobs {j}: {result.wall:6.1f} s for {count} pairs")
        return walls[0] / walls[1], (walls[0] - fixed) / (walls[1] - fixed)
    finally:
        shutil.rmtree(where, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, default=Path("/srv/lean-eval-bench"))
    parser.add_argument("--sleepers", type=int, default=16)
    parser.add_argument("--sleep", type=float, default=8)
    parser.add_argument("--burners", type=int, default=4)
    parser.add_argument("--loops", type=int, default=1_500_000)
    parser.add_argument("--only", choices=("sleep", "cpu"), help="Run one of the two halves.")
    args = parser.parse_args()
    results = {}
    if args.only in (None, "sleep"):
        results["sleep-bound --jobs 4 vs 1"] = (
            _speedup(args.base, "sleep", f"sleep {args.sleep}", args.sleepers, (1, 4)), 3.6)
    if args.only in (None, "cpu"):
        spin = f"i=0; while [ $i -lt {args.loops} ]; do i=$((i+1)); done"
        results["CPU-bound   --jobs 2 vs 1"] = (
            _speedup(args.base, "cpu", spin, args.burners, (1, 2)), 1.7)
    load = os.getloadavg()[0]
    for label, ((whole, scoring), target) in results.items():
        print(f"{label}: {whole:.2f}x whole run, {scoring:.2f}x without the fixed start-up "
              f"(target >= {target}: {'met' if whole >= target else 'MISSED'} whole, "
              f"{'met' if scoring >= target else 'MISSED'} without start-up)")
    print(f"load average {load:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
