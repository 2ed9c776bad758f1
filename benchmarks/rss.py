"""Harness peak RSS does not grow with the number or size of submissions (issue 7 item 9).

Peak RSS of the run-eval process itself (``ru_maxrss``; sandboxes and Lake are other
processes) for 10, 100 and 1,000 submissions of one pair each (one correct proof, the rest
unchanged starters, so the run stays short), and for 100 submissions each carrying a 1 MB
helper module beside a correct proof (100 scored pairs). Targets: flat within 20% across the
batch sizes, and at most 150 MB everywhere.

    python benchmarks/rss.py [--sizes 10 100 1000] [--big 100]
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from batch_setup import bench_copy, correct, run_eval, starter, submission, summary, workdir

MB = 1_000_000


def _peak(where: Path, bench: Path, subs: list[Path], name: str) -> float:
    out = where / f"out-{name}"
    result = run_eval(bench, subs, out, "--work-dir", str(where / "work"))
    if result.returncode != 0 or result.peak_rss_mb is None:
        raise SystemExit(f"{name}: run failed: {result.stderr[-2000:]}")
    counts = {k: v for k, v in summary(out)["counts"].items() if v}
    print(f"  {name:>28}: peak RSS {result.peak_rss_mb:6.1f} MB, {result.wall:6.1f} s, {counts}")
    return result.peak_rss_mb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, default=Path("/srv/lean-eval-bench"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--big", type=int, default=100)
    args = parser.parse_args()
    where = workdir(args.base, "rss")
    try:
        bench = bench_copy(where)
        peaks = []
        for size in args.sizes:
            subs = [submission(where / f"subs{size}", "solver", {"Submission.lean": correct()})]
            subs += [submission(where / f"subs{size}", f"u{i}", {"Submission.lean": starter()})
                     for i in range(size - 1)]
            peaks.append(_peak(where, bench, subs, f"{size} submissions"))
        helper = ("-- " + "x" * 97 + "\n") * (MB // 101)
        big = [submission(where / "big", f"b{i}", {"Submission.lean": correct(),
                                                  "Submission/Helper.lean": helper})
               for i in range(args.big)]
        heavy = _peak(where, bench, big, f"{args.big} x 1 MB submissions")
    finally:
        shutil.rmtree(where, ignore_errors=True)
    spread = max(peaks) / min(peaks) - 1
    worst = max(*peaks, heavy)
    print(f"spread across batch sizes: {spread * 100:.1f}% (target <= 20%: "
          f"{'met' if spread <= 0.2 else 'MISSED'})")
    print(f"1 MB submissions vs {args.sizes[0]} submissions: {heavy / peaks[0]:.2f}x; "
          f"largest peak {worst:.1f} MB (target <= 150 MB: {'met' if worst <= 150 else 'MISSED'})")


if __name__ == "__main__":
    main()
