"""A preflight probe's result: what the probes produce, ``probe --json`` prints and the API hands
to ``on_probes``; a run's summary keeps it without its claim (``ProbeResult.outcome``)."""

from __future__ import annotations

from typing import Literal

from lean_eval.records.base import Record

ProbeStatus = Literal["pass", "fail", "error"]


class ProbeCheck(Record):
    """One property a probe verified, with the evidence it judged."""

    name: str
    ok: bool
    evidence: str


class ProbeOutcome(Record):
    """One preflight probe as the run saw it, with every check (the terminal shows fewer)."""

    name: str
    status: ProbeStatus
    message: str
    seconds: float = 0.0
    checks: tuple[ProbeCheck, ...] = ()


class ProbeResult(Record):
    """A probe's outcome: ``pass`` only when every check passed; ``error``: it could not run."""

    name: str
    status: ProbeStatus
    seconds: float  # how long the probe took; set by ``probe.run_probes``, which times it
    proves: str  # the probe's one-line claim
    message: str
    checks: tuple[ProbeCheck, ...]

    def outcome(self) -> ProbeOutcome:
        """This result as a run's summary records it (``Preflight.probes``)."""
        return ProbeOutcome(name=self.name, status=self.status, message=self.message,
                            seconds=self.seconds, checks=self.checks)
