"""The ``lean-eval`` command line: the only package that parses options, prints and exits.

This module holds the group, the options and helpers every command shares; the commands live in
``scoring`` (run-eval, probe, the self-checks, test), ``authoring`` (start-problem,
validate-submission, validate-catalog, prepare), ``catalog_commands`` (import-catalog,
list-problems), ``results`` (merge, report), ``publish`` (export-results, verify) and
``replay``, which register themselves on :func:`main` when imported at the end of this
module.
"""

from __future__ import annotations

import importlib
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from lean_eval import __version__
from lean_eval.cli.group import LeanEvalGroup, no_wrap_console

# `lean-eval --help` must start fast (benchmarks/cli_startup.py): pydantic, rich and the scoring
# pipeline are imported when a command first uses them, never at import time. Type checkers see
# the real modules; at run time each name is a stand-in that imports its module on first use.
if TYPE_CHECKING:  # "x as x": re-exported to the command modules of this package
    from rich.console import Console as Console

    from lean_eval import api as api
    from lean_eval import attest as attest
    from lean_eval import batch as batch
    from lean_eval import bubblewrap as bubblewrap
    from lean_eval import catalog as catalog
    from lean_eval import documents as documents
    from lean_eval import driver as driver
    from lean_eval import inputs as inputs
    from lean_eval import intake as intake
    from lean_eval import lock as lock
    from lean_eval import prepare as prepare
    from lean_eval import probe as probe
    from lean_eval import process as process
    from lean_eval import progress as progress
    from lean_eval import report as report
    from lean_eval import selfcheck as selfcheck
    from lean_eval import session as session
    from lean_eval import starter as starter
    from lean_eval import validation as validation
    from lean_eval import verdict as verdict
    from lean_eval.probe_result import ProbeResult
    from lean_eval.shard import parse_shard as parse_shard
    from lean_eval.toolchain import check_release as check_release
    from lean_eval.toolchain import release_incompatibility as release_incompatibility
    from lean_eval.toolchain import resolve_toolchain as resolve_toolchain
    from lean_eval.verdict import Preflight as Preflight
else:

    class _Deferred:
        """A module imported (normally, into sys.modules) on first attribute access."""

        def __init__(self, name: str) -> None:
            self._name = name

        def __getattr__(self, attr: str) -> Any:
            return getattr(importlib.import_module(self._name), attr)

    def _deferred(module: str, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            return getattr(importlib.import_module(module), name)(*args, **kwargs)

        call.__name__ = name
        return call

    api = _Deferred("lean_eval.api")
    attest = _Deferred("lean_eval.attest")
    batch = _Deferred("lean_eval.batch")
    bubblewrap = _Deferred("lean_eval.bubblewrap")
    catalog = _Deferred("lean_eval.catalog")
    documents = _Deferred("lean_eval.documents")
    driver = _Deferred("lean_eval.driver")
    inputs = _Deferred("lean_eval.inputs")
    intake = _Deferred("lean_eval.intake")
    lock = _Deferred("lean_eval.lock")
    prepare = _Deferred("lean_eval.prepare")
    probe = _Deferred("lean_eval.probe")
    process = _Deferred("lean_eval.process")
    progress = _Deferred("lean_eval.progress")
    report = _Deferred("lean_eval.report")
    selfcheck = _Deferred("lean_eval.selfcheck")
    session = _Deferred("lean_eval.session")
    starter = _Deferred("lean_eval.starter")
    validation = _Deferred("lean_eval.validation")
    verdict = _Deferred("lean_eval.verdict")
    Console = no_wrap_console
    parse_shard = _deferred("lean_eval.shard", "parse_shard")
    resolve_toolchain = _deferred("lean_eval.toolchain", "resolve_toolchain")
    check_release = _deferred("lean_eval.toolchain", "check_release")
    release_incompatibility = _deferred("lean_eval.toolchain", "release_incompatibility")

# The probes `probe --only` accepts, spelled here so --help need not import lean_eval.probe
# (tests/test_cli_usability.py checks it equals probe.PROBE_NAMES).
PROBE_NAMES = ("sandbox_engaged", "env_dump", "tool_path", "artifact_tamper", "comparator")

F = TypeVar("F", bound=Callable[..., Any])
EXIT_FAULT = 1
EXIT_SETUP = 2
EXIT_INTERRUPTED = 130


def _default_benchmark() -> Path:
    return session.default_benchmark()


def _benchmark(given: Path | None) -> Path:
    """``--benchmark``, else the git checkout holding the current directory; a directory that
    is no benchmark checkout is refused with the fix (:func:`lean_eval.session.benchmark_root`)."""
    return session.benchmark_root(given)


_BYTE_UNITS = {"": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20,
               "g": 1 << 30, "gib": 1 << 30}


if TYPE_CHECKING:  # click's ParamType is generic for type checkers only before click 8.3
    _IntParamType = click.ParamType[int]
else:
    _IntParamType = click.ParamType


class ByteSize(_IntParamType):
    """A byte count: ``1048576``, ``512K``, ``16M``, ``8G`` or ``KiB``/``MiB``/``GiB`` (powers of
    1024, case-insensitive), at least ``minimum``."""

    name = "bytes"

    def __init__(self, minimum: int = 1) -> None:
        self.minimum = minimum

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> int:
        if isinstance(value, int):
            number = value
        else:
            text = str(value).strip().replace("_", "")
            digits = text.rstrip("KkMmGgIiBb")
            unit = text[len(digits):].lower()
            if not digits.isdigit() or unit not in _BYTE_UNITS:
                self.fail(f"{value!r} is not a byte size (e.g. 1048576, 512K, 16M, 8GiB)",
                          param, ctx)
            number = int(digits) * _BYTE_UNITS[unit]
        if number < self.minimum:
            self.fail(f"{value} is below the minimum of {self.minimum} bytes", param, ctx)
        return number


CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}


def _options(func: F, benchmark: bool) -> F:
    decorators = [
        *([click.option("--benchmark", type=click.Path(path_type=Path, file_okay=False),
                        help="Benchmark checkout (default: the current git checkout).")]
          if benchmark else []),
        click.option("--toolchain", type=click.Path(path_type=Path, file_okay=False),
                     envvar="LEAN_EVAL_TOOLCHAIN", show_envvar=True,
                     help="Lean toolchain directory with bin/lake (default: the elan install "
                          "of lean-toolchain)."),
        click.option("--bwrap", "bwrap_path", type=str, envvar="LEAN_EVAL_BWRAP",
                     show_envvar=True,
                     help="bubblewrap executable (default: the one `lean-eval prepare` "
                          "installed, else bwrap on the filtered PATH)."),
        click.option("--allow-bwrap-version", "allow_bwrap", metavar="MIN",
                     envvar="LEAN_EVAL_ALLOW_BWRAP_VERSION", show_envvar=True,
                     help="Accept bubblewrap older than 0.12.0, down to MIN. Recorded in every "
                          "verdict."),
        click.option("--json", "as_json", is_flag=True,
                     help="Machine output (JSON with schema_version) on stdout."),
        click.option("-v", "--verbose", count=True,
                     help="More detail: every probe check, every finding, file locations."),
        click.option("-q", "--quiet", is_flag=True,
                     help="Print nothing but errors (and the --json document, if asked for)."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def common_options(func: F) -> F:
    """Options every benchmark command honours (design §3)."""
    return _options(func, benchmark=True)


def tool_options(func: F) -> F:
    """The common options without --benchmark, for commands that read no benchmark."""
    return _options(func, benchmark=False)


def intake_limit_options(func: F) -> F:
    """The intake limits (design §5.2), declared once for run-eval and validate-submission so
    both read a submission under the same options, defaults and help text."""
    decorators = [
        click.option("--max-file-bytes", type=ByteSize(), default="1MiB", show_default=True,
                     help="Largest submitted file (bytes; K/M/G suffixes); a file over it is "
                          "refused from its size and rejects its own problem only."),
        click.option("--max-total-bytes", type=ByteSize(), default="16MiB", show_default=True,
                     help="Bytes of all the files of one submission that are read (K/M/G "
                          "suffixes)."),
        click.option("--max-files", type=click.IntRange(min=1), default=10_000,
                     show_default=True,
                     help="Entries walked in one submission (archive members included)."),
        click.option("--max-depth", type=click.IntRange(min=1, max=256), default=32,
                     show_default=True,
                     help="Path components of any entry; deeper ones are never read."),
        click.option("--max-archive-bytes", type=ByteSize(), default="64MiB",
                     show_default=True,
                     help="Largest submission archive file (K/M/G suffixes)."),
        click.option("--intake-timeout", type=click.FloatRange(min=0.1), default=60.0,
                     show_default=True, help="Seconds to read one submission before rejecting it."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def intake_limits(max_file_bytes: int, max_total_bytes: int, max_files: int, max_depth: int,
                  max_archive_bytes: int, intake_timeout: float) -> intake.IntakeLimits:
    """The :class:`IntakeLimits` the options of :func:`intake_limit_options` spell."""
    return intake.IntakeLimits(max_file_bytes=max_file_bytes, max_total_bytes=max_total_bytes,
                               max_files=max_files, max_depth=max_depth,
                               max_archive_bytes=max_archive_bytes,
                               intake_seconds=intake_timeout)


TOOL_OPTIONS = frozenset({"toolchain", "bwrap_path", "allow_bwrap"})


def without_tool_options(command: click.Command) -> click.Command:
    """Drop --toolchain, --bwrap and --allow-bwrap-version from a command that runs neither
    Lean nor bubblewrap, so its --help lists only options it honours. Put it above
    ``@main.command`` (it edits the command's public ``params``)."""
    command.params = [p for p in command.params if p.name not in TOOL_OPTIONS]
    return command


def _fail(message: str, code: int = EXIT_SETUP) -> None:
    click.echo(f"lean-eval: error: {message}", err=True)
    sys.exit(code)


@click.group(cls=LeanEvalGroup, context_settings=CONTEXT_SETTINGS)
@click.option("--config", "config_file", metavar="FILE",
              type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="Settings file: TOML, one table per command ([run-eval]), keyed by long "
                   "option names (default: ./lean-eval.toml, else [tool.lean-eval] in the "
                   "benchmark's pyproject.toml). Flags and LEAN_EVAL_<OPTION> override it.")
@click.version_option(__version__, prog_name="lean-eval")
@click.pass_context
def main(ctx: click.Context, config_file: Path | None) -> None:
    """Score untrusted Lean 4 proofs against a trusted benchmark, inside bubblewrap.

    Every option can also be set by the environment variable LEAN_EVAL_<OPTION> or in a
    config file; `lean-eval config` shows each setting and where it comes from.
    """
    from lean_eval.cli import config

    config.apply(ctx, config_file)


def selection_options(func: F) -> F:
    """--set, --status and --tag: which problems of the catalog a command works on."""
    decorators = [
        click.option("--set", "set_name", metavar="NAME",
                     help="Only the members of sets/NAME.toml (a frozen set must match the "
                          "catalog's statement revisions)."),
        click.option("--status", "statuses", multiple=True, metavar="STATUS",
                     help="Only problems with this status (repeatable: any of them)."),
        click.option("--tag", "tags", multiple=True, metavar="TAG",
                     help="Only problems with this tag (repeatable: any of them)."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def _load_selected(benchmark: Path | None, revision: str, only: frozenset[str] | None,
                   set_name: str | None, statuses: Sequence[str], tags: Sequence[str],
                   quiet: bool = False) -> catalog.Catalog:
    """``_load``, narrowed to --problem (``only``), --set, --status and --tag together."""
    from lean_eval.sets import Selection

    chosen = Selection(set_name=set_name, statuses=tuple(statuses), tags=tuple(tags))
    return _warned(session.load_selected(benchmark, revision, only, chosen), quiet)


def _tools(cat: catalog.Catalog, toolchain: Path | None, bwrap_path: str | None,
           allow_bwrap: str | None, env: dict[str, str], writable: list[Path]) -> batch.Tools:
    return session.tools(cat, toolchain, bwrap_path, allow_bwrap, env, writable)


def _resolve_tools(name: str, toolchain: Path | None, bwrap_path: str | None,
                   allow_bwrap: str | None, env: dict[str, str],
                   writable: list[Path]) -> batch.Tools:
    """The toolchain and bwrap; when neither can be used, one error names both."""
    return session.resolve_tools(name, toolchain, bwrap_path, allow_bwrap, env, writable)


def _load(benchmark: Path | None, revision: str = "HEAD",
          only: frozenset[str] | None = None, quiet: bool = False) -> catalog.Catalog:
    return _warned(session.load(benchmark, revision, only), quiet)


def _warn(message: str, quiet: bool = False) -> None:
    """One ``warning:`` line on stderr (none under -q)."""
    Console(stderr=True, quiet=quiet).print(f"[yellow]warning:[/] {message}")


def _warned(cat: catalog.Catalog, quiet: bool) -> catalog.Catalog:
    """``cat``, once its warnings are on stderr."""
    for warning in cat.warnings:
        _warn(warning, quiet)
    return cat


def _setup(benchmark: Path | None, toolchain: Path | None, bwrap_path: str | None,
           allow_bwrap: str | None, env: dict[str, str], work_dir: Path | None,
           quiet: bool = False) -> tuple[catalog.Catalog, batch.Tools]:
    """Catalog and tools for the commands that score generated submissions under work_dir."""
    cat = _load(benchmark, quiet=quiet)
    tools = _tools(cat, toolchain, bwrap_path, allow_bwrap, env,
                   [Path(tempfile.gettempdir()), *([work_dir] if work_dir else [])])
    if work_dir is not None:
        work_dir.mkdir(parents=True, exist_ok=True)
    return cat, tools


def _run_probes(tools: batch.Tools, env: dict[str, str], work_dir: Path | None,
                names: tuple[str, ...] = ()) -> tuple[ProbeResult, ...]:
    """Each probe in turn, timed, in a scratch directory removed afterwards."""
    return session.run_probes(tools, env, work_dir, names)


def _print_probes(entries: Sequence[ProbeResult], console: Console,
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


def _show_probes(entries: Sequence[ProbeResult], quiet: bool, verbose: int) -> None:
    """The preflight's probe lines on stderr; a failure is printed even under -q: it is the
    error that stops the run."""
    _print_probes([e for e in entries if e.status != "pass"] if quiet else entries,
                  Console(stderr=True), verbose)


def _preflight(tools: batch.Tools, env: dict[str, str], work_dir: Path | None,
               skip: bool, quiet: bool, verbose: int = 0) -> Preflight:
    """``session.preflight`` with its probe lines printed (``skip``: the warning instead); a
    failed probe raises ``session.ProbesFailedError``, a setup failure."""
    if skip:
        _warn(session.SKIPPED_PROBES, quiet)
        return batch.not_probed(tools)
    return session.preflight(tools, env, work_dir,
                             lambda entries: _show_probes(entries, quiet, verbose))


def _scoring_dirs(work_dir: Path | None) -> set[Path]:
    """The run directories under the scoring parent (``lean_eval.lock.RUN_PREFIX``)."""
    parent = work_dir or Path(tempfile.gettempdir())
    return set(parent.glob("lean-eval-run-*")) if parent.is_dir() else set()


def _say_kept(run_dirs: set[Path], quiet: bool) -> None:
    """Where --keep-work left the scoring workspaces of this run."""
    for run_dir in sorted(run_dirs):
        Console(stderr=True, quiet=quiet).print(
            f"kept: scoring workspaces in {run_dir} (one <submission>/<problem>/workspace "
            "directory per pair; remove it when done)", markup=False, highlight=False,
            soft_wrap=True)


# The commands register themselves on `main`; imported last because they use the above.
# (`catalog_commands`, not `catalog`: a submodule named `catalog` would rebind this package's
# `catalog`, the deferred lean_eval.catalog the helpers above use.)
from lean_eval.cli import (  # noqa: E402
    authoring,
    catalog_commands,
    config,
    publish,
    replay,
    results,
    scoring,
)

config.add_envvars(main)  # after every command is registered: it walks them all

__all__ = ["authoring", "catalog_commands", "config", "main", "publish", "replay", "results",
           "scoring"]
