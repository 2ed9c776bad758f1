"""Commands for maintainers of a catalog: import-catalog, audit-results (and list-problems)."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import NoReturn

import click

from lean_eval.cli.exits import EXIT_FAULT
from lean_eval.cli.options import selection_options
from lean_eval.cli.steps import load_selected

# --- import-catalog ---------------------------------------------------------------------------


@click.command("import-catalog")
@click.argument("src", type=click.Path(path_type=Path, file_okay=False))
@click.argument("dest", type=click.Path(path_type=Path, file_okay=False))
@click.option("--check", is_flag=True,
              help="Write nothing: compare DEST with what importing would write (exit 1 when "
                   "it differs).")
@click.option("--json", "as_json", is_flag=True, help="Print every note as a JSON document.")
@click.option("-v", "--verbose", count=True,
              help="List every file a note concerns (with --check: print the notes too).")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors and warnings.")
@click.option("--upstream-commit", metavar="SHA", default=None,
              help="The upstream commit SRC holds, when SRC is no git checkout (recorded in "
                   "DEST's provenance.json; export-results names it).")
@click.option("--allow-dirty", is_flag=True,
              help="Import a git checkout whose work tree differs from its commit, recording "
                   "the differing paths in provenance.json (and so in every verdict and "
                   "export); without it such a checkout is refused.")
def import_catalog_command(src: Path, dest: Path, check: bool, as_json: bool, verbose: int,
                           quiet: bool, upstream_commit: str | None,
                           allow_dirty: bool) -> NoReturn:
    """Turn SRC, a checkout in the lean-eval source layout (manifests/problems/,
    manifests/sets/, generated/<id>/), into the benchmark layout in DEST, a fresh directory.
    Prints what was changed, dropped or could not be mapped, and warns for each problem whose
    statement changed since the commit that set its revision; exit 2 naming the file when
    SRC cannot be imported faithfully, or naming each uncommitted change of a git checkout
    (see --allow-dirty). Importing twice gives the same bytes."""
    from lean_eval.benchmark import import_dest, importer, toolchain

    plan = importer.plan_import(src, commit=upstream_commit, allow_dirty=allow_dirty)
    stale = import_dest.check_import(plan, dest) if check else []
    if not check:
        import_dest.write_import(plan, dest)
    notes = list(plan.notes)
    release = plan.files["lean-toolchain"].decode("utf-8", errors="replace").strip()
    problem = toolchain.release_incompatibility(release)
    if problem:
        notes.append(importer.ImportNote("warning", "lean-toolchain", problem))
    if as_json:
        click.echo(json.dumps({"schema_version": 1, "dest": str(dest), "check": check,
                               "stale": stale, "files": len(plan.files),
                               "notes": [n._asdict() for n in notes]}, indent=2))
    else:
        grouped: dict[tuple[str, str], list[str]] = defaultdict(list)
        for note in notes:
            grouped[(note.action, note.message)].append(note.path)
        for (action, message), paths in grouped.items():
            err = action == "warning"
            # --check says whether DEST is stale; what an import changes is the import's news
            if (quiet or (check and not verbose)) and not err:
                continue
            named = [str(src) if p == "." else p for p in paths]  # "." is the source itself
            where = named[0] if len(named) == 1 else f"{named[0]} and {len(named) - 1} more"
            click.echo(f"{action}: {where}: {message}", err=err)
            if verbose and len(named) > 1:
                for path in named[1:]:
                    click.echo(f"  {path}", err=err)
        for line in stale:
            click.echo(f"stale: {dest}/{line}", err=True)
        if not quiet or stale:
            problems = sum(1 for rel in plan.files if rel.startswith("problems/"))
            verb = "would write" if check else "wrote"
            click.echo(f"{problems} problem(s), {len(plan.files)} file(s): "
                       + (f"{dest} is stale ({len(stale)} difference(s))" if stale
                          else f"{dest} is up to date" if check else f"{verb} {dest}"),
                       err=bool(stale))
    sys.exit(EXIT_FAULT if stale else 0)


# --- audit-results ----------------------------------------------------------------------------


@click.command("audit-results")
@click.option("--results-dir", required=True, metavar="STORE",
              type=click.Path(path_type=Path, file_okay=False),
              help="The results store: the directory of <user>.json files (the public store's "
                   "results/).")
@click.option("--upstream", required=True, metavar="SRC",
              type=click.Path(path_type=Path, file_okay=False),
              help="A git checkout (or git directory) of the benchmark's source, in the "
                   "lean-eval source layout (manifests/, generated/).")
@click.option("--upstream-rev", default="HEAD", show_default=True, metavar="REV",
              help="The commit of SRC whose statements the records are held against.")
@click.option("--json", "as_json", is_flag=True, help="Print every record's audit as JSON.")
@click.option("-v", "--verbose", count=True, help="List the ok records too.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing when every record is ok.")
def audit_results_command(results_dir: Path, upstream: Path, upstream_rev: str, as_json: bool,
                          verbose: int, quiet: bool) -> NoReturn:
    """Hold every record of a results store against the statement its problem has now, under
    the record's statement_revision, in SRC's history: ok; stale (the statement changed after
    the record's benchmark_commit and the revision was not bumped); unknown_commit (SRC has no
    such commit); unknown_problem (the commit, or SRC now, has no such problem at that
    revision). Lists every record that is not ok; exit 1 when there is one, 2 when STORE or
    SRC cannot be read."""
    from rich.table import Table
    from rich.text import Text

    from lean_eval.benchmark import audit
    from lean_eval.cli.group import Console
    from lean_eval.outputs.report.run_report import printable

    report = audit.audit(results_dir, upstream, upstream_rev)
    clean = report.counts["ok"] == len(report.records)
    if as_json:
        click.echo(report.model_dump_json(indent=2))
        sys.exit(0 if clean else EXIT_FAULT)
    out = Console(quiet=quiet and clean)
    shown = [r for r in report.records if (verbose and not quiet) or r.status != "ok"]
    if shown:
        table = Table(title=f"audit-results: {len(shown)} of {len(report.records)} record(s)")
        for column in ("user", "problem", "rev", "benchmark_commit", "status", "detail"):
            table.add_column(column, overflow="fold")
        for r in shown:
            table.add_row(Text(r.user), Text(printable(r.problem_id)),
                          Text(str(r.statement_revision)), Text(r.benchmark_commit[:12]),
                          Text(r.status, "green" if r.status == "ok" else "red"),
                          Text(printable(r.detail)))
        out.print(table)
    counts = ", ".join(f"{n} {status}" + (f" ({len(report.stale_problems)} problem(s): "
                                          f"{', '.join(report.stale_problems)})"
                                          if status == "stale" and n else "")
                       for status, n in report.counts.items())
    out.print(Text(printable(f"{len(report.records)} record(s) of {results_dir} against "
                             f"{upstream} at {report.upstream_commit[:12]}: {counts}")))
    sys.exit(0 if clean else EXIT_FAULT)


# --- list-problems ----------------------------------------------------------------------------


@click.command("list-problems")
@click.option("--benchmark", type=click.Path(path_type=Path, file_okay=False),
              help="Benchmark checkout (default: the current git checkout).")
@click.option("--benchmark-rev", default="HEAD", show_default=True,
              help="Git revision of the benchmark to list.")
@click.option("--problem", "problems", multiple=True,
              help="Only these problem ids (comma-separated or repeated), as in run-eval.")
@selection_options
@click.option("--json", "as_json", is_flag=True, help="Print the list as a JSON document.")
@click.option("-v", "--verbose", count=True, help="Also each problem's group and module.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors (and --json).")
def list_problems_command(benchmark: Path | None, benchmark_rev: str, problems: tuple[str, ...],
                          set_name: str | None, statuses: tuple[str, ...],
                          tags: tuple[str, ...], as_json: bool, verbose: int,
                          quiet: bool) -> NoReturn:
    """List the benchmark's problems (those --problem/--set/--status/--tag select): id, title,
    status, holes with their kinds, sets and tags."""
    from lean_eval.benchmark import selection

    selected = frozenset(p for item in problems for p in item.split(",") if p) or None
    listing = selection.problem_list(load_selected(benchmark, benchmark_rev, selected,
                                                   set_name, statuses, tags, quiet=True))
    if as_json:
        click.echo(listing.model_dump_json(indent=2))
        sys.exit(0)
    if quiet:
        sys.exit(0)
    for item in listing.problems:
        holes = ", ".join(f"{h.name} ({h.kind})" for h in item.holes)
        click.echo(f"{item.id}  [{item.status}{'' if item.visible else ', hidden'}]  "
                   f"{item.title}")
        click.echo(f"    holes: {holes}")
        click.echo(f"    sets: {', '.join(item.sets) or '-'}    "
                   f"tags: {', '.join(item.tags) or '-'}")
        if verbose:
            click.echo(f"    group: {item.group or '-'}    module: {item.module or '-'}")
    click.echo(f"{len(listing.problems)} problem(s)")
    sys.exit(0)


COMMANDS = (import_catalog_command, audit_results_command, list_problems_command)
