"""The report document: an output directory as ``report --format json`` gives it, built by
``outputs.report.run_report`` and rendered by each format."""

from __future__ import annotations

from typing import Literal

from lean_eval.records.base import Record
from lean_eval.records.verdict import PairRef


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
