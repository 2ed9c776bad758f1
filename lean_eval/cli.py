"""The ``lean-eval`` command line: the only module that parses options, prints and exits."""

from __future__ import annotations

import importlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from lean_eval import __version__
from lean_eval.errors import LeanEvalError, SetupError, UsageError

# `lean-eval --help` must start fast (benchmarks/cli_startup.py): pydantic, rich and the scoring
# pipeline are imported when a command first uses them, never at import time. Type checkers see
# the real modules; at run time each name is a stand-in that imports its module on first use.
if TYPE_CHECKING:
    from rich.console import Console

    from lean_eval import (
        batch,
        bubblewrap,
        catalog,
        documents,
        driver,
        inputs,
        intake,
        prepare,
        probe,
        process,
        progress,
        report,
        selfcheck,
        starter,
        validation,
        verdict,
    )
    from lean_eval.shard import parse_shard
    from lean_eval.toolchain import resolve_toolchain
    from lean_eval.verdict import Preflight
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

    batch = _Deferred("lean_eval.batch")
    bubblewrap = _Deferred("lean_eval.bubblewrap")
    catalog = _Deferred("lean_eval.catalog")
    documents = _Deferred("lean_eval.documents")
    driver = _Deferred("lean_eval.driver")
    inputs = _Deferred("lean_eval.inputs")
    intake = _Deferred("lean_eval.intake")
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
                     help="bubblewrap executable (default: bwrap on the filtered PATH)."),
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


def _fail(message: str, code: int = EXIT_SETUP) -> None:
    click.echo(f"lean-eval: error: {message}", err=True)
    sys.exit(code)


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, prog_name="lean-eval")
def main() -> None:
    """Score untrusted Lean 4 proofs against a trusted benchmark, inside bubblewrap."""


def _tools(cat: catalog.Catalog, toolchain: Path | None, bwrap_path: str | None,
           allow_bwrap: str | None, env: dict[str, str], writable: list[Path]) -> batch.Tools:
    return batch.Tools(toolchain=resolve_toolchain(toolchain, env, cat.toolchain_name),
                       bwrap=bubblewrap.resolve_bwrap(bwrap_path, env, writable, allow_bwrap))


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


def _preflight(tools: batch.Tools, env: dict[str, str], work_dir: Path | None,
               skip: bool, quiet: bool, verbose: int = 0) -> Preflight:
    """Run every probe before any submission is unpacked; a failed probe is a setup failure."""
    if skip:
        Console(stderr=True, quiet=quiet).print(
            "[yellow]warning:[/] --skip-probes: the sandbox was not verified; verdicts of this "
            "run record it")
        return batch.not_probed(tools)
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
        raise SetupError("preflight probe(s) did not pass: "
                         + ", ".join(f"{e.name} ({e.status}: {e.message})" for e in failed)
                         + "; nothing was scored")
    return record


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


@main.command("run-eval")
@click.argument("submissions", nargs=-1, required=True,
                type=click.Path(path_type=Path, exists=False))
@click.option("--out", "out_dir", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Directory for <submission>/<problem>.json verdicts and summary.json.")
@click.option("--problem", "problems", multiple=True,
              help="Only these problem ids (comma-separated or repeated).")
@click.option("--timeout", type=click.FloatRange(min=1), default=1800.0, show_default=True,
              help="Deadline per pair in seconds.")
@click.option("--work-dir", type=click.Path(path_type=Path, file_okay=False),
              help="Where the private scoring directories go (default: the system temp dir).")
@click.option("--keep-work", is_flag=True, help="Keep scoring workspaces for inspection.")
@click.option("--skip-probes", is_flag=True,
              help="Do not run the preflight probes (local reproduction only; recorded in "
                   "every verdict).")
@click.option("--benchmark-rev", default="HEAD", show_default=True,
              help="Git revision of the benchmark whose trusted files are used.")
@click.option("--max-file-bytes", type=ByteSize(), default="1MiB", show_default=True,
              help="Largest submitted file (bytes; K/M/G suffixes).")
@click.option("--max-total-bytes", type=ByteSize(), default="16MiB",
              show_default=True)
@click.option("--max-files", type=click.IntRange(min=1), default=10_000, show_default=True)
@click.option("--max-depth", type=click.IntRange(min=1), default=32, show_default=True)
@click.option("--max-archive-bytes", type=ByteSize(), default="64MiB", show_default=True,
              help="Largest submission archive file (K/M/G suffixes).")
@click.option("--intake-timeout", type=click.FloatRange(min=0.1), default=60.0,
              show_default=True, help="Seconds to read one submission before rejecting it.")
@click.option("--max-written-file-bytes", type=ByteSize(minimum=1 << 20),
              default="8GiB", show_default=True,
              help="No file a build writes may grow past this (RLIMIT_FSIZE).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Pairs scored at once (default: the CPUs, fewer if JOBS x --memory-limit "
                   "does not fit in available memory).")
@click.option("--memory-limit", type=ByteSize(minimum=64 << 20), default="8G",
              show_default=True, help="Memory of one pair's process tree (K/M/G suffixes).")
@click.option("--max-processes", type=click.IntRange(min=1), default=512, show_default=True,
              help="Processes of one pair's tree at once.")
@click.option("--rescore", is_flag=True,
              help="Score every pair again, ignoring verdicts already in --out.")
@click.option("--shard", "shard_text", metavar="K/N",
              help="Score only shard K of N (1-based) of the batch's pairs.")
@click.option("--private", "private", multiple=True,
              type=click.Path(path_type=Path, exists=True, file_okay=False),
              help="Also hide this directory from every sandbox (repeatable); the parents of "
                   "the inputs and of --out are hidden by default.")
@common_options
def run_eval(submissions: tuple[Path, ...], out_dir: Path, problems: tuple[str, ...],
             timeout: float, work_dir: Path | None, keep_work: bool, skip_probes: bool,
             benchmark_rev: str, max_file_bytes: int, max_total_bytes: int, max_files: int,
             max_depth: int, max_archive_bytes: int, intake_timeout: float,
             max_written_file_bytes: int, jobs: int | None, memory_limit: int,
             max_processes: int, rescore: bool, shard_text: str | None,
             private: tuple[Path, ...], benchmark: Path | None, toolchain: Path | None,
             bwrap_path: str | None, allow_bwrap: str | None, as_json: bool, verbose: int,
             quiet: bool) -> None:
    """Score SUBMISSION... (directories or .tar/.tar.gz/.tgz archives) against the benchmark.

    Re-running on the same --out resumes: verdicts whose inputs, identity and options are
    unchanged are kept; `error` pairs and the rest are scored (--rescore: all of them).
    """
    err = Console(stderr=True)
    env = dict(os.environ)
    selected = frozenset(p for item in problems for p in item.split(",") if p) or None
    try:
        shard = parse_shard(shard_text) if shard_text is not None else None
        inputs.check_run(submissions, out_dir, work_dir, selected,
                         benchmark or _default_benchmark())
        batch.check_inputs(submissions)
        cat = _load(benchmark, benchmark_rev, selected, quiet)
        writable = [out_dir, Path(tempfile.gettempdir()), *([work_dir] if work_dir else [])]
        tools = _tools(cat, toolchain, bwrap_path, allow_bwrap, env, writable)
        limits = intake.IntakeLimits(max_file_bytes=max_file_bytes,
                                     max_total_bytes=max_total_bytes, max_files=max_files,
                                     max_depth=max_depth, max_archive_bytes=max_archive_bytes,
                                     intake_seconds=intake_timeout)
        preflight = _preflight(tools, env, work_dir, skip_probes, quiet, verbose)
        options = batch.RunOptions(out_dir=out_dir, timeout=timeout, work_dir=work_dir,
                                   limits=limits, keep_work=keep_work, preflight=preflight,
                                   max_written_file_bytes=max_written_file_bytes, jobs=jobs,
                                   rescore=rescore, shard=shard, memory_limit=memory_limit,
                                   max_processes=max_processes,
                                   private=tuple(p.absolute() for p in private))
        kept_before = _scoring_dirs(work_dir) if keep_work else set()
        with progress.Display(err, quiet) as display:
            summary = batch.run_batch(list(submissions), cat, tools, options, env,
                                      on_progress=display.update)
        progress.report_end(summary, err, quiet)
        if keep_work:
            _say_kept(_scoring_dirs(work_dir) - kept_before, quiet)
    except SetupError as exc:
        _fail(str(exc))
        return
    except LeanEvalError as exc:  # a harness fault mid-run: verdicts written so far stay valid
        _fail(f"{exc}; the run stopped, verdicts already written stay valid", EXIT_FAULT)
        return
    except KeyboardInterrupt:
        _fail("interrupted; verdicts already written stay valid", EXIT_INTERRUPTED)
        return
    if as_json:
        click.echo(summary.model_dump_json(indent=2))
    elif not quiet:
        report.print_summary(summary, Console())
    sys.exit(summary.exit_code)


@main.command("probe")
@click.option("--work-dir", type=click.Path(path_type=Path, file_okay=False),
              help="Where the probes' scratch directory goes (default: the system temp dir).")
@click.option("--only", "names", multiple=True, type=click.Choice(PROBE_NAMES),
              help="Run only these probes.")
@common_options
def probe_command(work_dir: Path | None, names: tuple[str, ...], benchmark: Path | None,
                  toolchain: Path | None, bwrap_path: str | None, allow_bwrap: str | None,
                  as_json: bool, verbose: int, quiet: bool) -> None:
    """Run every sandbox and environment probe through the driver used for scoring.

    One line per probe (every check with -v; a failing probe's failing checks always).
    Exits 0 when every probe passed, 1 when one failed, 2 when one could not run.
    """
    env = dict(os.environ)
    try:
        _, tools = _setup(benchmark, toolchain, bwrap_path, allow_bwrap, env, work_dir, quiet)
        entries = _run_probes(tools, env, work_dir, names)
    except SetupError as exc:
        _fail(str(exc))
        return
    failed = [e for e in entries if e.status != "pass"]
    if as_json:
        click.echo(documents.probe_report(entries, tools.toolchain.root, tools.bwrap.path,
                                          tools.bwrap.version).model_dump_json(indent=2))
    elif quiet:
        _print_probes(failed, Console(stderr=True), verbose)
    else:
        _print_probes(entries, Console(), verbose)
    statuses = {e.status for e in entries}
    sys.exit(2 if "error" in statuses else 1 if "fail" in statuses else 0)


def _selfcheck_command(name: str, check_name: str, summary: str) -> Any:
    @main.command(name, help=summary)
    @click.option("--work-dir", type=click.Path(path_type=Path, file_okay=False),
                  help="Where the generated submissions and verdicts go.")
    @click.option("--timeout", type=click.FloatRange(min=1), default=600.0, show_default=True,
                  help="Deadline per generated pair in seconds.")
    @common_options
    def command(work_dir: Path | None, timeout: float, benchmark: Path | None,
                toolchain: Path | None, bwrap_path: str | None, allow_bwrap: str | None,
                as_json: bool, verbose: int, quiet: bool) -> None:
        env = dict(os.environ)
        try:
            cat, tools = _setup(benchmark, toolchain, bwrap_path, allow_bwrap, env, work_dir,
                                quiet)
            result = getattr(selfcheck, check_name)(cat, tools, env, work_dir, timeout)
        except SetupError as exc:
            _fail(str(exc))
            return
        if as_json:
            click.echo(documents.selfcheck_report(name, result).model_dump_json(indent=2))
        elif not quiet or not result.ok:  # a failed check is an error: shown even under -q
            console = Console(stderr=quiet)
            report.print_selfcheck(name, result, console)
            if verbose:
                console.print(f"toolchain {tools.toolchain.root}, bwrap {tools.bwrap.path} "
                              f"{tools.bwrap.version}", highlight=False)
                console.print(f"generated files: {result.where}"
                              + (" (removed: the check passed)" if result.ok else ""),
                              highlight=False)
        sys.exit(0 if result.ok else 1)

    return command


_selfcheck_command(
    "check-comparator-installation", "check_comparator_installation",
    "Check that this installation scores: the starter problem must be accepted with a known-good "
    "proof and rejected with a wrong one. Exits 1 with a diff when it is not.")
_selfcheck_command(
    "check-eval-workflow", "check_eval_workflow",
    "Score a generated batch covering every verdict kind and compare verdicts and counts with "
    "the expected ones. Exits 1 with a diff when they differ.")


@main.command("test")
@click.argument("workspace", required=False, type=click.Path(path_type=Path, file_okay=False))
@click.option("--timeout", type=click.FloatRange(min=1), default=1800.0, show_default=True,
              help="Deadline in seconds.")
@click.option("--keep-work", is_flag=True,
              help="Keep the harness files and the raw log, and say where they are.")
@tool_options
def test(workspace: Path | None, timeout: float, keep_work: bool, toolchain: Path | None,
         bwrap_path: str | None, allow_bwrap: str | None, as_json: bool, verbose: int,
         quiet: bool) -> None:
    """Run the WorkspaceTest driver on WORKSPACE (default: the current directory) as it stands.

    The workspace's own config.json is used, so a pass here proves nothing about the trusted
    benchmark. Exits 0 when accepted, 1 otherwise.
    """
    env = dict(os.environ)
    ws = (workspace or Path.cwd()).resolve()
    state: Path | None = None
    try:
        if not (ws / "config.json").is_file():
            raise UsageError(f"{ws} has no config.json; is it a lean-eval workspace?")
        config = catalog.parse_config((ws / "config.json").read_bytes(), f"{ws}/config.json")
        name = (ws / "lean-toolchain").read_text(encoding="utf-8").strip() \
            if (ws / "lean-toolchain").is_file() else ""
        tools = batch.Tools(toolchain=resolve_toolchain(toolchain, env, name),
                            bwrap=bubblewrap.resolve_bwrap(bwrap_path, env,
                                                           [Path(tempfile.gettempdir())],
                                                           allow_bwrap))
        state = Path(tempfile.mkdtemp(prefix="lean-eval-test-"))
        settings = driver.DriverSettings(toolchain=tools.toolchain, bwrap=tools.bwrap.path,
                                         caller_env=env, timeout=timeout,
                                         writable_roots=(state,))
        result = driver.run_workspace(ws, state / "state", config, settings, state / "test.log")
        log_text = (state / "test.log").read_text(encoding="utf-8", errors="replace")
    except LeanEvalError as exc:
        _fail(str(exc))
        return
    finally:
        if state is not None and not keep_work:
            shutil.rmtree(state, ignore_errors=True)
    kept = state if keep_work else None
    data = documents.workspace_test_report(ws, result, kept / "test.log" if kept else None, kept)
    c = result.classification
    out = Console(quiet=quiet)
    if as_json:
        click.echo(data.model_dump_json(indent=2))
    else:
        out.print(f"{ws.name}: {c.verdict} ({c.reason.code}): {c.reason.message}",
                  markup=False, highlight=False, soft_wrap=True)
        if verbose:
            out.print(f"execution {c.execution}, last phase {c.last_phase}, exit code "
                      f"{result.outcome.returncode}; kernels: "
                      + (", ".join(f"{k.name} {k.result}" for k in c.checkers) or "none"),
                      markup=False, highlight=False, soft_wrap=True)
            if verbose > 1 or c.verdict != "accepted":
                out.print(log_text, markup=False, highlight=False, soft_wrap=True, end="")
    if kept is not None:
        Console(stderr=True, quiet=quiet).print(
            f"kept: harness files and raw log in {kept} (log: {kept / 'test.log'})",
            markup=False, highlight=False, soft_wrap=True)
    sys.exit(0 if c.verdict == "accepted" else 1)


# --- start-problem (submitters) ---------------------------------------------------------------


@main.command("start-problem")
@click.argument("problem_id")
@click.argument("dest", required=False, default="submission",
                type=click.Path(path_type=Path, file_okay=False))
@click.option("--benchmark-rev", default="HEAD", show_default=True,
              help="Git revision of the benchmark whose starters are copied.")
@common_options
def start_problem_command(problem_id: str, dest: Path, benchmark_rev: str,
                          benchmark: Path | None, toolchain: Path | None,
                          bwrap_path: str | None, allow_bwrap: str | None, as_json: bool,
                          verbose: int, quiet: bool) -> None:
    """Write DEST/PROBLEM_ID (default DEST: submission/): the starters to edit and read-only
    copies of the trusted files; refuses to overwrite anything."""
    del toolchain, bwrap_path, allow_bwrap, verbose
    try:
        cat = _load(benchmark, benchmark_rev)
        started = starter.start_problem(cat, problem_id, dest)
    except SetupError as exc:
        _fail(str(exc))
        return
    parent = started.directory.parent
    rel = parent.relative_to(Path.cwd()) if parent.is_relative_to(Path.cwd()) else parent
    shown = rel / problem_id
    steps = [
        (f"$EDITOR {shown}/Submission.lean   # replace each sorry; helpers go under "
         f"{shown}/Submission/"),
        f"lean-eval validate-submission {rel}",
        f"lean-eval test {shown}",
        (f"tar czf {problem_id}.tgz -C {rel} {problem_id}/Submission.lean "
         f"{problem_id}/Submission"),
    ]
    if as_json:
        click.echo(documents.StartProblemReport(
            problem=problem_id, directory=str(started.directory),
            editable=tuple(str(p) for p in started.editable),
            reference=tuple(str(p) for p in started.reference),
            next=tuple(steps)).model_dump_json(indent=2))
    elif not quiet:
        editable = ", ".join(str(p.relative_to(started.directory)) for p in started.editable)
        click.echo(f"wrote {shown}/: edit {editable}; "
                   "the other files are read-only copies of the trusted workspace")
        click.echo("next:")
        for step in steps:
            click.echo(f"  {step}")
    sys.exit(0)


# --- merge and report (distribution across machines; design §5.5 "Shards", "Reports") -------------


@main.command("merge")
@click.argument("shard_dirs", nargs=-1, required=True, metavar="OUT...",
                type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--out", "out_dir", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="New output directory (absent or empty) for the merged verdicts and summary.")
@click.option("--json", "as_json", is_flag=True, help="Print the merged summary as JSON.")
@click.option("-v", "--verbose", count=True, help="Also each shard output and its pairs.")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors and missing pairs.")
def merge_command(shard_dirs: tuple[Path, ...], out_dir: Path, as_json: bool, verbose: int,
                  quiet: bool) -> None:
    """Combine the --out directories of `run-eval --shard K/N` runs into one output directory.

    Refuses (exit 2, writing nothing) shards of different batches, identities or options, and a
    pair scored twice; exits 1 after merging when some pairs were scored by no shard (listed)
    or a pair ended in an infrastructure failure.
    """
    from lean_eval import merge

    try:
        result = merge.merge(shard_dirs, out_dir)
    except SetupError as exc:
        _fail(str(exc))
        return
    except LeanEvalError as exc:  # the output could not be written: nothing was
        _fail(str(exc), EXIT_FAULT)
        return
    summary = result.summary
    if verbose and not quiet and not as_json:
        for shard_dir in shard_dirs:
            part = merge.load_shard(shard_dir).summary
            which = f"shard {part.shard.k}/{part.shard.n}" if part.shard else "unsharded"
            click.echo(f"{shard_dir}: {which}, {len(part.pairs)} pair(s)")
    if as_json:
        click.echo(summary.model_dump_json(indent=2))
    elif not quiet:
        counts = ", ".join(f"{n} {name}" for name, n in summary.counts.items() if n)
        click.echo(f"merged {len(shard_dirs)} shard output(s) into {result.out_dir}: "
                   f"{len(summary.pairs)} pair(s) ({counts or 'none'})")
    for k in result.missing_shards:
        click.echo(f"lean-eval: shard {k}/{result.shard_count} is missing: none of the given "
                   "outputs scored it, so its pairs are not in the merge", err=True)
    if result.missing:
        click.echo(f"lean-eval: {len(result.missing)} pair(s) were scored by no shard:",
                   err=True)
        for sid, pid in result.missing:
            click.echo(f"  {sid}/{pid}", err=True)
    sys.exit(summary.exit_code)


@main.command("report")
@click.argument("out_dir", metavar="OUT",
                type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "junit", "json"]),
              default="table", show_default=True,
              help="table: for people; markdown: fits $GITHUB_STEP_SUMMARY; junit: JUnit XML "
                   "for CI test views; json: one document with every pair.")
@click.option("--output", type=click.Path(path_type=Path, dir_okay=False),
              help="Write to FILE (atomically) instead of stdout.")
def report_command(out_dir: Path, fmt: str, output: Path | None) -> None:
    """Render the output directory OUT of `run-eval` or `merge` for people and CI systems."""
    from typing import cast

    try:
        run = report.load_run(out_dir)
        if fmt == "table" and output is None:
            report.print_summary(run.summary, Console())
        else:
            text = report.render(run, cast("report.Format", fmt))
            if output is None:
                click.echo(text, nl=False)
            else:
                report.write_text_atomic(output, text)
    except SetupError as exc:
        _fail(str(exc))
        return
    except OSError as exc:
        _fail(f"cannot write {output}: {exc.strerror or exc}")
        return
    sys.exit(0)


# --- validate-catalog (maintainers) -----------------------------------------------------------


@main.command("validate-catalog")
@common_options
def validate_catalog_command(benchmark: Path | None, toolchain: Path | None,
                             bwrap_path: str | None, allow_bwrap: str | None, as_json: bool,
                             verbose: int, quiet: bool) -> None:
    """Check the benchmark as it stands: manifests, configs, holes, starters and bridges agree;
    workspaces/index.json digests; every workspace's toolchain and dependency pins equal the
    root's; trusted Lean imports no solution-only module. Exit 0 clean, 1 with faults."""
    del toolchain, bwrap_path, allow_bwrap, verbose
    try:
        result = validation.validate_catalog(benchmark or _default_benchmark())
    except SetupError as exc:
        _fail(str(exc))
        return
    if as_json:
        click.echo(result.model_dump_json(indent=2))
    else:
        for finding in result.findings:
            click.echo(f"{finding.path}: {finding.message}", err=True)
        if not quiet or not result.ok:
            click.echo(f"{len(result.problems)} problem(s), "
                       + ("catalog consistent" if result.ok
                          else f"{len(result.findings)} fault(s)"),
                       err=not result.ok)
    sys.exit(0 if result.ok else EXIT_FAULT)


# --- validate-submission (submitters: intake and the header check, no Lean) -------------------


@main.command("validate-submission")
@click.argument("path", type=click.Path(path_type=Path, exists=False))
@click.option("--problem", "problems", multiple=True,
              help="Only these problem ids (comma-separated or repeated), as in run-eval.")
@click.option("--benchmark", type=click.Path(path_type=Path, file_okay=False),
              help="Benchmark checkout (default: the current git checkout).")
@click.option("--benchmark-rev", default="HEAD", show_default=True,
              help="Git revision of the benchmark whose starters the files are compared with.")
@click.option("--json", "as_json", is_flag=True, help="Print the check as a JSON document.")
@click.option("-v", "--verbose", count=True,
              help="Also the submission's digest and every file that would be scored.")
@click.option("-q", "--quiet", is_flag=True, help="Print only what is wrong.")
def validate_submission_command(path: Path, problems: tuple[str, ...], benchmark: Path | None,
                                benchmark_rev: str, as_json: bool, verbose: int,
                                quiet: bool) -> None:
    """Check PATH (a directory or .tar/.tar.gz/.tgz) as run-eval would read it, without Lean:
    per problem what would be scored, what is unchanged, what is ignored, and every rejection
    with the entry it names. Exit 0 when nothing would be rejected, 1 otherwise."""
    from lean_eval import precheck

    selected = frozenset(p for item in problems for p in item.split(",") if p) or None
    try:
        inputs.check_submission(path)
        bench = benchmark or _default_benchmark()
        inputs.check_problems(selected or (), inputs.problem_ids(bench))
        result = precheck.check_submission(path, _load(bench, benchmark_rev, selected))
    except SetupError as exc:
        _fail(str(exc))
        return
    if as_json:
        click.echo(result.model_dump_json(indent=2))
        sys.exit(0 if result.ok else EXIT_FAULT)
    lines: list[tuple[bool, str]] = []  # (is a fault, text)

    def say(fault: bool, *parts: str) -> None:
        lines.append((fault, "".join(parts)))

    if verbose:
        say(False, f"{result.submission_id}: {result.source} (sha256 {result.digest})")
    if result.rejection is not None:
        say(True, f"{result.submission_id}: whole submission rejected ",
            f"({result.rejection_code}): {result.rejection}")
        for pid in result.named:
            say(True, f"  {pid}: would get invalid_submission")
    for item in result.problems:
        where = f"{item.problem_id} ({item.location})"
        if item.rejection is not None:
            say(True, f"{where}: invalid_submission ({item.rejection_code}): {item.rejection}")
        elif item.outcome == "unchanged":
            say(False, f"{where}: unchanged, every file is the starter: would be skipped")
        else:
            marked = (f + (" (changed)" if f in item.changed else "") for f in item.files)
            say(False, f"{where}: would be scored: ", ", ".join(marked))
            for name in item.files if verbose else ():
                say(False, f"  {name}: ", "differs from the starter" if name in item.changed
                    else "the starter's bytes")
        for line in item.ignored:
            say(False, f"  ignored: {line}")
    for line in result.ignored:
        say(False, f"ignored: {line}")
    if not result.named:
        say(True, f"{result.submission_id}: no problem directory found",
            f": {result.hint}" if result.hint else "")
    for fault, text in lines:
        if fault or not quiet:
            click.echo(text, err=fault)
    sys.exit(0 if result.ok else EXIT_FAULT)


# --- prepare (maintainers: make a machine ready) ----------------------------------------------


@main.command("prepare")
@click.option("--offline", type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="Take the elan archive and the bubblewrap release tarball from DIR instead "
                   "of downloading them (the release file names, as published).")
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@common_options
def prepare_command(offline: Path | None, dry_run: bool, benchmark: Path | None,
                    toolchain: Path | None, bwrap_path: str | None, allow_bwrap: str | None,
                    as_json: bool, verbose: int, quiet: bool) -> None:
    """Make this machine ready to score: elan (pinned, checksum-verified), the Lean release of
    lean-toolchain, bubblewrap >= 0.12.0 when the system one is older, and the benchmark's
    shared dependencies (built once, then read-only). Steps already done are reported
    `present`; a second run changes nothing."""
    del bwrap_path, allow_bwrap, verbose
    settings = prepare.Settings(benchmark=(benchmark or _default_benchmark()).resolve(),
                                env=dict(os.environ), offline=offline, dry_run=dry_run,
                                toolchain=toolchain.resolve() if toolchain else None)
    try:
        steps = prepare.prepare(settings)
    except SetupError as exc:
        _fail(str(exc))
        return
    if as_json:
        click.echo(documents.PrepareReport(
            dry_run=dry_run, steps=tuple(documents.PrepareStep(**s._asdict()) for s in steps)
        ).model_dump_json(indent=2))
    elif not quiet:
        for step in steps:
            click.echo(f"{step.name:<13} {step.status:<8} {step.detail}")
        if dry_run:
            click.echo("dry run: nothing was changed")
    sys.exit(0)
