"""The ``lean-eval`` command line: the only package that parses options, prints and exits.

This module holds the group, the options and helpers every command shares; the commands live in
``scoring`` (run-eval, probe, the self-checks, test), ``authoring`` (start-problem,
validate-submission, validate-catalog, prepare), ``catalog_commands`` (import-catalog,
list-problems), ``results`` (merge, report) and ``publish`` (export-results, verify), which
register themselves on :func:`main` when imported at the end of this module.
"""

from __future__ import annotations

import importlib
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from lean_eval import __version__
from lean_eval.errors import SetupError

# `lean-eval --help` must start fast (benchmarks/cli_startup.py): pydantic, rich and the scoring
# pipeline are imported when a command first uses them, never at import time. Type checkers see
# the real modules; at run time each name is a stand-in that imports its module on first use.
if TYPE_CHECKING:  # "x as x": re-exported to the command modules of this package
    from rich.console import Console as Console

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
    from lean_eval import starter as starter
    from lean_eval import validation as validation
    from lean_eval import verdict as verdict
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
    starter = _Deferred("lean_eval.starter")
    validation = _Deferred("lean_eval.validation")
    verdict = _Deferred("lean_eval.verdict")
    Console = _deferred("rich.console", "Console")
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
    found = process.run_capture(("git", "rev-parse", "--show-toplevel"),
                                env={"PATH": "/usr/bin:/bin"}, cwd=Path.cwd(), timeout=30)
    if found.returncode == 0 and found.stdout.strip():
        return Path(found.stdout.decode().strip())
    return Path.cwd()


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


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, prog_name="lean-eval")
def main() -> None:
    """Score untrusted Lean 4 proofs against a trusted benchmark, inside bubblewrap."""


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
    from lean_eval.selection import select_catalog
    from lean_eval.sets import Selection

    chosen = Selection(set_name=set_name, statuses=tuple(statuses), tags=tuple(tags))
    if chosen.is_everything:
        return _load(benchmark, revision, only, quiet)
    return select_catalog(_load(benchmark, revision, None, quiet), chosen, only)


def _tools(cat: catalog.Catalog, toolchain: Path | None, bwrap_path: str | None,
           allow_bwrap: str | None, env: dict[str, str], writable: list[Path]) -> batch.Tools:
    return _resolve_tools(cat.toolchain_name, toolchain, bwrap_path, allow_bwrap, env, writable,
                          release=True)


def one_error(errors: Sequence[SetupError]) -> SetupError:
    """Several setup errors as one (exit 2, one message): each named, in the order found."""
    if len(errors) == 1:
        return errors[0]
    texts = [str(e) for e in errors]
    return SetupError(" Also, ".join(t if t.endswith((".", ")")) or i == len(texts) - 1
                                     else t + "." for i, t in enumerate(texts)))


def _resolve_tools(name: str, toolchain: Path | None, bwrap_path: str | None,
                   allow_bwrap: str | None, env: dict[str, str],
                   writable: list[Path], release: bool = False) -> batch.Tools:
    """The toolchain and bwrap; every problem with either is named in one error.

    ``release``: also refuse a pinned release that cannot run the driver.
    """
    errors: list[SetupError] = []
    lean = bwrap = None
    try:
        if release:
            check_release(toolchain, name)
        lean = resolve_toolchain(toolchain, env, name)
    except SetupError as exc:
        errors.append(exc)
    try:
        bwrap = bubblewrap.resolve_bwrap(bwrap_path, env, writable, allow_bwrap)
    except SetupError as exc:
        errors.append(exc)
    if lean is None or bwrap is None:
        raise one_error(errors)
    return batch.Tools(toolchain=lean, bwrap=bwrap)


def _load(benchmark: Path | None, revision: str = "HEAD",
          only: frozenset[str] | None = None, quiet: bool = False) -> catalog.Catalog:
    cat = catalog.load_catalog(benchmark or _default_benchmark(), revision=revision, only=only)
    for warning in cat.warnings:
        Console(stderr=True, quiet=quiet).print(f"[yellow]warning:[/] {warning}")
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
                names: tuple[str, ...] = ()) -> tuple[documents.ProbeEntry, ...]:
    """Each probe in turn, timed, in a scratch directory removed afterwards."""
    if work_dir is not None:
        work_dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="lean-eval-probes-", dir=work_dir))
    ctx = probe.ProbeContext(tools=tools, caller_env=env, scratch=scratch)
    entries = []
    try:
        for name in names or probe.PROBE_NAMES:
            started = time.monotonic()
            (result,) = probe.run_probes(ctx, [name])
            entries.append(documents.probe_entry(result, time.monotonic() - started))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return tuple(entries)


def _print_probes(entries: Sequence[documents.ProbeEntry], console: Console,
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


NOTHING_TO_SCORE = ("nothing to score: every pair was kept from an earlier run or decided at "
                    "intake without a sandbox")


def _preflight(tools: batch.Tools, env: dict[str, str], work_dir: Path | None,
               skip: bool, quiet: bool, verbose: int = 0, needed: bool = True) -> Preflight:
    """Run every probe before any pair is scored; a failed probe is a setup failure.

    ``needed`` False (no pair needs a sandbox): no probe runs, and the record says why.
    """
    if skip:
        Console(stderr=True, quiet=quiet).print(
            "[yellow]warning:[/] --skip-probes: the sandbox was not verified; verdicts of this "
            "run record it")
        return batch.not_probed(tools)
    if not needed:
        Console(stderr=True, quiet=quiet).print(f"probes not run: {NOTHING_TO_SCORE}",
                                                markup=False, highlight=False, soft_wrap=True)
        return batch.not_probed(tools).model_copy(update={"skipped": False,
                                                          "reason": NOTHING_TO_SCORE})
    entries = _run_probes(tools, env, work_dir)
    record = batch.not_probed(tools).model_copy(update={
        "skipped": False,
        "probes": tuple(verdict.ProbeOutcome(
            name=e.name, status=e.status, message=e.message, seconds=e.seconds,
            checks=tuple(verdict.ProbeCheckOutcome(name=c.name, ok=c.ok, evidence=c.evidence)
                         for c in e.checks)) for e in entries)})
    failed = [e for e in entries if e.status != "pass"]
    # A failure is printed even under -q: it is the error that stops the run.
    _print_probes(failed if quiet else entries, Console(stderr=True), verbose)
    if failed:
        raise ProbesFailedError("preflight probe(s) did not pass: "
                           + ", ".join(f"{e.name} ({e.status}: {e.message})" for e in failed)
                           + "; nothing was scored", record)
    return record


class ProbesFailedError(SetupError):
    """A preflight probe did not pass; ``preflight`` is every probe's outcome, for the summary."""

    def __init__(self, message: str, preflight: Preflight) -> None:
        super().__init__(message)
        self.preflight = preflight


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
from lean_eval.cli import authoring, catalog_commands, publish, results, scoring  # noqa: E402

__all__ = ["authoring", "catalog_commands", "main", "publish", "results", "scoring"]
