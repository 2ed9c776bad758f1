"""Commands over finished output directories: merge (shards) and report."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import click

from lean_eval.cli.deferred import run_report
from lean_eval.cli.group import Console
from lean_eval.cli.options import FAIL_ON_KINDS, REPORT_FORMATS, fail_on_option, failing_exit
from lean_eval.errors import UsageError
from lean_eval.outputs.report.names import Format
from lean_eval.records import out_layout

# FAIL_ON_KINDS is read from here by tests/outputs/test_report_formats.py (it names the kinds).
__all__ = ["COMMANDS", "FAIL_ON_KINDS"]

# --- merge and report (distribution across machines; design §5.5 "Shards", "Reports") -------------


@click.command("merge")
@click.argument("shard_dirs", nargs=-1, required=True, metavar="OUT...",
                type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--out", "out_dir", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="New output directory (absent or empty) for the merged verdicts and summary.")
@click.option("--json", "as_json", is_flag=True, help="Print the merged summary as JSON.")
@click.option("-v", "--verbose", count=True, help="Also each shard output and its pairs.")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors and missing pairs.")
def merge_command(shard_dirs: tuple[Path, ...], out_dir: Path, as_json: bool, verbose: int,
                  quiet: bool) -> NoReturn:
    """Combine the --out directories of `run-eval --shard K/N` runs into one output directory.

    Refuses (exit 2, writing nothing) shards of different batches, identities or options, a
    pair scored twice, and anything a shard does not really hold (an id intake would refuse, a
    path off its place, a link or special file, a pair outside its shard). Exits 1 after
    merging when a shard is missing or some pairs were scored by no shard (listed here and in
    the merged summary.json) or a pair ended in an infrastructure failure.
    """
    from lean_eval.outputs import merge, shard_input

    result = merge.merge(shard_dirs, out_dir)  # a fault: the output could not be written
    summary = result.summary
    if verbose and not quiet and not as_json:
        for shard_dir in shard_dirs:
            part = shard_input.load_shard(shard_dir).summary
            which = f"shard {part.shard.k}/{part.shard.n}" if part.shard else "unsharded"
            click.echo(f"{shard_dir}: {which}, {len(part.pairs)} pair(s)")
    if as_json:
        click.echo(summary.model_dump_json(indent=2))
    elif not quiet:
        counts = ", ".join(f"{n} {name}" for name, n in summary.counts.items() if n)
        click.echo(f"merged {len(shard_dirs)} shard output(s) into {result.out_dir}: "
                   f"{len(summary.every_pair())} pair(s) ({counts or 'none'})")
    for k in result.missing_shards:
        click.echo(f"lean-eval: shard {k}/{result.shard_count} is missing: none of the given "
                   "outputs scored it, so its pairs are not in the merge", err=True)
    if result.missing:
        click.echo(f"lean-eval: {len(result.missing)} pair(s) were scored by no shard:",
                   err=True)
        for sid, pid in result.missing:
            click.echo(f"  {sid}/{pid}", err=True)
    sys.exit(summary.exit_code)


@click.command("report")
@click.argument("out_dir", metavar="OUT",
                type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--format", "fmt",
              type=click.Choice(REPORT_FORMATS),
              default="table", show_default=True,
              help="table: for people; markdown: a matrix, then failures, then accepted pairs, "
                   "fits $GITHUB_STEP_SUMMARY; junit: JUnit XML for CI test views; json: one "
                   "document with every pair; csv: a row per pair; html: one self-contained "
                   "page (matrix coloured by verdict, filter, each pair's details).")
@click.option("--output", type=click.Path(path_type=Path, dir_okay=False),
              help="Write to FILE (atomically) instead of stdout; its directory must exist.")
@fail_on_option
@click.option("-q", "--quiet", is_flag=True,
              help="Print nothing but errors (--output is still written; with --fail-on, "
                   "the gate alone).")
def report_command(out_dir: Path, fmt: str, output: Path | None,
                   fail_on: frozenset[str], quiet: bool) -> NoReturn:
    """Render the output directory OUT of `run-eval`, `merge` or `replay` for people and CI
    systems (a replay's: recorded and new verdict per pair, kernel disagreements, drift).

    Pairs no run scored, and submissions without a problem directory (with intake's hint), are
    shown in every format; OUT is checked as `merge` checks a shard. Exits 0 after rendering,
    or 1 with --fail-on when a pair has one of its verdicts.
    """
    from typing import cast

    from lean_eval.outputs import replay_report
    from lean_eval.outputs.report import console, formats

    if output is not None and not output.absolute().parent.is_dir():
        raise UsageError(f"--output {output}: the directory {output.absolute().parent} does "
                         "not exist; create it first (report creates no directories)")

    if (out_dir / out_layout.REPLAY).is_file():  # a replay's --out: the replay
        replayed = replay_report.load(out_dir)
        if output is None and quiet:
            pass
        elif fmt == "table" and output is None:
            replay_report.print_replay(replayed, Console())
        elif output is None:
            click.echo(replay_report.render(replayed, fmt), nl=False)
        else:
            _write(output, replay_report.render(replayed, fmt))
        sys.exit(0)
    run = run_report.load_run(out_dir)
    if output is None and quiet:
        pass
    elif fmt == "table" and output is None:
        console.print_summary(run.summary, Console(), hints=True,
                              disagreements=run.disagreements, recorded=True)
    else:
        text = formats.render(run, cast("Format", fmt),
                              output.absolute().parent if output else Path.cwd())
        if output is None:
            click.echo(text, nl=False)
        else:
            _write(output, text)
    sys.exit(failing_exit(run.summary, fail_on, 0))


def _write(output: Path, text: str) -> None:
    """``--output``, written atomically; a file that cannot be written is a bad argument."""
    from lean_eval.files.atomic import write_text_atomic

    try:
        write_text_atomic(output, text)
    except OSError as exc:
        raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None


COMMANDS = (merge_command, report_command)
