"""Fork-shaped batches at the real benchmark's size (issue 14 item 7).

A submitter's fork of the benchmark names every problem, and most of its pairs are unchanged
starters. This generates a 309-problem catalog in this repository's layout (trivial core-Lean
statements ``<i> + 2 = <i + 2>``, each workspace made from the ``two_plus_two`` template, and a
``workspaces/index.json`` computed by ``scripts/update_index.py``'s own ``compute_index``), then
scores with the stand-in toolchain through real bubblewrap:

- ``--forks`` forks whose problems are all unchanged starters (no sandbox starts), and one run
  of a single unchanged pair: their difference over the pairs is the per-unchanged-pair harness
  cost (target <= 0.5 ms);
- ``--forks`` forks with ``--changed`` correct proofs each: the time until ``summary.json`` is
  written minus the scored pairs' own time (their verdicts' ``wall_seconds`` over ``--jobs``;
  target <= 15 s), the harness's peak RSS (target <= 150 MB) and ``summary.json``'s size.

``--profile`` also runs the all-unchanged batch in this process under cProfile and prints where
the time goes. Figures are from one run; the machine's load matters (say so when recording).

    python benchmarks/forks.py [--problems 309] [--forks 50] [--changed 2] [--jobs 2]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import importlib.util
import json
import pstats
import shutil
import sys
from pathlib import Path
from typing import Any

from batch_setup import REPO, bench_copy, correct, run_eval, starter, summary, workdir

TEMPLATE = "two_plus_two"
_STATEMENT = "2 + 2 = 4"


def _update_index() -> Any:
    """scripts/update_index.py as a module (the index is computed the way maintainers do)."""
    spec = importlib.util.spec_from_file_location("update_index",
                                                  REPO / "scripts" / "update_index.py")
    if spec is None or spec.loader is None:
        raise SystemExit("scripts/update_index.py cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def problem_id(i: int) -> str:
    """The generated problem ids, sorted as their numbers are."""
    return f"fork_{i:03d}"


def _rewrite(text: str, i: int) -> str:
    return text.replace(TEMPLATE, problem_id(i)).replace(_STATEMENT, f"{i} + 2 = {i + 2}")


def generate_catalog(where: Path, count: int) -> Path:
    """A benchmark of ``count`` generated problems (and no others), with a fresh index."""
    root = bench_copy(where)
    template_ws = root / "workspaces" / TEMPLATE
    template_manifest = (root / "problems" / f"{TEMPLATE}.toml").read_text(encoding="utf-8")
    kept = {p.name for p in (root / "workspaces").iterdir() if p.is_dir()} - {TEMPLATE}
    for name in kept:
        shutil.rmtree(root / "workspaces" / name)
        (root / "problems" / f"{name}.toml").unlink()
    for i in range(count):
        ws = root / "workspaces" / problem_id(i)
        for source in sorted(template_ws.rglob("*")):
            if source.is_file():
                target = ws / source.relative_to(template_ws)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(_rewrite(source.read_text(encoding="utf-8"), i),
                                  encoding="utf-8")
        (root / "problems" / f"{problem_id(i)}.toml").write_text(
            _rewrite(template_manifest, i), encoding="utf-8")
    shutil.rmtree(template_ws)
    (root / "problems" / f"{TEMPLATE}.toml").unlink()
    update = _update_index()
    index = update.compute_index(root)
    (root / update.INDEX_RELPATH).write_text(update.render(index), encoding="utf-8")
    return root


def forks(parent: Path, count: int, problems: int, changed: int) -> list[Path]:
    """``count`` forks naming every problem: starters, except ``changed`` correct proofs each
    (spread over the catalog so that different forks change different problems)."""
    starter_text = {problem_id(i): _rewrite(starter(), i) for i in range(problems)}
    helpers = (REPO / "workspaces" / TEMPLATE / "Submission" / "Helpers.lean").read_bytes()
    proof = correct()
    made = []
    for n in range(count):
        root = parent / f"fork{n:03d}"
        solved = {(n * 7 + k * 131) % problems for k in range(changed)}
        for i in range(problems):
            pid = problem_id(i)
            (root / pid / "Submission").mkdir(parents=True)
            text = _rewrite(proof, i) if i in solved else starter_text[pid]
            (root / pid / "Submission.lean").write_text(text, encoding="utf-8")
            (root / pid / "Submission" / "Helpers.lean").write_bytes(helpers)
        made.append(root)
    return made


def _run(bench: Path, subs: list[Path], out: Path, where: Path, jobs: int) -> Any:
    result = run_eval(bench, subs, out, "--work-dir", str(where / "work"), "--jobs", str(jobs))
    if result.returncode != 0:
        raise SystemExit(f"run failed ({result.returncode}): {result.stderr[-3000:]}")
    return result


def _scored_seconds(out: Path) -> float:
    total = 0.0
    for pair in summary(out)["pairs"]:
        data = json.loads((out / pair["path"]).read_text(encoding="utf-8"))
        total += data["timings"]["wall_seconds"]
    return total


def _profile(bench: Path, subs: list[Path], out: Path, where: Path) -> None:
    sys.argv = ["lean-eval", "run-eval", *map(str, subs), "--out", str(out), "--benchmark",
                str(bench), "--toolchain", str(REPO / "tests/standin/toolchain"),
                "--skip-probes", "-q", "--allow-bwrap-version", "0.8.0",
                "--work-dir", str(where / "work")]
    from lean_eval.cli import main
    profiler = cProfile.Profile()
    with contextlib.suppress(SystemExit):  # the CLI exits with the run's code
        profiler.runcall(main)
    stats = pstats.Stats(profiler)
    stats.sort_stats("cumulative").print_stats(25)
    stats.sort_stats("tottime").print_stats(15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, default=Path("/srv/lean-eval-bench"))
    parser.add_argument("--problems", type=int, default=309)
    parser.add_argument("--forks", type=int, default=50)
    parser.add_argument("--changed", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    where = workdir(args.base, "forks")
    try:
        bench = generate_catalog(where, args.problems)
        one = forks(where / "one", 1, 1, 0)  # a single unchanged pair: a run's fixed cost
        base = _run(bench, one, where / "out-one", where, args.jobs)
        plain = forks(where / "plain", args.forks, args.problems, 0)
        if args.profile:
            _profile(bench, plain, where / "out-profile", where)
        unchanged = _run(bench, plain, where / "out-plain", where, args.jobs)
        pairs = args.forks * args.problems
        per_pair = (unchanged.wall - base.wall) / max(pairs - 1, 1)
        subs = forks(where / "subs", args.forks, args.problems, args.changed)
        out = where / "out"
        mixed = _run(bench, subs, out, where, args.jobs)
        data = summary(out)
        scored = _scored_seconds(out)
        size = (out / "summary.json").stat().st_size
        plain_size = (where / "out-plain" / "summary.json").stat().st_size
        counts = {k: v for k, v in data["counts"].items() if v}
        overhead = mixed.wall - scored / args.jobs
        print(f"catalog: {args.problems} problems; {args.forks} forks x {args.problems} = {pairs} "
              f"pairs; jobs {args.jobs}")
        print(f"one unchanged pair: {base.wall:.2f} s (the run's fixed cost)")
        print(f"all unchanged: {unchanged.wall:.2f} s, peak RSS {unchanged.peak_rss_mb:.1f} MB, "
              f"summary.json {plain_size / 1000:.1f} kB")
        print(f"per unchanged pair: {per_pair * 1000:.3f} ms (target <= 0.5 ms: "
              f"{'met' if per_pair <= 0.0005 else 'MISSED'})")
        print(f"with {args.changed} changed each: {mixed.wall:.2f} s until summary.json, {counts}")
        print(f"scored pairs' own time: {scored:.2f} s over {args.jobs} jobs = "
              f"{scored / args.jobs:.2f} s")
        print(f"summary written minus scored pairs' own time: {overhead:.2f} s (target <= 15 s: "
              f"{'met' if overhead <= 15 else 'MISSED'})")
        print(f"peak RSS {mixed.peak_rss_mb:.1f} MB (target <= 150 MB: "
              f"{'met' if (mixed.peak_rss_mb or 0) <= 150 else 'MISSED'}); "
              f"summary.json {size / 1000:.1f} kB")
    finally:  # figures first: removing 30,000 files takes a while on a busy disk
        shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
