"""Materialising a scoring workspace costs what the submission costs, not what shared packages do.

design §5.3: shared packages are exposed read-only, never copied. This measures
`workspace.materialise` for one pair with no shared packages (the baseline) and with a shared
package tree of N files, and reports the time ratio in one run. A ratio near 1 means the cost
does not grow with the packages; a copy would grow with N.

    python benchmarks/workspace_cost.py [--files 20000] [--repeat 30]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from lean_eval.benchmark.catalog import sha256
from lean_eval.intake.reader import SubmissionFile
from lean_eval.scoring import workspace

TRUSTED = {name: f"-- {name}\n".encode() * 20 for name in (
    "Challenge.lean", "Solution.lean", "config.json", "lakefile.toml", "lake-manifest.json",
    "lean-toolchain", "README.md")}
OVERLAY = (SubmissionFile("Submission.lean", b"theorem t : True := trivial\n",
                          sha256(b"theorem t : True := trivial\n")),)


def _shared(base: Path, files: int) -> Path:
    root = base / "packages"
    for i in range(files):
        target = root / f"pkg{i % 20}" / f"dir{i % 200}" / f"M{i}.olean"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"\0" * 256)
    return root


def _time(base: Path, shared: Path | None, repeat: int) -> float:
    samples = []
    for i in range(repeat):
        dirs = workspace.pair_dirs(base / "score", "s", f"p{i}")
        workspace.prepare(dirs)
        started = time.perf_counter()
        workspace.materialise(dirs, TRUSTED, {}, OVERLAY, shared)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        baseline = _time(base / "a", None, args.repeat)
        shared = _shared(base, args.files)
        with_packages = _time(base / "b", shared, args.repeat)
    print(f"materialise, median of {args.repeat}: no shared packages {baseline * 1e3:.2f} ms; "
          f"{args.files} shared package files {with_packages * 1e3:.2f} ms; "
          f"ratio {with_packages / baseline:.2f}")


if __name__ == "__main__":
    main()
