"""Scoring commands: run-eval, probe, check-comparator-installation, check-eval-workflow, test."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import click

from lean_eval.cli import (
    EXIT_FAULT,
    EXIT_INTERRUPTED,
    PROBE_NAMES,
    ByteSize,
    Console,
    ProbesFailedError,
    _default_benchmark,
    _fail,
    _load_selected,
    _preflight,
    _print_probes,
    _resolve_tools,
    _run_probes,
    _say_kept,
    _scoring_dirs,
    _setup,
    attest,
    batch,
    bubblewrap,
    catalog,
    common_options,
    documents,
    driver,
    inputs,
    intake,
    lock,
    main,
    one_error,
    parse_shard,
    progress,
    report,
    selection_options,
    selfcheck,
    tool_options,
)
from lean_eval.errors import LeanEvalError, SetupError, UsageError

if TYPE_CHECKING:
    from lean_eval.shard import Shard
    from lean_eval.verdict import Preflight

T = TypeVar("T")


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
@click.option("--sign-key", type=click.Path(path_type=Path, dir_okay=False),
              envvar="LEAN_EVAL_SIGN_KEY", show_envvar=True,
              help="Ed25519 private key in PEM (openssl genpkey -algorithm ed25519): write a "
                   "signed in-toto envelope <problem>.intoto.json beside every verdict.")
@selection_options
@common_options
def run_eval(submissions: tuple[Path, ...], out_dir: Path, problems: tuple[str, ...],
             timeout: float, work_dir: Path | None, keep_work: bool, skip_probes: bool,
             benchmark_rev: str, max_file_bytes: int, max_total_bytes: int, max_files: int,
             max_depth: int, max_archive_bytes: int, intake_timeout: float,
             max_written_file_bytes: int, jobs: int | None, memory_limit: int,
             max_processes: int, rescore: bool, shard_text: str | None,
             private: tuple[Path, ...], sign_key: Path | None, set_name: str | None,
             statuses: tuple[str, ...], tags: tuple[str, ...], benchmark: Path | None,
             toolchain: Path | None,
             bwrap_path: str | None, allow_bwrap: str | None, as_json: bool, verbose: int,
             quiet: bool) -> None:
    """Score SUBMISSION... (directories or .tar/.tar.gz/.tgz archives) against the benchmark.

    Re-running on the same --out resumes: verdicts whose inputs, identity and options are
    unchanged are kept; `error` pairs and the rest are scored (--rescore: all of them).
    """
    err = Console(stderr=True)
    env = dict(os.environ)
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    selected = frozenset(p for item in problems for p in item.split(",") if p) or None
    held: lock.OutLock | None = None
    try:
        shard, signer, cat, tools, held = _checked_setup(
            submissions, out_dir, work_dir, selected, shard_text, sign_key, benchmark,
            benchmark_rev, set_name, statuses, tags, toolchain, bwrap_path, allow_bwrap, env,
            quiet)
        limits = intake.IntakeLimits(max_file_bytes=max_file_bytes,
                                     max_total_bytes=max_total_bytes, max_files=max_files,
                                     max_depth=max_depth, max_archive_bytes=max_archive_bytes,
                                     intake_seconds=intake_timeout)
        # The resume keys use the probe policy asked for; the probes themselves run once the
        # batch is planned, only when a pair needs a sandbox (batch.run_batch's ``probe``).
        intended = batch.not_probed(tools)
        if not skip_probes:
            intended = intended.model_copy(update={"skipped": False})
        options = batch.RunOptions(out_dir=out_dir, timeout=timeout, work_dir=work_dir,
                                   limits=limits, keep_work=keep_work, preflight=intended,
                                   max_written_file_bytes=max_written_file_bytes, jobs=jobs,
                                   rescore=rescore, shard=shard, memory_limit=memory_limit,
                                   max_processes=max_processes,
                                   private=tuple(p.absolute() for p in private),
                                   sign_key=signer)
        run_tools = tools

        def probe(needed: bool) -> Preflight:
            return _preflight(run_tools, env, work_dir, skip_probes, quiet, verbose, needed)

        kept_before = _scoring_dirs(work_dir) if keep_work else set()
        try:
            with progress.Display(err, quiet) as display:
                summary = batch.run_batch(list(submissions), cat, tools, options, env,
                                          on_progress=display.update, out_lock=held,
                                          probe=probe)
        except ProbesFailedError as exc:
            raise SetupError(_record_refusal(out_dir, cat, tools, exc, started_at,
                                             held)) from None
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
    finally:
        if held is not None:
            held.close()
    if as_json:
        click.echo(summary.model_dump_json(indent=2))
    elif not quiet:
        report.print_summary(summary, Console())
    sys.exit(summary.exit_code)


class _Setup(NamedTuple):
    shard: Shard | None
    signer: attest.SigningKey | None
    cat: catalog.Catalog
    tools: batch.Tools
    held: lock.OutLock


def _checked_setup(submissions: tuple[Path, ...], out_dir: Path, work_dir: Path | None,
                   selected: frozenset[str] | None, shard_text: str | None,
                   sign_key: Path | None, benchmark: Path | None, benchmark_rev: str,
                   set_name: str | None, statuses: tuple[str, ...], tags: tuple[str, ...],
                   toolchain: Path | None, bwrap_path: str | None, allow_bwrap: str | None,
                   env: dict[str, str], quiet: bool) -> _Setup:
    """Every check of run-eval that needs no sandbox (arguments, catalog, pins and release,
    toolchain, bwrap, ``--out``'s lock), all before any probe; every error found is in the one
    ``SetupError`` raised. On success ``--out`` exists and its lock is held (the caller closes
    it); on failure a fresh ``--out`` is not created."""
    errors: list[SetupError] = []

    def attempt(check: Callable[[], T]) -> T | None:
        try:
            return check()
        except SetupError as exc:
            errors.append(exc)
            return None

    shard = attempt(lambda: parse_shard(shard_text) if shard_text is not None else None)
    signer = attempt(lambda: attest.load_signing_key(sign_key) if sign_key is not None else None)
    bench = benchmark or _default_benchmark()
    attempt(lambda: inputs.check_run(submissions, out_dir, work_dir, selected, bench))
    attempt(lambda: batch.check_inputs(submissions))
    cat = attempt(lambda: _load_selected(benchmark, benchmark_rev, selected, set_name,
                                         statuses, tags, quiet))
    writable = [out_dir, Path(tempfile.gettempdir()), *([work_dir] if work_dir else [])]
    name = cat.toolchain_name if cat else _pinned_name(bench)
    tools = None
    if name is None and toolchain is None:  # no release to look for: the catalog error says why
        attempt(lambda: bubblewrap.resolve_bwrap(bwrap_path, env, writable, allow_bwrap))
    else:
        tools = attempt(lambda: _resolve_tools(name or "", toolchain, bwrap_path, allow_bwrap,
                                               env, writable, release=True))
    held = attempt(lambda: lock.OutLock.if_present(out_dir.resolve()))
    if errors or cat is None or tools is None:
        if held is not None:
            held.close()
        raise one_error(errors)
    if held is None:  # a fresh --out: created only now that the run can go ahead
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"--out {out_dir} cannot be created: {exc.strerror}") from None
        held = lock.OutLock(out_dir.resolve())
    return _Setup(shard, signer, cat, tools, held)


def _pinned_name(benchmark: Path) -> str | None:
    """The benchmark's pinned release read from its working tree, for naming toolchain problems
    in the same message when the catalog itself could not be loaded; None when unreadable."""
    try:
        return (benchmark / "lean-toolchain").read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _record_refusal(out_dir: Path, cat: catalog.Catalog, tools: batch.Tools,
                    exc: ProbesFailedError, started_at: str,
                    held: lock.OutLock | None = None) -> str:
    """The refused run's summary in --out (design §5.5), and the message that says where."""
    try:
        written = batch.write_refusal(out_dir, cat, tools, exc.preflight, str(exc), started_at,
                                      out_lock=held)
    except LeanEvalError as why:  # --out held by another run, or unwritable: say so, go on
        return f"{exc}; no summary was written: {why}"
    return f"{exc}; the probes' outcome is in {written}"


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
        tools = _resolve_tools(name, toolchain, bwrap_path, allow_bwrap, env,
                               [Path(tempfile.gettempdir())])
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
