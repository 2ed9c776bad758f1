"""``lean-eval audit-results --json``: each record of a results store against the statement
the benchmark's source carries now under the record's revision (docs/auditing.md)."""

from __future__ import annotations

from typing import Literal

from lean_eval.records.base import Record

AuditStatus = Literal["ok", "stale", "unknown_commit", "unknown_problem"]
STATUSES: tuple[AuditStatus, ...] = ("ok", "stale", "unknown_commit", "unknown_problem")


class AuditedRecord(Record):
    """One store record and what the source's history says of it."""

    result_id: str
    user: str
    problem_id: str
    statement_revision: int
    benchmark_commit: str
    status: AuditStatus
    # The problem's revision in the source now (None: not there); when it is not the record's,
    # the statement was revised with a new revision and the record stands for the old one.
    revision_now: int | None = None
    # The trusted statement's digest at benchmark_commit and now (None: not read).
    digest_at_commit: str | None = None
    digest_now: str | None = None
    detail: str  # one sentence for people


class AuditReport(Record):
    """Every record of the store, in the store's order (files by name, records in file
    order), and the commit of the source it was audited against."""

    schema_version: Literal[1] = 1
    results_dir: str
    upstream: str
    upstream_commit: str
    counts: dict[AuditStatus, int]
    stale_problems: tuple[str, ...]  # the problems of the stale records, sorted
    records: tuple[AuditedRecord, ...]
