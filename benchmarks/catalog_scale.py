"""Catalog checks scale linearly (issue 27 item 7): a synthetic catalog of 3,090 problems (10x
the public catalog's 309) is imported, validated and loaded in at most 12x the time the
309-problem one takes.

    python3 benchmarks/catalog_scale.py [--scratch DIR] [--small 309] [--factor 10]

Each catalog is the fixture source catalog's three problems (``tests/fixtures/source_catalog``)
repeated under fresh ids (each workspace's files with its id replaced), in the source layout.
Per size, three phases are timed once each with ``time.perf_counter``: ``plan_import`` +
``write_import`` of the source, ``validate_catalog`` of the import, ``load_catalog`` of it (what
``run-eval`` checks before scoring). Prints each phase's seconds per size and the ratios.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from lean_eval.benchmark import import_dest, importer
from lean_eval.benchmark.catalog import load_catalog
from lean_eval.benchmark.validation import validate_catalog

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "tests" / "fixtures" / "source_catalog"
TEMPLATES = ("counter_where", "scaled_norm", "widget_facts")
TARGET = 12.0


def synthetic_source(dest: Path, count: int) -> Path:
    """A source-layout catalog of ``count`` problems at ``dest``."""
    (dest / "manifests" / "problems").mkdir(parents=True)
    (dest / "generated").mkdir()
    for name in ("lean-toolchain", "lakefile.toml", "lake-manifest.json"):
        shutil.copy(SOURCE / name, dest / name)
    for n in range(count):
        template = TEMPLATES[n % len(TEMPLATES)]
        pid = f"{template}_{n:05d}"
        text = (SOURCE / "manifests" / "problems" / f"{template}.toml").read_text()
        (dest / "manifests" / "problems" / f"{pid}.toml").write_text(
            text.replace(f'id = "{template}"', f'id = "{pid}"'))
        for path in sorted((SOURCE / "generated" / template).rglob("*")):
            target = dest / "generated" / pid / path.relative_to(SOURCE / "generated" / template)
            if path.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            data = path.read_bytes()
            if path.name == "lakefile.toml":
                data = data.replace(f'name = "{template}"'.encode(), f'name = "{pid}"'.encode())
            target.write_bytes(data)
    return dest


def measure(scratch: Path, count: int) -> dict[str, float]:
    src = synthetic_source(scratch / f"src-{count}", count)
    dest = scratch / f"bench-{count}"
    times: dict[str, float] = {}
    start = time.perf_counter()
    import_dest.write_import(importer.plan_import(src, commit="1" * 40), dest)
    times["import"] = time.perf_counter() - start
    start = time.perf_counter()
    report = validate_catalog(dest)
    times["validate"] = time.perf_counter() - start
    if not report.ok:
        raise SystemExit(f"synthetic catalog of {count} is not clean: {report.findings[:3]}")
    start = time.perf_counter()
    loaded = load_catalog(dest, revision=None)
    times["load"] = time.perf_counter() - start
    assert len(loaded.problems) == count
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scratch", type=Path, default=None)
    parser.add_argument("--small", type=int, default=309)
    parser.add_argument("--factor", type=int, default=10)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="catalog-scale-", dir=args.scratch))
    try:
        small = measure(scratch, args.small)
        large = measure(scratch, args.small * args.factor)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    worst = 0.0
    for phase in small:
        ratio = large[phase] / small[phase]
        worst = max(worst, ratio)
        print(f"{phase:9s} {args.small:5d}: {small[phase]:7.2f} s   "
              f"{args.small * args.factor:5d}: {large[phase]:7.2f} s   ratio {ratio:5.2f}x")
    total = sum(large.values()) / sum(small.values())
    print(f"all phases ratio {total:.2f}x (target <= {TARGET:.0f}x); worst phase {worst:.2f}x")
    return 0 if total <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
