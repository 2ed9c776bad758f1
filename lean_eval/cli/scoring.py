"""Scoring commands: run-eval, probe, check-comparator-installation, check-eval-workflow, test."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from lean_eval.cli.deferred import api, documents, driver, problem, selfcheck
from lean_eval.cli.exits import EXIT_FAULT, EXIT_SETUP, Worded, Wording, json_errors
from lean_eval.cli.group import Console, warn
from lean_eval.cli.options import (
    PROBE_NAMES,
    ByteSize,
    common_options,
    fail_on_option,
    intake_limit_options,
    intake_limits,
    sandbox_user_option,
    selection_options,
    tool_options,
    verbose_help,
)
from lean_eval.cli.steps import (
    print_probes,
    resolve_tools,
    run_probes,
    say_kept,
    scoring_dirs,
    setup,
    show_probes,
)
from lean_eval.errors import UsageError

if TYPE_CHECKING:
    from lean_eval.records.run_report import ProblemInfo
    from lean_eval.records.verdict import Summary

# A harness fault or an interrupt mid-run leaves the verdicts written so far valid; it says so.
RUN_STOPPED = Wording(fault="; the run stopped, verdicts already written stay valid",
                      stopped="; verdicts already written stay valid")


@json_errors
@verbose_help("Also every check of every preflight probe (a failing one's always).")
@click.command("run-eval", cls=Worded, wording=RUN_STOPPED)
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
@intake_limit_options
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
@click.option("--disk-limit", type=ByteSize(minimum=0), default="4GiB", show_default=True,
              help="Bytes one pair's scoring directories may hold (0: no limit).")
@click.option("--disk-files", type=click.IntRange(min=0), default=100_000, show_default=True,
              help="Files and directories one pair's scoring directories may hold (0: no limit).")
@click.option("--disk-reserve", type=ByteSize(minimum=0), default="1GiB", show_default=True,
              help="Free space kept on the scoring and output filesystems: a pair waits while "
                   "another runs and either has less (0: no reserve).")
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
@sandbox_user_option
@selection_options
@fail_on_option
@click.option("--exit-zero", is_flag=True,
              help="Exit 0 for every run that finished, whatever its verdicts and whatever "
                   "--fail-on finds (ruff's and flake8's flag; for pipelines that read the "
                   "verdicts themselves). Setup failures still exit 2, a fault 1, an interrupt "
                   "130/143.")
@common_options
def run_eval(submissions: tuple[Path, ...], out_dir: Path, problems: tuple[str, ...],
             timeout: float, work_dir: Path | None, keep_work: bool, skip_probes: bool,
             benchmark_rev: str, max_file_bytes: int, max_total_bytes: int, max_files: int,
             max_depth: int, max_archive_bytes: int, intake_timeout: float,
             max_written_file_bytes: int, jobs: int | None, memory_limit: int,
             max_processes: int, disk_limit: int, disk_files: int, disk_reserve: int,
             rescore: bool, shard_text: str | None,
             private: tuple[Path, ...], sign_key: Path | None, sandbox_user: str | None,
             set_name: str | None,
             statuses: tuple[str, ...], tags: tuple[str, ...], fail_on: frozenset[str],
             exit_zero: bool, benchmark: Path | None, toolchain: Path | None,
             bwrap_path: str | None, allow_bwrap: str | None, as_json: bool, verbose: int,
             quiet: bool) -> NoReturn:
    """Score SUBMISSION... (directories or .tar/.tar.gz/.tgz archives) against the benchmark.

    Re-running on the same --out resumes: verdicts whose inputs, identity and options are
    unchanged are kept; `error` pairs and the rest are scored (--rescore: all of them).
    """
    from lean_eval.cli import progress  # rich's progress display: off --help's path
    from lean_eval.scoring.gate import ExitPolicy

    err = Console(stderr=True)
    kept_before = scoring_dirs(work_dir) if keep_work else set()
    with contextlib.ExitStack() as stack:
        display: list[progress.Display] = []  # entered when scoring starts, not before

        def show(event: api.Progress) -> None:
            if not display:
                display.append(stack.enter_context(progress.Display(err, quiet)))
            display[0].update(event)

        request = api.ScoreRequest(
            submissions=submissions, out=out_dir,
            benchmark=benchmark, benchmark_rev=benchmark_rev,
            problems=tuple(p for item in problems for p in item.split(",") if p),
            set_name=set_name, statuses=statuses, tags=tags, toolchain=toolchain,
            bwrap=bwrap_path, allow_bwrap_version=allow_bwrap, skip_probes=skip_probes,
            timeout=timeout,
            limits=intake_limits(max_file_bytes, max_total_bytes, max_files, max_depth,
                                 max_archive_bytes, intake_timeout),
            max_written_file_bytes=max_written_file_bytes, jobs=jobs,
            memory_limit=memory_limit, max_processes=max_processes,
            disk_limit=disk_limit, disk_files=disk_files, disk_reserve=disk_reserve,
            work_dir=work_dir, keep_work=keep_work, rescore=rescore, shard=shard_text,
            private=private, sign_key=sign_key, sandbox_user=sandbox_user)
        summary = api.run_request(request, dict(os.environ), on_progress=show,
                                  on_probes=lambda entries: show_probes(entries, quiet, verbose),
                                  on_warning=lambda text: warn(text, quiet),
                                  policy=ExitPolicy(fail_on=fail_on, exit_zero=exit_zero))
    progress.report_end(summary, err, quiet, listed=not as_json)
    # summary.json records the code the process returns (scoring.gate decided it before the
    # run was signed); the gate's message comes before the table, whose last line says it.
    code = summary.exit_code
    progress.say_gate(summary, fail_on, exit_zero)
    if keep_work:
        say_kept(scoring_dirs(work_dir) - kept_before, quiet)
    if as_json:
        from lean_eval.records.run_report import run_eval_document

        document = run_eval_document(summary, _problem_info(summary))
        click.echo(document.model_dump_json(indent=2))
    elif not quiet:
        from lean_eval.outputs.report import console as report_console

        report_console.print_summary(summary, Console(), hints=True)
    sys.exit(code)


def _problem_info(summary: Summary) -> dict[str, ProblemInfo]:
    """Each scored problem's title and visibility, from the benchmark revision the run used
    (none when it cannot be read again: ids stand in for titles, visibility is unknown)."""
    from lean_eval.benchmark.catalog import load_catalog
    from lean_eval.errors import LeanEvalError
    from lean_eval.records.run_report import ProblemInfo

    ident = summary.identity
    try:
        cat = load_catalog(Path(ident.benchmark_path),
                           revision=ident.benchmark_commit or "HEAD",
                           only=frozenset(summary.problems) or None)
    except LeanEvalError:
        return {}
    return {pid: ProblemInfo(ws.problem.title, ws.problem.visible)
            for pid, ws in cat.problems.items()}


@verbose_help("Every check of every probe (a failing probe's failing checks always).")
@click.command("probe")
@click.option("--work-dir", type=click.Path(path_type=Path, file_okay=False),
              help="Where the probes' scratch directory goes (default: the system temp dir).")
@click.option("--only", "names", multiple=True, type=click.Choice(PROBE_NAMES),
              help="Run only these probes.")
@common_options
def probe_command(work_dir: Path | None, names: tuple[str, ...], benchmark: Path | None,
                  toolchain: Path | None, bwrap_path: str | None, allow_bwrap: str | None,
                  as_json: bool, verbose: int, quiet: bool) -> NoReturn:
    """Run every sandbox and environment probe through the driver used for scoring.

    One line per probe (every check with -v; a failing probe's failing checks always).
    Exits 0 when every probe passed, 1 when one failed, 2 when one could not run.
    """
    env = dict(os.environ)
    _, tools = setup(benchmark, toolchain, bwrap_path, allow_bwrap, env, work_dir, quiet)
    entries = run_probes(tools, env, work_dir, names)
    failed = [e for e in entries if e.status != "pass"]
    if as_json:
        click.echo(documents.probe_report(entries, tools.toolchain.root, tools.bwrap.path,
                                          tools.bwrap.version).model_dump_json(indent=2))
    elif quiet:
        print_probes(failed, Console(stderr=True), verbose)
    else:
        print_probes(entries, Console(), verbose)
    statuses = {e.status for e in entries}
    sys.exit(EXIT_SETUP if "error" in statuses else EXIT_FAULT if "fail" in statuses else 0)


def _selfcheck_command(name: str, check_name: str, summary: str) -> click.Command:
    @verbose_help("Also the toolchain and bwrap used, and where the generated files are.")
    @click.command(name, help=summary)
    @click.option("--work-dir", type=click.Path(path_type=Path, file_okay=False),
                  help="Where the generated submissions and verdicts go.")
    @click.option("--timeout", type=click.FloatRange(min=1), default=600.0, show_default=True,
                  help="Deadline per generated pair in seconds.")
    @common_options
    def command(work_dir: Path | None, timeout: float, benchmark: Path | None,
                toolchain: Path | None, bwrap_path: str | None, allow_bwrap: str | None,
                as_json: bool, verbose: int, quiet: bool) -> NoReturn:
        env = dict(os.environ)
        cat, tools = setup(benchmark, toolchain, bwrap_path, allow_bwrap, env, work_dir, quiet)
        result = getattr(selfcheck, check_name)(cat, tools, env, work_dir, timeout)
        if as_json:
            click.echo(result.report.model_dump_json(indent=2))
        elif not quiet or not result.ok:  # a failed check is an error: shown even under -q
            console = Console(stderr=quiet)
            from lean_eval.outputs.report import console as report_console

            report_console.print_selfcheck(result.report, console)
            if verbose:
                console.print(f"toolchain {tools.toolchain.root}, bwrap {tools.bwrap.path} "
                              f"{tools.bwrap.version}", highlight=False)
                console.print(f"generated files: {result.where}"
                              + (" (removed: the check passed)" if result.ok else ""),
                              highlight=False)
        sys.exit(0 if result.ok else EXIT_FAULT)

    return command


CHECK_INSTALLATION = _selfcheck_command(
    "check-comparator-installation", "check_comparator_installation",
    "Check that this installation scores: the starter problem must be accepted with a known-good "
    "proof and rejected with a wrong one. Exits 1 with a diff when it is not.")
CHECK_WORKFLOW = _selfcheck_command(
    "check-eval-workflow", "check_eval_workflow",
    "Score a generated batch covering every verdict kind and compare verdicts and counts with "
    "the expected ones. Exits 1 with a diff when they differ.")


@verbose_help("Also the execution, last phase, exit code and kernels; the log when not "
              "accepted (-vv: always).")
@click.command("test")
@click.argument("workspace", required=False, type=click.Path(path_type=Path, file_okay=False))
@click.option("--timeout", type=click.FloatRange(min=1), default=1800.0, show_default=True,
              help="Deadline in seconds.")
@click.option("--keep-work", is_flag=True,
              help="Keep the harness files and the raw log, and say where they are.")
@tool_options
def test(workspace: Path | None, timeout: float, keep_work: bool, toolchain: Path | None,
         bwrap_path: str | None, allow_bwrap: str | None, as_json: bool, verbose: int,
         quiet: bool) -> NoReturn:
    """Score WORKSPACE (default: the current directory) as it stands: `lake comparator` inside
    bubblewrap, as run-eval scores one pair, and the verdict it would get.

    The workspace's own config.json is used, so a pass here proves nothing about the trusted
    benchmark. Exits 0 when accepted, 1 when not, 2 when it cannot run (no workspace there,
    no toolchain or bubblewrap).
    """
    env = dict(os.environ)
    ws = (workspace or Path.cwd()).resolve()
    state: Path | None = None
    try:
        if not (ws / "config.json").is_file():
            raise UsageError(f"{ws} has no config.json, so it is not a lean-eval workspace"
                             + _workspace_hint(ws))
        config = problem.parse_config((ws / "config.json").read_bytes(), f"{ws}/config.json")
        name = (ws / "lean-toolchain").read_text(encoding="utf-8").strip() \
            if (ws / "lean-toolchain").is_file() else ""
        tools = resolve_tools(name, toolchain, bwrap_path, allow_bwrap, env,
                              [Path(tempfile.gettempdir())])
        state = Path(tempfile.mkdtemp(prefix="lean-eval-test-"))
        settings = driver.DriverSettings(toolchain=tools.toolchain, bwrap=tools.bwrap.path,
                                         caller_env=env, timeout=timeout,
                                         writable_roots=(state,))
        result = driver.run_workspace(ws, state / "state", config, settings, state / "test.log")
        log_text = (state / "test.log").read_text(encoding="utf-8", errors="replace")
    finally:
        if state is not None and not keep_work:
            shutil.rmtree(state, ignore_errors=True)
    kept = state if keep_work else None
    data = driver.workspace_test_report(ws, result, kept / "test.log" if kept else None, kept)
    c = result.classification
    out = Console(quiet=quiet)
    if as_json:
        click.echo(data.model_dump_json(indent=2))
    else:
        # The reason code only when it says more than the verdict (never "accepted (accepted)").
        code = "" if c.reason.code == c.verdict else f" ({c.reason.code})"
        out.print(f"{ws.name}: {c.verdict}{code}: {c.reason.message}",
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
    sys.exit(0 if c.verdict == "accepted" else EXIT_FAULT)


def _workspace_hint(ws: Path) -> str:
    """Where the workspaces are, when ``ws`` holds some (a benchmark checkout, say)."""
    found = sorted(p.parent.name for p in ws.glob("workspaces/*/config.json"))
    if found:
        return (f"; pass one of its workspaces, e.g. `lean-eval test workspaces/{found[0]}` "
                f"({len(found)} under {ws / 'workspaces'})")
    return ("; pass a workspace directory (one `lean-eval start-problem` made, or "
            "workspaces/<problem id> of a benchmark checkout)")


COMMANDS = (run_eval, probe_command, CHECK_INSTALLATION, CHECK_WORKFLOW, test)
