"""The setup steps the commands share (the pipeline's, design §3), plus only what a person
sees: catalog warnings, probe lines, where ``--keep-work`` left the workspaces."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lean_eval.cli.deferred import catalog, checkout, options, preflight_steps, setup_steps
from lean_eval.cli.group import Console, warn
from lean_eval.errors import LeanEvalError

if TYPE_CHECKING:
    from lean_eval.records.probe_result import ProbeResult
    from lean_eval.records.verdict import Preflight


def default_benchmark() -> Path:
    return checkout.default_benchmark()


def benchmark_root(given: Path | None) -> Path:
    """``--benchmark``, else the current git checkout (``benchmark.checkout.benchmark_root``)."""
    return checkout.benchmark_root(given)


def load_selected(benchmark: Path | None, revision: str, only: frozenset[str] | None,
                  set_name: str | None, statuses: Sequence[str], tags: Sequence[str],
                  quiet: bool = False) -> catalog.Catalog:
    """``load``, narrowed to --problem (``only``), --set, --status and --tag together."""
    from lean_eval.benchmark.sets import Selection

    chosen = Selection(set_name=set_name, statuses=tuple(statuses), tags=tuple(tags))
    return warned(checkout.load_selected(benchmark, revision, only, chosen), quiet)


def tools_for(cat: catalog.Catalog, toolchain: Path | None, bwrap_path: str | None,
              allow_bwrap: str | None, env: dict[str, str], writable: list[Path]) -> options.Tools:
    return setup_steps.tools_for(cat, toolchain, bwrap_path, allow_bwrap, env, writable)


def resolve_tools(name: str, toolchain: Path | None, bwrap_path: str | None,
                  allow_bwrap: str | None, env: dict[str, str],
                  writable: list[Path]) -> options.Tools:
    """The toolchain and bwrap; when neither can be used, one error names both (a missing
    release's names the stand-in when the current checkout ships it)."""
    try:
        here: Path | None = default_benchmark()
    except (OSError, LeanEvalError):  # no checkout here: no stand-in to name
        here = None
    return setup_steps.resolve_tools(name, toolchain, bwrap_path, allow_bwrap, env, writable,
                                     benchmark=here)


def check_work_dir(work_dir: Path | None) -> None:
    """``--work-dir`` usable (``scoring.setup.check_work_dir``), checked before anything runs."""
    if work_dir is not None:
        setup_steps.check_work_dir(work_dir)


def load(benchmark: Path | None, revision: str = "HEAD",
         only: frozenset[str] | None = None, quiet: bool = False) -> catalog.Catalog:
    return warned(checkout.load(benchmark, revision, only), quiet)


def warned(cat: catalog.Catalog, quiet: bool) -> catalog.Catalog:
    for warning in cat.warnings:
        warn(warning, quiet)
    return cat


def setup(benchmark: Path | None, toolchain: Path | None, bwrap_path: str | None,
          allow_bwrap: str | None, env: dict[str, str], work_dir: Path | None,
          quiet: bool = False) -> tuple[catalog.Catalog, options.Tools]:
    """Catalog and tools for the commands that score generated submissions under work_dir."""
    check_work_dir(work_dir)
    cat = load(benchmark, quiet=quiet)
    tools = tools_for(cat, toolchain, bwrap_path, allow_bwrap, env,
                      [Path(tempfile.gettempdir()), *([work_dir] if work_dir else [])])
    if work_dir is not None:
        work_dir.mkdir(parents=True, exist_ok=True)
    return cat, tools


def run_probes(tools: options.Tools, env: dict[str, str], work_dir: Path | None,
               names: tuple[str, ...] = ()) -> tuple[ProbeResult, ...]:
    return preflight_steps.run_probes(tools, env, work_dir, names)


def print_probes(entries: Sequence[ProbeResult], console: Console,
                 verbose: int) -> None:
    """One line per probe; every check under -v; a failing probe's failing checks in full."""
    colour = {"pass": "green", "fail": "red", "error": "bold yellow"}
    width = max((len(e.name) for e in entries), default=0)
    for entry in entries:
        console.print(f"probe {entry.name:<{width}}  [{colour[entry.status]}]{entry.status}[/]"
                      f"  {entry.seconds:.1f} s", highlight=False)
        shown = entry.checks if verbose else [c for c in entry.checks if not c.ok]
        if entry.status == "error" or (verbose and not entry.checks):
            console.print(f"    {entry.message}", markup=False, highlight=False, soft_wrap=True)
        for check in shown:
            console.print(f"    {'ok    ' if check.ok else 'FAILED'} {check.name}: "
                          f"{check.evidence}", markup=False, highlight=False, soft_wrap=True)


def show_probes(entries: Sequence[ProbeResult], quiet: bool, verbose: int) -> None:
    """The preflight's probe lines on stderr; a failure is printed even under -q: it is the
    error that stops the run."""
    print_probes([e for e in entries if e.status != "pass"] if quiet else entries,
                 Console(stderr=True), verbose)


def preflight(tools: options.Tools, env: dict[str, str], work_dir: Path | None,
              skip: bool, quiet: bool, verbose: int = 0) -> Preflight:
    """``probes.preflight.preflight`` with its probe lines printed (``skip``: the warning)."""
    if skip:
        warn(preflight_steps.SKIPPED_PROBES, quiet)
        return options.not_probed(tools)
    return preflight_steps.preflight(tools, env, work_dir,
                                     lambda entries: show_probes(entries, quiet, verbose))


def scoring_dirs(work_dir: Path | None) -> set[Path]:
    """The run directories under the scoring parent (``lean_eval.supervise.lock.RUN_PREFIX``)."""
    parent = work_dir or Path(tempfile.gettempdir())
    return set(parent.glob("lean-eval-run-*")) if parent.is_dir() else set()


def say_kept(run_dirs: set[Path], quiet: bool) -> None:
    for run_dir in sorted(run_dirs):
        Console(stderr=True, quiet=quiet).print(
            f"kept: scoring workspaces in {run_dir} (one <submission>/<problem>/workspace "
            "directory per pair; remove it when done)", markup=False, highlight=False,
            soft_wrap=True)
