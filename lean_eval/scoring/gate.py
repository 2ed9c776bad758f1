"""The run's exit policy (design §4.5): ``--fail-on`` and ``--exit-zero``, and the pairs the gate
finds, decided from a summary alone so that ``run-eval`` and ``report`` read one rule.

Invariants:
- ``run-eval``'s exit code is decided once, by :func:`exit_code`, before ``summary.json`` is
  written and before the run is signed (``scoring.summary.write_summary``): the code the
  process returns is the one the summary records, and a signed summary is never rewritten.
- A pair no run scored (an unscored pair of a partial merge, of an interrupted run) fails every
  non-empty gate: the gate cannot vouch for a pair that has no verdict.
- ``--exit-zero`` wins over ``--fail-on`` and over ``error`` pairs, as ruff's and flake8's do
  over their findings, but only for a run that finished: an interrupted run keeps 130/143 and
  a harness fault keeps 1 (its verdicts are not all there).
"""

from __future__ import annotations

from typing import NamedTuple

from lean_eval.records.verdict import TALLY, PairRef, SubmissionSummary, Summary


class ExitPolicy(NamedTuple):
    """How a finished run's verdicts become its exit code."""

    fail_on: frozenset[str] = frozenset()  # tally kinds (``run_report.FAIL_ON``'s values)
    exit_zero: bool = False  # every finished run exits 0, whatever its verdicts


VERDICTS_ONLY = ExitPolicy()  # no gate, no --exit-zero: the codes of design §4.5


def not_scored(summary: Summary) -> tuple[PairRef, ...]:
    """Pairs no run scored: a merge's list, and a submission's problems without a pair."""
    scored = {(p.submission, p.problem) for p in summary.every_pair()}
    found = dict.fromkeys((r.submission, r.problem) for r in summary.not_scored_pairs)
    for sub in summary.submissions:
        found.update(dict.fromkeys(key for key in ((sub.id, pid) for pid in sub.problems)
                                   if key not in scored))
    return tuple(PairRef(submission=s, problem=p) for s, p in found if (s, p) not in scored)


def scored_nothing(summary: Summary) -> tuple[SubmissionSummary, ...]:
    """Submissions that scored nothing because they were rejected as a whole or hold no problem
    directory: no problem in the whole batch. A shard's summary lists only its own pairs, so a
    submission whose pairs all fell in other shards is not one of them (its batch says so)."""
    batch = summary.shard.batch if summary.shard is not None else {}
    return tuple(s for s in summary.submissions
                 if not s.problems and not batch.get(s.id, ()))


def failures(summary: Summary, kinds: frozenset[str]) -> tuple[str, ...]:
    """What trips a gate of ``kinds``: pairs of a tally kind in ``kinds``; with ``invalid``, each
    submission that scored nothing because it was rejected as a whole or holds no problem
    directory; with any kind, each pair no run scored (``<sid>/<pid> (not scored)``)."""
    if not kinds:
        return ()
    found = [f"{p.submission}/{p.problem}" for p in summary.every_pair()
             if TALLY[p.verdict] in kinds]
    if "invalid" in kinds:
        found += [s.id for s in scored_nothing(summary)]
    found += [f"{r.submission}/{r.problem} (not scored)" for r in not_scored(summary)]
    return tuple(found)


def exit_code(summary: Summary, policy: ExitPolicy, finished: bool) -> int:
    """The code a run whose summary is ``summary`` (its ``exit_code`` the verdicts' own: 0, 1
    for an ``error`` pair or a fault, 128 + a signal) returns under ``policy``; ``finished``:
    no signal stopped it and no fault broke it."""
    if not finished:
        return summary.exit_code
    if policy.exit_zero:
        return 0
    if summary.exit_code == 0 and failures(summary, policy.fail_on):
        return 1
    return summary.exit_code
