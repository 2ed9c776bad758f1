"""The report document: an output directory as ``report --format json`` gives it, built by
``outputs.report.run_report`` and rendered by each format."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from lean_eval.records.base import OpenRecord, Record
from lean_eval.records.verdict import PairRef, PairSummary, Summary


class PairReport(Record):
    """One pair as ``report --format json`` gives it."""

    submission: str
    problem: str
    verdict: str
    execution: str
    reason: str
    message: str
    wall_seconds: float | None
    verdict_path: str
    log_path: str | None


class SubmissionReport(Record):
    """One submission's pairs by outcome."""

    id: str
    solved: int
    rejected: int
    invalid: int
    unchanged: int
    error: int
    pairs: int
    rejection: str | None
    hint: str | None = None  # no problem directory was found: what the submitter should change


class RunReport(Record):
    """An output directory (one run or a merge) as ``report --format json`` gives it."""

    schema_version: Literal[2] = 2  # 2: disagreements
    started_at: str
    finished_at: str
    exit_code: int
    counts: dict[str, int]
    submissions: tuple[SubmissionReport, ...]
    pairs: tuple[PairReport, ...]
    not_scored: tuple[PairRef, ...] = ()  # pairs no run scored (none has a verdict)
    missing_shards: tuple[str, ...] = ()  # merge: shards "K/N" none of its outputs scored
    # "<submission>/<problem>: summary.json says ..., the verdict file says ...": each pair whose
    # summary line differs from its verdict file, which every format shows instead
    disagreements: tuple[str, ...] = ()


class ProblemOutcome(Record):
    """One selected problem of a run, in the shape the public pipeline's consumer reads from
    ``run-eval --json`` (``entry["succeeded"] is True`` counts it solved)."""

    id: str
    title: str
    attempted: bool  # some pair of the problem was scored (not unchanged, not left unscored)
    succeeded: bool  # some pair of the problem was accepted
    exit_code: int | None  # 0 succeeded, 1 attempted and not succeeded, None not attempted
    mismatches: tuple[str, ...]  # "<submission>: <verdict> (<reason>)" of each other pair


class RunEvalDocument(OpenRecord):
    """What ``run-eval --json`` prints: ``problems`` as objects (``ProblemOutcome``); every
    other key is ``summary.json``'s (``summary.schema.json``), ``pairs`` among them."""

    schema_version: Literal[3] = 3
    summary_schema_version: int
    problems: tuple[ProblemOutcome, ...]


def run_eval_document(summary: Summary, titles: Mapping[str, str]) -> RunEvalDocument:
    """``summary`` with ``problems`` as ``ProblemOutcome`` objects (titles by problem id)."""
    by_problem: dict[str, list[PairSummary]] = {}
    for pair in summary.every_pair():
        by_problem.setdefault(pair.problem, []).append(pair)
    outcomes = []
    for pid in summary.problems:
        pairs = by_problem.get(pid, [])
        scored = [p for p in pairs if p.verdict != "unchanged"]
        succeeded = any(p.verdict == "accepted" for p in scored)
        outcomes.append(ProblemOutcome(
            id=pid, title=titles.get(pid, pid), attempted=bool(scored), succeeded=succeeded,
            exit_code=0 if succeeded else 1 if scored else None,
            mismatches=tuple(f"{p.submission}: {p.verdict} ({p.reason})" for p in pairs
                             if p.verdict != "accepted")))
    fields = summary.model_dump(mode="json")
    return RunEvalDocument.model_validate({
        **fields, "schema_version": 3, "summary_schema_version": fields["schema_version"],
        "problems": [o.model_dump(mode="json") for o in outcomes]})
