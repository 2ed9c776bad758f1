"""``export-results --metadata``: ours, keyed by submission id, or the public submission
pipeline's own ``metadata.json`` of one submission; and the intake an export is bound to
(design §5.5 "Publishing"; docs/publishing.md, "The submission pipeline's `metadata.json`", has
the field table).

Invariants (tests/outputs/test_export_binding.py):
- A pipeline document describes one submission, so it applies only to a run of exactly one
  submission; a run of several is refused naming them (no submission is guessed).
- Each of its fields maps onto one field of a :class:`MetadataEntry` (``FIELDS``), and a
  problem with a value is named by the pipeline's field name, never ours.
- ``publication_choice`` concerns a private source: ``withheld`` is ``private``; ``scheduled``
  is ``planned``, dated as the pipeline's policy schedules the release (``EMBARGO_MONTHS`` UTC
  calendar months after acceptance, the run's ``finished_at``); for a public source it records
  no publication status (``published`` needs a date the document does not hold).
- A server document's ``problem_id`` and ``statement_revision`` (what its intake accepted)
  bind the export (``Expected``) as ``--expected-problem-id`` and
  ``--expected-statement-revision`` do; both given and different, the export is refused.
"""

from __future__ import annotations

import calendar
from collections.abc import Callable, Sequence
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import ValidationError

from lean_eval.errors import CatalogError, ExportRefusedError
from lean_eval.files.decoding import strict_json, toml_table
from lean_eval.outputs.report import run_report
from lean_eval.records.results_store import MetadataEntry, PipelineMetadata

_TAGS = frozenset({"issue", "server"})  # discriminator tags pydantic puts in error locations
MetadataFormat = Literal["auto", "lean-eval", "pipeline"]
METADATA_FORMATS: tuple[MetadataFormat, ...] = ("auto", "lean-eval", "pipeline")
EMBARGO_MONTHS = 2
# Our field (as a validation error names it) -> the pipeline's field it comes from.
FIELDS = {"user": "submitted_by", "declared_model": "model",
          "submission.kind": "submission_kind", "submission.repo": "submission_repo",
          "submission.ref": "submission_ref", "submission.public": "submission_public",
          "intake.issue_number": "issue_number", "intake.submission_id": "submission_id"}


def is_pipeline(raw: dict[str, Any], fmt: MetadataFormat) -> bool:
    """Whether ``raw`` is read as a pipeline document: asked for, or (``auto``) shaped like
    one (a string ``submitted_by`` at the top; ours is keyed by submission id, objects only)."""
    return fmt == "pipeline" or (fmt == "auto" and isinstance(raw.get("submitted_by"), str))


def parse(raw: dict[str, Any]) -> tuple[PipelineMetadata | None, list[str]]:
    """The document, or what is wrong with it (each problem naming the pipeline's field)."""
    try:
        return PipelineMetadata.model_validate(raw), []
    except ValidationError as exc:
        return None, [f"field {'.'.join(str(p) for p in e['loc']) or '(the document)'}: "
                      f"{e['msg']}" for e in exc.errors()]


def pipeline_field(ours: str, doc: PipelineMetadata) -> str:
    """The pipeline's name for our field ``ours`` (dotted, as a validation error names it)."""
    if ours.startswith("production_metadata."):
        rest = ours.split(".", 1)[1]
        if doc.submission_id is None:  # the issue form holds these at its top level
            return rest
        return "publication_choice" if rest.startswith("solution_publication") else ours
    return FIELDS.get(ours, ours)


def plus_months(day: date, months: int) -> date:
    """``day`` moved ``months`` calendar months on, clamped to the last day of that month."""
    index = day.month - 1 + months
    year, month = day.year + index // 12, index % 12 + 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def _publication(doc: PipelineMetadata, accepted: date) -> dict[str, str]:
    if doc.submission_id is None:  # the issue form: its own three fields, as declared
        return {key: value for key, value in (
            ("solution_publication_status", doc.solution_publication_status),
            ("solution_publication_date", doc.solution_publication_date)) if value is not None}
    if doc.publication_choice is None or doc.submission_public:
        return {}
    if doc.publication_choice == "withheld":
        return {"solution_publication_status": "private"}
    return {"solution_publication_status": "planned",
            "solution_publication_date": plus_months(accepted, EMBARGO_MONTHS).isoformat()}


def pipeline_entry(doc: PipelineMetadata, accepted: date) -> dict[str, Any]:
    """The :class:`MetadataEntry` input ``doc`` says, for a run accepted on ``accepted``."""
    production = dict(doc.production_metadata or {})
    description = doc.production_description
    if description is not None and description.strip():  # the pipeline drops a blank one
        production["production_description"] = description
    production.update(_publication(doc, accepted))
    intake = ({"kind": "issue", "issue_number": doc.issue_number} if doc.submission_id is None
              else {"kind": "server", "submission_id": doc.submission_id})
    return {"user": doc.submitted_by, "declared_model": doc.model, "intake": intake,
            "submission": {"kind": doc.submission_kind, "repo": doc.submission_repo,
                           "ref": doc.submission_ref, "public": doc.submission_public},
            "production_metadata": production}


def pipeline_expected(doc: PipelineMetadata) -> tuple[str, int] | None:
    """The problem and statement revision a server intake accepted, or None (issue form)."""
    if doc.problem_id is None or doc.statement_revision is None:
        return None
    return doc.problem_id, doc.statement_revision


class Expected(NamedTuple):
    """The one pair an intake accepted (problem, statement revision): an export of any other
    accepted pair is refused, naming both."""

    problem_id: str
    statement_revision: int
    said_by: str  # the options, or the pipeline's metadata file


class Metadata(NamedTuple):
    entries: dict[str, MetadataEntry]  # valid entries by submission id
    invalid: dict[str, list[str]]  # each invalid entry's problems
    expected: Expected | None = None  # what a server intake's metadata binds the export to


def where(loc: Sequence[int | str]) -> str:
    parts = [str(p) for i, p in enumerate(loc) if not (i and loc[i - 1] == "intake"
                                                        and p in _TAGS)]
    return ".".join(parts) or "(the entry itself)"


def problems(exc: ValidationError, rename: Callable[[str], str] = str) -> list[str]:
    return [f"field {rename(where(e['loc']))}: {e['msg']}" for e in exc.errors()]


def _decode(data: bytes, path: Path) -> Any:
    try:
        if path.name.lower().endswith(".toml"):
            return toml_table(data, str(path))
        return strict_json(data, str(path))
    except CatalogError as exc:
        raise ExportRefusedError(f"{exc}; nothing was written") from exc


def read_metadata(path: Path, run: run_report.Run,
                  fmt: MetadataFormat = "auto") -> Metadata:
    """``--metadata`` for ``run``: ours (keyed by submission id) or, asked for or detected,
    the submission pipeline's metadata.json of the run's one submission."""
    try:
        raw = _decode(path.read_bytes(), path)
    except OSError as exc:
        raise ExportRefusedError(f"--metadata {path}: {exc.strerror or exc}") from exc
    if not isinstance(raw, dict):
        raise ExportRefusedError(f"--metadata {path}: expected an object keyed by submission "
                                 "id; nothing was written")
    if is_pipeline(raw, fmt):
        return _pipeline(path, raw, run)
    entries: dict[str, MetadataEntry] = {}
    invalid: dict[str, list[str]] = {}
    for sid, value in raw.items():
        try:
            entries[sid] = MetadataEntry.model_validate(value)
        except ValidationError as exc:  # noqa: PERF203 - every entry's problems are named
            invalid[sid] = [f"--metadata {path}: submission {sid!r}: {p}"
                            for p in problems(exc)]
    return Metadata(entries, invalid)


def _pipeline(path: Path, raw: dict[str, Any], run: run_report.Run) -> Metadata:
    said = f"--metadata {path} (the submission pipeline's metadata.json)"
    doc, wrong = parse(raw)
    if doc is None:
        raise ExportRefusedError("\n".join([*(f"{said}: {p}" for p in wrong),
                                            "nothing was written"]))
    pair = pipeline_expected(doc)
    bound = Expected(*pair, said) if pair else None
    sids = sorted({p.submission for p in run.written.every_pair()})
    if len(sids) > 1:
        raise ExportRefusedError(f"{said} describes one submission, but the run holds "
                                 f"{len(sids)}: {', '.join(sids)}; export a run of that "
                                 "submission alone; nothing was written")
    try:
        when = datetime.fromisoformat(run.written.finished_at)
        accepted: date | None = (when if when.tzinfo else when.replace(tzinfo=timezone.utc)
                                 ).astimezone(timezone.utc).date()  # the UTC day, as accepted_at
    except ValueError:
        accepted = None  # the export names the bad time
    if not sids or accepted is None:
        return Metadata({}, {}, bound)
    try:
        entry = MetadataEntry.model_validate(pipeline_entry(doc, accepted))
    except ValidationError as exc:
        return Metadata({}, {sids[0]: [f"{said}: {p}" for p in problems(
            exc, lambda field: pipeline_field(field, doc))]}, bound)
    return Metadata({sids[0]: entry}, {}, bound)


def binding(given: Expected | None, said: Expected | None) -> Expected | None:
    if given is not None and said is not None and given[:2] != said[:2]:
        raise ExportRefusedError(
            f"{given.said_by} expects problem {given.problem_id} at statement revision "
            f"{given.statement_revision}, but {said.said_by} says its intake accepted problem "
            f"{said.problem_id} at statement revision {said.statement_revision}; nothing was "
            "written")
    return given or said
