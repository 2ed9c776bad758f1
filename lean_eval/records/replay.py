"""The replay report ``replay.json`` (design §5.6): built by ``outputs.replay``, read and shown
by ``outputs.replay_report``."""

from __future__ import annotations

from typing import Literal

from lean_eval.records.base import Record
from lean_eval.records.verdict import Checker, Execution, Outcome, Reason

Status = Literal["reproduced", "changed", "kernel_disagreement", "not_scored"]
STATUSES: tuple[Status, ...] = ("reproduced", "changed", "kernel_disagreement", "not_scored")


class Drift(Record):
    """One pin whose value in the record differs from the replay's."""

    pin: str  # submission_digest, benchmark_commit, trusted_files, toolchain_name, ...
    subject: str  # "run", a submission id, or "<submission>/<problem>"
    recorded: str | None
    current: str | None

    def describe(self) -> str:
        """``benchmark_commit of run: recorded 'ab..', now 'cd..'`` (plain text)."""
        return (f"{self.pin} of {self.subject}: recorded {self.recorded!r}, "
                f"now {self.current!r}")


class Judgement(Record):
    """A verdict as the replay compares it."""

    verdict: Outcome
    execution: Execution
    reason: Reason
    checkers: tuple[Checker, ...] = ()
    checker_lines: tuple[str, ...] = ()  # each checker's comparator line, in Lake's order


class ReplayPair(Record):
    """One recorded pair, its recorded and its new judgement."""

    submission: str
    problem: str
    status: Status
    recorded: Judgement
    new: Judgement | None  # None: not_scored
    # kernel_disagreement: the line of each checker that rejected what the record accepted
    disagreement: tuple[str, ...] = ()
    path: str | None = None  # the new verdict, relative to the replay's --out


class ReplayReport(Record):
    """A replay of a run-eval or merge output (``replay.json``)."""

    schema_version: Literal[1] = 1
    record: str  # the output directory replayed
    out: str | None  # where the new verdicts are (None: a temporary directory, removed)
    started_at: str
    finished_at: str
    paranoid: bool
    allow_drift: bool
    drift: tuple[Drift, ...]  # non-empty only when --allow-drift went on regardless
    counts: dict[str, int]  # by status; kernel_disagreement is the audit's count
    pairs: tuple[ReplayPair, ...]
    exit_code: int  # 0 every pair reproduced, 1 any did not (128+n: interrupted)
