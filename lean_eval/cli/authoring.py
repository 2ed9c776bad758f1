"""Commands for submitters and maintainers: start-problem, validate-*, prepare."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import NoReturn

import click
from click.core import ParameterSource

from lean_eval.cli.deferred import (
    check_release,
    documents,
    prepare,
    release_incompatibility,
    starter,
    validation,
)
from lean_eval.cli.exits import EXIT_FAULT, fail
from lean_eval.cli.group import warn
from lean_eval.cli.options import (
    common_options,
    intake_limit_options,
    intake_limits,
    selection_options,
    verbose_help,
    without_tool_options,
)
from lean_eval.cli.steps import benchmark_root, default_benchmark, load
from lean_eval.errors import PrerequisitesError, StepFailedError

# --- start-problem (submitters) ---------------------------------------------------------------


@without_tool_options
@verbose_help("Also list every file written, editable or read-only.")
@click.command("start-problem")
@click.argument("problem_id")
@click.argument("dest", required=False, default="submission",
                type=click.Path(path_type=Path, file_okay=False))
@click.option("--benchmark-rev", default="HEAD", show_default=True,
              help="Git revision of the benchmark whose starters are copied.")
@common_options
def start_problem_command(problem_id: str, dest: Path, benchmark_rev: str,
                          benchmark: Path | None, as_json: bool, verbose: int,
                          quiet: bool) -> NoReturn:
    """Write DEST/PROBLEM_ID (default DEST: submission/): the starters to edit and read-only
    copies of the trusted files; refuses to overwrite anything. -v lists every file written."""
    cat = load(benchmark, benchmark_rev)
    started = starter.start_problem(cat, problem_id, dest)
    parent = started.directory.parent
    rel = parent.relative_to(Path.cwd()) if parent.is_relative_to(Path.cwd()) else parent
    shown = rel / problem_id
    next_steps = [
        (f"$EDITOR {shown}/Submission.lean   # replace each sorry; helpers go under "
         f"{shown}/Submission/"),
        f"lean-eval validate-submission {rel}",
        f"lean-eval test {shown}",
        (f"tar czf YOURNAME-{problem_id}.tgz -C {rel} {problem_id}/Submission.lean "
         f"{problem_id}/Submission {problem_id}/lakefile.toml   # YOURNAME: your own name, "
         "so no two submitters' archives share an id"),
    ]
    if as_json:
        click.echo(documents.StartProblemReport(
            problem=problem_id, directory=str(started.directory),
            editable=tuple(str(p) for p in started.editable),
            reference=tuple(str(p) for p in started.reference),
            next=tuple(next_steps)).model_dump_json(indent=2))
    elif not quiet:
        editable = ", ".join(str(p.relative_to(started.directory)) for p in started.editable)
        click.echo(f"wrote {shown}/: edit {editable}; "
                   "the other files are read-only copies of the trusted workspace")
        if verbose:
            for path in started.editable:
                click.echo(f"  editable   {path}")
            for path in started.reference:
                click.echo(f"  read-only  {path}")
        click.echo("next:")
        for step in next_steps:
            click.echo(f"  {step}")
    sys.exit(0)



# --- validate-catalog (maintainers) -----------------------------------------------------------


@without_tool_options
@verbose_help("Also name every problem checked.")
@click.command("validate-catalog")
@common_options
def validate_catalog_command(benchmark: Path | None, as_json: bool, verbose: int,
                             quiet: bool) -> NoReturn:
    """Check the benchmark as it stands: manifests, configs, holes, starters and bridges agree;
    workspaces/index.json digests; every workspace's toolchain and dependency pins equal the
    root's; trusted Lean imports no solution-only module. Exit 0 clean, 1 with faults.
    -v names the benchmark and every problem checked."""
    result = validation.validate_catalog(benchmark_root(benchmark))
    pinned = Path(result.benchmark) / "lean-toolchain"
    incompatible = (release_incompatibility(pinned.read_text(encoding="utf-8", errors="replace"))
                    if pinned.is_file() else None)
    if incompatible:  # the catalog can be consistent and still unscorable: a warning, not a fault
        click.echo(f"warning: lean-toolchain: {incompatible}", err=True)
    if as_json:
        click.echo(result.model_dump_json(indent=2))
    else:
        for finding in result.findings:
            click.echo(f"{finding.path}: {finding.message}", err=True)
        if verbose and not quiet:
            click.echo(f"benchmark {result.benchmark}: checked "
                       + (", ".join(result.problems) or "no problem"))
        if not quiet or not result.ok:
            click.echo(f"{len(result.problems)} problem(s), "
                       + ("catalog consistent" if result.ok
                          else f"{len(result.findings)} fault(s)"),
                       err=not result.ok)
    sys.exit(0 if result.ok else EXIT_FAULT)


# --- validate-submission (submitters: intake and the header check, no Lean) -------------------


@click.command("validate-submission")
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
@selection_options
@intake_limit_options
def validate_submission_command(path: Path, problems: tuple[str, ...], benchmark: Path | None,
                                benchmark_rev: str, as_json: bool, verbose: int,
                                quiet: bool, set_name: str | None, statuses: tuple[str, ...],
                                tags: tuple[str, ...], max_file_bytes: int,
                                max_total_bytes: int, max_files: int, max_depth: int,
                                max_archive_bytes: int, intake_timeout: float) -> NoReturn:
    """Check PATH (a directory or .tar/.tar.gz/.tgz) as run-eval would read it, without Lean:
    per problem what would be scored, what is unchanged, what is ignored, and every rejection
    with the entry it names, under the same intake limits as run-eval (pass the ones the
    maintainer's run-eval uses). Exit 0 when nothing would be rejected, 1 otherwise."""
    from lean_eval import api

    result = api.validate_request(
        path, benchmark=benchmark, benchmark_rev=benchmark_rev,
        problems=[p for item in problems for p in item.split(",") if p], set_name=set_name,
        statuses=statuses, tags=tags,
        limits=intake_limits(max_file_bytes, max_total_bytes, max_files, max_depth,
                             max_archive_bytes, intake_timeout), on_warning=warn)
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
        elif item.fault is not None:
            say(True, f"{where}: error (the harness, not the submission): {item.fault}")
        elif item.outcome == "unchanged":
            say(False, f"{where}: unchanged, every file is the starter: would be skipped")
        else:
            marked = (f + (" (changed)" if f in item.changed else "") for f in item.files)
            say(False, f"{where}: would be scored: ", ", ".join(marked))
        for text in item.warnings:  # a rejection to come, or an edit to no effect: on stderr
            say(True, f"  warning: {text}")
        if item.outcome == "scored":
            for name in item.files if verbose else ():
                say(False, f"  {name}: ", "differs from the starter"
                    if name in item.changed else "the starter's bytes")
        for line in item.ignored:
            say(False, f"  ignored: {line}")
        if item.reference and verbose:  # start-problem's read-only copies: expected, not news
            say(False, f"  not read (the benchmark's own are used): {', '.join(item.reference)}")
    for line in result.ignored:
        say(False, f"ignored: {line}")
    for line in result.hidden:
        say(True, f"hidden by a limit: {line}")
    if not result.named and result.rejection is None:
        say(True, f"{result.submission_id}: no problem directory found",
            f": {result.hint}" if result.hint else "")
    for fault, text in lines:
        if fault or not quiet:
            click.echo(text, err=fault)
    sys.exit(0 if result.ok else EXIT_FAULT)


# --- prepare (maintainers: make a machine ready) ----------------------------------------------


@verbose_help("First show the pinned archives and the directories used.")
@click.command("prepare")
@click.option("--offline", type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="Take the elan archive and the bubblewrap release tarball from DIR instead "
                   "of downloading them (the release file names, as published).")
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@common_options
def prepare_command(offline: Path | None, dry_run: bool, benchmark: Path | None,
                    toolchain: Path | None, bwrap_path: str | None, allow_bwrap: str | None,
                    as_json: bool, verbose: int, quiet: bool) -> NoReturn:
    """Make this machine ready to score: elan (pinned, checksum-verified), the Lean release of
    lean-toolchain, bubblewrap >= 0.12.0 when the system one is older, and the benchmark's
    shared dependencies (built once, then read-only). Steps already done are reported
    `present`; a second run changes nothing. --toolchain DIR uses that Lean (no elan);
    --bwrap PATH uses that bubblewrap and --allow-bwrap-version MIN accepts one down to MIN
    (neither is then built); -v first shows the pinned archives and the directories used."""
    settings = prepare.Settings(benchmark=(benchmark or default_benchmark()).resolve(),
                                env=dict(os.environ), offline=offline, dry_run=dry_run,
                                toolchain=toolchain.resolve() if toolchain else None,
                                bwrap=Path(bwrap_path) if bwrap_path else None,
                                allow_bwrap=allow_bwrap)
    if verbose and not as_json and not quiet:
        for line in prepare.plan_details(settings):
            click.echo(line)
    failed: StepFailedError | PrerequisitesError | None = None
    done: tuple[prepare.Step, ...] = ()
    try:
        pinned = settings.benchmark / "lean-toolchain"
        if pinned.is_file():
            check_release(toolchain, pinned.read_text(encoding="utf-8", errors="replace"))
        done = prepare.prepare(settings)
    except StepFailedError as exc:  # name the step; show what was finished before it
        failed, done = exc, exc.done
    except PrerequisitesError as exc:
        failed = exc
    missing = failed.missing if isinstance(failed, PrerequisitesError) else ()
    failed_step, cause = (failed.step, failed.cause) if isinstance(failed, StepFailedError) \
        else ("prerequisites", str(failed)) if failed else (None, None)
    run_with = _run_with(click.get_current_context(), settings) if failed is None else ()
    if as_json:
        click.echo(documents.PrepareReport(
            dry_run=dry_run, steps=tuple(documents.PrepareStep(**s._asdict()) for s in done),
            ok=failed is None, failed_step=failed_step, error=cause,
            run_with=run_with).model_dump_json(indent=2))
    elif not quiet:  # each failure is said once: here, and the error line only points here
        for step in done:
            click.echo(f"{step.name:<13} {step.status:<8} {step.detail}")
        for name, what in missing:
            click.echo(f"{name:<13} {'MISSING':<8} {what}")
        if isinstance(failed, StepFailedError):
            click.echo(f"{failed.step:<13} {'FAILED':<8} {failed.cause}")
        elif dry_run and failed is None:
            click.echo("dry run: nothing was changed")
        if run_with:
            click.echo(f"run-eval, test and replay do not remember these options: give them "
                       f"`{' '.join(shlex.quote(a) for a in run_with)}` too (or set "
                       f"{', '.join(_ENVVARS[a] for a in run_with if a in _ENVVARS)})")
    if failed is not None:
        if as_json or quiet:
            fail(f"prepare: {failed}")
        if isinstance(failed, StepFailedError):
            before = ", ".join(f"{s.name} ({s.status})" for s in failed.done) or "none"
            fail(f"prepare: step {failed.step} failed (above); steps already finished: {before}")
        fail(f"prepare: {len(missing)} prerequisite(s) missing (listed above); nothing was "
             "downloaded or changed")
    sys.exit(0)


# prepare's tool options that the scoring commands take too, with their variables
_ENVVARS = {"--toolchain": "LEAN_EVAL_TOOLCHAIN", "--bwrap": "LEAN_EVAL_BWRAP",
            "--allow-bwrap-version": "LEAN_EVAL_ALLOW_BWRAP_VERSION"}


def _run_with(ctx: click.Context, settings: prepare.Settings) -> tuple[str, ...]:
    """The tool options prepare used that a scoring command would not see by itself: given as
    a flag or in the config file's [prepare] table, not through the environment (which
    run-eval reads as well). Without them, run-eval looks for the elan install prepare did not
    make, or refuses the bubblewrap prepare accepted."""
    given = {"--toolchain": settings.toolchain, "--bwrap": settings.bwrap,
             "--allow-bwrap-version": settings.allow_bwrap}
    names = {"--toolchain": "toolchain", "--bwrap": "bwrap_path",
             "--allow-bwrap-version": "allow_bwrap"}
    found: list[str] = []
    for flag, value in given.items():
        source = ctx.get_parameter_source(names[flag])
        if value is not None and source is not ParameterSource.ENVIRONMENT:
            found += [flag, str(value)]
    return tuple(found)


COMMANDS = (start_problem_command, validate_catalog_command, validate_submission_command,
            prepare_command)
