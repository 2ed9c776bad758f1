"""The in-toto Statement v1 in a signed verdict's DSSE envelope (``<problem>.intoto.json``,
design §5.5 "Signing"): built and signed by ``outputs.signing``; ``outputs.verify`` checks each
predicate field against the verdict file."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from lean_eval.records.base import Record
from lean_eval.records.verdict import Checker, Execution, Outcome, ProblemRef


class Subject(Record):
    """An in-toto ResourceDescriptor: what the statement is about, by name and digest."""

    name: str
    digest: dict[str, str]


class SubmissionClaim(Record):
    """The submission the verdict judged."""

    id: str
    digest: str


class ToolchainClaim(Record):
    """The Lean toolchain that scored."""

    name: str
    path: str


class BubblewrapClaim(Record):
    """The bubblewrap that sandboxed the build."""

    version: str
    sha256: str
    minimum_version: str


class Predicate(Record):
    """What the verdict file says, repeated under the signature (``verify`` compares each)."""

    submission: SubmissionClaim
    problem: ProblemRef
    verdict: Outcome
    execution: Execution
    reason_code: str
    checkers: tuple[Checker, ...]
    benchmark_commit: str | None
    trusted_files: dict[str, str]
    toolchain: ToolchainClaim
    bubblewrap: BubblewrapClaim
    harness_version: str
    probes_skipped: bool
    # Every run-eval option that can change a verdict (resume.verdict_options): the signer's
    # word only, as the verdict file does not record them.
    options: dict[str, Any]


class Statement(Record):
    """An in-toto Statement v1 about one verdict file."""

    # validated and dumped by their in-toto names (the aliases)
    type: Literal["https://in-toto.io/Statement/v1"] = Field(alias="_type")
    subject: tuple[Subject, Subject]  # the verdict file, then the submission
    predicate_type: Literal["urn:lean-eval:predicate:verdict:v1"] = Field(alias="predicateType")
    predicate: Predicate
