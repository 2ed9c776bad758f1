"""Every verdict outcome and execution kind, defined once (design §4.4): the ``Outcome`` and
``Execution`` literals the verdict models (and so their JSON Schemas) use, and one table row
per kind from which the tally, ``--fail-on``, the report formats and the console derive what
they show. A format's own presentation (a colour, a symbol) is keyed by these names, and
tests/records/test_kinds.py checks that every such map covers exactly these kinds.
"""

from __future__ import annotations

from typing import Literal, NamedTuple, get_args

Outcome = Literal["accepted", "rejected", "invalid_submission", "unchanged", "error"]
Execution = Literal[
    "completed", "timed_out", "resource_exhausted", "crashed", "sandbox_error", "not_run",
    "harness_error", "infrastructure_error",
]
# How a report counts an outcome: passed, failed (the submission was judged wrong), skipped
# (nothing to judge), or an error (nothing was judged: the harness or the host failed)
Category = Literal["pass", "fail", "skip", "error"]


class OutcomeKind(NamedTuple):
    """What a verdict outcome is called and how it counts."""

    tally: str  # its name in the tally (summary.json's ``tally``, the reports, --fail-on)
    short: str  # its word on a progress line
    category: Category
    meaning: str


class ExecutionKind(NamedTuple):
    """What an execution kind says about how the pair's run ended."""

    infrastructure: bool  # an infrastructure failure: the run exits 1, never a rejection
    limit_reached: bool  # the pair itself reached a limit it was given (time, resources)
    meaning: str


OUTCOMES: dict[Outcome, OutcomeKind] = {
    "accepted": OutcomeKind("solved", "ok", "pass", "every required kernel accepted the proof"),
    "rejected": OutcomeKind("rejected", "rej", "fail", "the comparator rejected the proof"),
    "invalid_submission": OutcomeKind("invalid", "inv", "fail",
                                      "intake refused the submission before any build"),
    "unchanged": OutcomeKind("unchanged", "same", "skip",
                             "every submitted file is the problem's starter"),
    "error": OutcomeKind("error", "err", "error", "nothing was judged (see execution)"),
}

EXECUTIONS: dict[Execution, ExecutionKind] = {
    "completed": ExecutionKind(False, False, "the comparator ran to its end"),
    "timed_out": ExecutionKind(True, True, "the pair reached its deadline"),
    "resource_exhausted": ExecutionKind(True, True,
                                        "the pair reached a memory, process, disk or rlimit"),
    "crashed": ExecutionKind(True, False, "Lake or a child of it was killed by a signal"),
    "sandbox_error": ExecutionKind(True, False, "the sandbox could not be set up"),
    "not_run": ExecutionKind(False, False, "no build ran (intake refused it, or unchanged)"),
    "harness_error": ExecutionKind(True, False,
                                   "the harness failed preparing, running or recording it"),
    "infrastructure_error": ExecutionKind(True, False,
                                          "the pair was killed with no limit of its reached: "
                                          "a process killed it, not a limit"),
}

if set(OUTCOMES) != set(get_args(Outcome)) or set(EXECUTIONS) != set(get_args(Execution)):
    raise AssertionError("records.kinds: every Outcome and Execution needs exactly one row")

# A verdict's name in the tally: leaderboards read ``solved``; docs/scale.md states the renamings.
TALLY: dict[str, str] = {name: kind.tally for name, kind in OUTCOMES.items()}
INFRASTRUCTURE_FAILURES: frozenset[str] = frozenset(
    name for name, kind in EXECUTIONS.items() if kind.infrastructure)
LIMIT_REACHED: frozenset[str] = frozenset(
    name for name, kind in EXECUTIONS.items() if kind.limit_reached)
# What --fail-on accepts: the tally's names of every outcome but ``accepted``, then the
# verdict names that differ from them (``invalid_submission``), each to its tally name.
FAIL_ON: dict[str, str] = {
    **{kind.tally: kind.tally for name, kind in OUTCOMES.items() if kind.category != "pass"},
    **{name: kind.tally for name, kind in OUTCOMES.items()
       if kind.category != "pass" and name != kind.tally},
}
FAIL_ON_KINDS = ", ".join(kind.tally for kind in OUTCOMES.values() if kind.category != "pass")


def category(outcome: str) -> Category | None:
    """How a report counts ``outcome`` (None: not an outcome)."""
    kind = OUTCOMES.get(outcome)  # type: ignore[call-overload]
    return None if kind is None else kind.category
