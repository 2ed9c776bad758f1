"""The report document: an output directory as ``report --format json`` gives it, built by
``outputs.report.run_report`` and rendered by each format."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, NamedTuple

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
    visible: bool | None  # the manifest's ``visible``; None: the catalog could not be read again
    attempted: bool  # some pair of the problem was scored (not unchanged, not left unscored)
    succeeded: bool  # some pair of the problem was accepted
    exit_code: int | None  # 0 succeeded, 1 attempted and not succeeded, None not attempted
    mismatches: tuple[str, ...]  # "<submission>: <verdict> (<reason>)" of each other pair


class RunEvalDocument(OpenRecord):
    """What ``run-eval --json`` prints: the public pipeline's counts of ``problems`` (whose
    summary comment reads them), ``problems`` as objects (``ProblemOutcome``); every other key
    is ``summary.json``'s (``summary.schema.json``), ``pairs`` among them."""

    schema_version: Literal[4] = 4  # 4: the counts and each problem's visible
    summary_schema_version: int
    total_problems: int  # len(problems)
    attempted_problems: int  # problems whose attempted is true
    succeeded_problems: int  # problems whose succeeded is true (each one attempted)
    attempted_hidden_problems: int  # the same, of the problems whose visible is false
    succeeded_hidden_problems: int
    attempted_visible_problems: int  # of the problems whose visible is true
    succeeded_visible_problems: int
    problems: tuple[ProblemOutcome, ...]


class ProblemInfo(NamedTuple):
    """What the run's catalog says of a problem, for ``run_eval_document``."""

    title: str
    visible: bool


def run_eval_document(summary: Summary, catalog: Mapping[str, ProblemInfo]) -> RunEvalDocument:
    """``summary`` with ``problems`` as ``ProblemOutcome`` objects and their counts; ``catalog``:
    each problem's title and visibility by id (an absent id: its id, visibility unknown)."""
    by_problem: dict[str, list[PairSummary]] = {}
    for pair in summary.every_pair():
        by_problem.setdefault(pair.problem, []).append(pair)
    outcomes = []
    for pid in summary.problems:
        pairs = by_problem.get(pid, [])
        scored = [p for p in pairs if p.verdict != "unchanged"]
        succeeded = any(p.verdict == "accepted" for p in scored)
        info = catalog.get(pid)
        outcomes.append(ProblemOutcome(
            id=pid, title=info.title if info else pid, visible=info.visible if info else None,
            attempted=bool(scored), succeeded=succeeded,
            exit_code=0 if succeeded else 1 if scored else None,
            mismatches=tuple(f"{p.submission}: {p.verdict} ({p.reason})" for p in pairs
                             if p.verdict != "accepted")))

    def count(key: str, visible: bool | None = None) -> int:
        return sum(1 for o in outcomes
                   if getattr(o, key) and (visible is None or o.visible is visible))

    fields = summary.model_dump(mode="json")
    return RunEvalDocument.model_validate({
        **fields, "schema_version": 4, "summary_schema_version": fields["schema_version"],
        "total_problems": len(outcomes), "attempted_problems": count("attempted"),
        "succeeded_problems": count("succeeded"),
        "attempted_hidden_problems": count("attempted", False),
        "succeeded_hidden_problems": count("succeeded", False),
        "attempted_visible_problems": count("attempted", True),
        "succeeded_visible_problems": count("succeeded", True),
        "problems": [o.model_dump(mode="json") for o in outcomes]})


class ErrorDocument(Record):
    """What a command run with ``--json`` prints on stdout when it fails before doing its work
    (exit 2, a setup failure): the public pipeline's error shape, ``status`` and ``message``,
    and ours."""

    schema_version: Literal[1] = 1
    status: Literal["error"] = "error"
    message: str  # the same words as the ``lean-eval: error:`` line on stderr
    error: str  # what kind of failure: usage, catalog, toolchain, probes_failed, ...
    exit_code: int  # the code the process returns (2)
