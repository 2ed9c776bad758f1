"""The replay command: score a recorded output again and compare (``--paranoid``: kernel audit)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

import click

from lean_eval.cli.exits import Worded, Wording
from lean_eval.cli.group import Console
from lean_eval.cli.options import (
    ByteSize,
    common_options,
    intake_limit_options,
    intake_limits,
    verbose_help,
)
from lean_eval.cli.steps import check_work_dir, load, preflight, tools_for


@verbose_help("Also every check of every preflight probe (a failing one's always).")
@click.command("replay", cls=Worded, wording=Wording(fault="; the replay stopped"))
@click.argument("record_dir", metavar="OUT",
                type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.argument("submissions", nargs=-1, required=True, metavar="SUBMISSION...",
                type=click.Path(path_type=Path, exists=False))
@click.option("--out", "out_dir", type=click.Path(path_type=Path, file_okay=False),
              help="Write the new verdicts, their summary.json and replay.json here (default: "
                   "a temporary directory, removed; only the report is printed).")
@click.option("--allow-drift", is_flag=True,
              help="Replay even when pins differ from the record (each is named in the "
                   "report).")
@click.option("--paranoid", is_flag=True,
              help="Audit: run `lake comparator --paranoid` (every bundled checker); a recorded "
                   "`accepted` that any checker rejects is flagged kernel_disagreement.")
@click.option("--benchmark-rev", default="HEAD", show_default=True,
              help="Git revision of the benchmark to replay against (its commit is a pin).")
@click.option("--work-dir", type=click.Path(path_type=Path, file_okay=False),
              help="Where the private scoring directories go (default: the system temp dir).")
@click.option("--keep-work", is_flag=True, help="Keep scoring workspaces for inspection.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Pairs scored at once (default as for run-eval).")
@click.option("--timeout", type=click.FloatRange(min=1), default=None,
              help="Deadline per pair (default: run-eval's; differing from the record: drift).")
@click.option("--memory-limit", type=ByteSize(minimum=64 << 20), default=None,
              help="Memory of one pair's tree (default: run-eval's; differing: drift).")
@click.option("--max-processes", type=click.IntRange(min=1), default=None,
              help="Processes of one pair's tree (default: run-eval's; differing: drift).")
@click.option("--disk-limit", type=ByteSize(minimum=0), default=None,
              help="Bytes of one pair's scoring directories (0: none; default: run-eval's; "
                   "differing: drift).")
@click.option("--disk-files", type=click.IntRange(min=0), default=None,
              help="Entries of one pair's scoring directories (0: none; default: run-eval's; "
                   "differing: drift).")
@click.option("--max-written-file-bytes", type=ByteSize(minimum=1 << 20), default=None,
              help="Largest file a build may write (default: run-eval's; differing: drift).")
@intake_limit_options
@click.option("--skip-probes", is_flag=True,
              help="Skip the preflight probes (never because the record did; differing from "
                   "the record: drift).")
@common_options
def replay_command(record_dir: Path, submissions: tuple[Path, ...], out_dir: Path | None,
                   allow_drift: bool, paranoid: bool, benchmark_rev: str,
                   work_dir: Path | None, keep_work: bool, jobs: int | None,
                   timeout: float | None, memory_limit: int | None, max_processes: int | None,
                   disk_limit: int | None, disk_files: int | None,
                   max_written_file_bytes: int | None, max_file_bytes: int,
                   max_total_bytes: int, max_files: int, max_depth: int,
                   max_archive_bytes: int, intake_timeout: float, skip_probes: bool,
                   benchmark: Path | None, toolchain: Path | None,
                   bwrap_path: str | None, allow_bwrap: str | None, as_json: bool,
                   verbose: int, quiet: bool) -> NoReturn:
    """Score the pairs recorded in OUT (a run-eval or merge output) again from SUBMISSION...
    and compare each new verdict and reason with the record.

    Scores with run-eval's defaults and the options given here, never with the record's, and
    runs the probes unless --skip-probes. Refuses (exit 2, naming each) when a pin differs from
    the record: a submission's digest, the benchmark commit, trusted-file digests, toolchain,
    bubblewrap digest, harness version, a verdict-changing option (--timeout, --memory-limit,
    --max-processes, the disk, written-file and intake limits, --skip-probes), or a recorded
    verdict whose options, limits or resume key disagree with the record's options;
    --allow-drift replays anyway. Exits 0 when
    every pair reproduced, 1 when any verdict or reason changed (or, under --paranoid, a
    checker rejected what the record accepted: kernel_disagreement).
    """
    from lean_eval.outputs import replay, replay_report

    err = Console(stderr=True)
    env = dict(os.environ)
    given: dict[str, object] = {
        "timeout": timeout, "memory_limit": memory_limit, "max_processes": max_processes,
        "max_written_file_bytes": max_written_file_bytes}
    overrides = {k: v for k, v in given.items() if v is not None}
    # 0 turns a disk limit off, as for run-eval; the intake limits' defaults are run-eval's own
    overrides.update({k: v or None for k, v in (("disk_limit", disk_limit),
                                                 ("disk_files", disk_files)) if v is not None})
    overrides["limits"] = intake_limits(max_file_bytes, max_total_bytes, max_files, max_depth,
                                        max_archive_bytes, intake_timeout)
    settings = replay.Settings(out_dir=out_dir, work_dir=work_dir, keep_work=keep_work,
                               jobs=jobs, paranoid=paranoid, skip_probes=skip_probes,
                               overrides=overrides)
    check_work_dir(work_dir)
    record = replay.load_record(record_dir)
    cat = load(benchmark, benchmark_rev, quiet=quiet)
    writable = [*([out_dir] if out_dir else []), Path(tempfile.gettempdir()),
                *([work_dir] if work_dir else [])]
    tools = tools_for(cat, toolchain, bwrap_path, allow_bwrap, env, writable)
    plan = replay.plan(record, submissions, cat, tools, settings)
    replay.check(plan, allow_drift)  # before the probes: a refusal costs nothing
    probed = preflight(tools, env, work_dir, plan.skip_probes, quiet, verbose)
    from lean_eval.cli import progress  # rich's progress display: off --help's path

    with progress.Display(err, quiet) as display:
        result = replay.replay(plan, tools, probed, env, settings, allow_drift,
                               on_progress=display.update)
    if as_json:
        click.echo(result.model_dump_json(indent=2))
    elif not quiet:
        replay_report.print_replay(result, Console())
    sys.exit(result.exit_code)


COMMANDS = (replay_command,)
