"""Per-pair harness overhead at --jobs 1, at 10 and at 5,000 pairs (issue 7 item 9).

Overhead per pair = (wall time of the run - its fixed start-up - the time the pairs' own
scoring took) / pairs, where a pair's own time is its verdict's ``timings.wall_seconds``
(workspace, Lake and kernels) and the start-up is measured by a run of one unchanged starter.
The small batch is ``--real`` correct pairs; the large one is the same pairs plus unchanged
starters up to ``--large`` (their pairs never start a sandbox, so what remains is the harness's
own work per pair: intake, planning, the verdict write, the summary). Targets: <= 0.1 s per
pair, and the same at both sizes.

    python benchmarks/overhead.py [--real 10 --large 5000]
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from batch_setup import bench_copy, correct, run_eval, starter, startup, submission, workdir


def _overhead(where: Path, bench: Path, subs: list[Path], fixed: float, name: str) -> float:
    out = where / f"out-{name}"
    result = run_eval(bench, subs, out, "--jobs", "1", "--work-dir", str(where / "work"))
    if result.returncode != 0:
        raise SystemExit(f"{name}: run failed: {result.stderr[-2000:]}")
    own = sum(json.loads(p.read_bytes())["timings"]["wall_seconds"]
              for p in out.glob("*/*.json"))
    per_pair = (result.wall - fixed - own) / len(subs)
    print(f"  {name:>12}: {len(subs)} pairs, wall {result.wall:6.1f} s, pairs' own "
          f"{own:6.1f} s, overhead {per_pair * 1000:6.1f} ms/pair")
    return per_pair


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, default=Path("/srv/lean-eval-bench"))
    parser.add_argument("--real", type=int, default=10)
    parser.add_argument("--large", type=int, default=5000)
    args = parser.parse_args()
    where = workdir(args.base, "overhead")
    try:
        bench = bench_copy(where)
        fixed = startup(bench, where)
        print(f"  start-up (one unchanged pair): {fixed:.2f} s")
        real = [submission(where / "subs", f"r{i}", {"Submission.lean": correct()})
                for i in range(args.real)]
        filler = [submission(where / "subs", f"u{i:05d}", {"Submission.lean": starter()})
                  for i in range(args.large - args.real)]
        small = _overhead(where, bench, real, fixed, "small")
        large = _overhead(where, bench, real + filler, fixed, "large")
    finally:
        shutil.rmtree(where, ignore_errors=True)
    print(f"overhead per pair: {small * 1000:.1f} ms at {args.real}, {large * 1000:.1f} ms at "
          f"{args.large} (target <= 100 ms: "
          f"{'met' if max(small, large) <= 0.1 else 'MISSED'}; large / small "
          f"{large / small if small > 0 else float('inf'):.2f})")


if __name__ == "__main__":
    main()
