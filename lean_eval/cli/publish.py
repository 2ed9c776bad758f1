"""Commands that publish results and check published ones: export-results and verify."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, cast

import click

from lean_eval.cli.exits import EXIT_FAULT
from lean_eval.cli.group import Console

if TYPE_CHECKING:
    from lean_eval.outputs.export_metadata import MetadataFormat

# outputs.export_metadata.METADATA_FORMATS, not imported before a command runs (the test of
# the binding checks that the two agree)
METADATA_FORMATS = ("auto", "lean-eval", "pipeline")


@click.command("export-results")
@click.argument("out_dir", metavar="OUT",
                type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--metadata", "metadata", required=True, metavar="FILE",
              type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="JSON (or TOML, named *.toml) object keyed by submission id: user, "
                   "declared_model, intake, submission and optionally production_metadata; "
                   "or the submission pipeline's metadata.json (--metadata-format).")
@click.option("--results-dir", required=True, metavar="DIR",
              type=click.Path(path_type=Path, file_okay=False),
              help="The results store: one <lowercased user>.json per submitter.")
@click.option("--metadata-format", type=click.Choice(METADATA_FORMATS), default="auto",
              show_default=True,
              help="lean-eval: the object above; pipeline: the public submission pipeline's "
                   "own metadata.json of the run's one submission; auto: pipeline when the "
                   "file has a top-level submitted_by.")
@click.option("--expected-problem-id", metavar="ID",
              help="The problem the intake accepted: any other accepted pair refuses the "
                   "export (with --expected-statement-revision).")
@click.option("--expected-statement-revision", type=click.IntRange(min=1), metavar="N",
              help="The statement revision the intake accepted (with --expected-problem-id).")
@click.option("--json", "as_json", is_flag=True, help="Print what was exported as JSON.")
@click.option("-v", "--verbose", count=True, help="Also each result already in the store.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
def export_results(out_dir: Path, metadata: Path, results_dir: Path, metadata_format: str,
                   expected_problem_id: str | None, expected_statement_revision: int | None,
                   as_json: bool, verbose: int, quiet: bool) -> NoReturn:
    """Append the accepted pairs of OUT to the leaderboard results store (schema version 2).

    A result already in the store is left exactly as it is. Refuses (exit 2, writing nothing)
    metadata with a missing or invalid field, an accepted submission it has no entry for, a
    store file that does not validate, and, bound to an intake (--expected-problem-id and
    --expected-statement-revision, or a server intake's pipeline metadata), an accepted pair
    of another problem or revision, naming each.
    """
    from lean_eval.errors import UsageError
    from lean_eval.outputs import export
    from lean_eval.outputs.export_metadata import Expected

    if (expected_problem_id is None) != (expected_statement_revision is None):
        raise UsageError("--expected-problem-id and --expected-statement-revision go together "
                         "(the problem and statement revision the intake accepted)")
    expected = None
    if expected_problem_id is not None and expected_statement_revision is not None:
        expected = Expected(expected_problem_id, expected_statement_revision,
                            "the intake binding (--expected-problem-id, "
                            "--expected-statement-revision)")
    done = export.export(out_dir, metadata, results_dir, on_wait=lambda text: click.echo(
        f"lean-eval: export-results: {text}", err=True), expected=expected,
        metadata_format=cast("MetadataFormat", metadata_format))
    if as_json:
        click.echo(export.export_report(results_dir, done).model_dump_json(indent=2))
    elif not quiet:
        out = Console()
        lines = [("added", a) for a in done.added] + [("kept ", k) for k in done.kept
                                                      if verbose]
        for what, item in lines:
            out.print(f"{what} {item.result_id}  {item.submission}/{item.problem} -> "
                      f"{item.file}", markup=False, highlight=False, soft_wrap=True)
        out.print(f"{len(done.added)} new result(s), {len(done.kept)} already in the store (left "
                  f"as they are); {len(done.written)} file(s) written", highlight=False)
    sys.exit(0)


@click.command("verify")
@click.argument("out_dir", metavar="OUT",
                type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--key", "key_file", required=True, metavar="PUB",
              type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="Ed25519 public key in PEM (openssl pkey -in KEY -pubout).")
@click.option("--submission", "submissions", multiple=True, metavar="PATH",
              type=click.Path(path_type=Path, exists=False),
              help="Also check that this submission is the one scored (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the verification as JSON.")
@click.option("-v", "--verbose", count=True, help="Also name every verdict file checked.")
@click.option("-q", "--quiet", is_flag=True, help="Print only the failures.")
def verify_command(out_dir: Path, key_file: Path, submissions: tuple[Path, ...],
                   as_json: bool, verbose: int, quiet: bool) -> NoReturn:
    """Check offline that every verdict in OUT is signed by PUB and says what was signed.

    Names every failure (a verdict without envelope, a signature that does not verify, a
    verdict file or submission whose digest differs, a predicate field that disagrees) and
    exits 1 on any; 0 when all hold.
    """
    from lean_eval.outputs import signing, verify

    result = verify.verify(out_dir, signing.load_public_key(key_file), submissions)
    if as_json:
        click.echo(result.model_dump_json(indent=2))
    else:
        out = Console(quiet=quiet and result.ok)
        for name in result.verdict_files if verbose and not quiet else ():
            out.print(f"checked {name}", markup=False, highlight=False, soft_wrap=True)
        for failure in result.failures:
            out.print(f"FAILED {failure.path}: {failure.problem}", markup=False,
                      highlight=False, soft_wrap=True)
        if result.ok:
            out.print(f"verified {out_dir}: {len(result.verdict_files)} verdict(s), "
                      f"{result.envelopes_verified} envelope(s) signed by "
                      f"{result.key_fingerprint}"
                      + (f"; {result.submissions} submission(s) match" if submissions else ""),
                      markup=False, highlight=False, soft_wrap=True)
        else:
            click.echo(f"lean-eval: verify: {len(result.failures)} failure(s) in {out_dir} "
                       f"({len(result.verdict_files)} verdict(s) checked)", err=True)
    sys.exit(0 if result.ok else EXIT_FAULT)


COMMANDS = (export_results, verify_command)
