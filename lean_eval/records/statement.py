"""The in-toto Statements v1 of a signed run (design §5.5 "Signing"): one in each verdict's DSSE
envelope (``<problem>.intoto.json``), and the run's own (``run.intoto.json``) binding them into
one whole. Built and signed by ``outputs.signing``; ``outputs.verify`` checks each predicate
field against the files."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from lean_eval.records.base import Record
from lean_eval.records.verdict import Checker, Execution, Identity, Outcome, ProblemRef


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
    # Every run-eval option that can change a verdict (resume.verdict_options), as the verdict
    # file records them (empty: a version-1 verdict, which recorded none).
    options: dict[str, Any]


class Statement(Record):
    """An in-toto Statement v1 about one verdict file."""

    # validated and dumped by their in-toto names (the aliases)
    type: Literal["https://in-toto.io/Statement/v1"] = Field(alias="_type")
    subject: tuple[Subject, Subject]  # the verdict file, then the submission
    predicate_type: Literal["urn:lean-eval:predicate:verdict:v1"] = Field(alias="predicateType")
    predicate: Predicate


class ShardClaim(Record):
    """Which shard of which batch the run scored (``--shard K/N``)."""

    k: int
    n: int
    batch_digest: str
    options_digest: str | None


class RunPredicate(Record):
    """The run as a whole: what every verdict it lists must have been scored under."""

    identity: Identity
    options: dict[str, Any] | None  # the run's verdict-changing options (summary ``options``)
    shard: ShardClaim | None  # None: the run scored the whole batch
    started_at: str
    finished_at: str
    signing_key: str  # the fingerprint of the key that signed it and every verdict it lists


class RunStatement(Record):
    """An in-toto Statement v1 about a whole run: ``summary.json``, then every verdict file
    the run recorded (each by its name relative to the output directory and its SHA-256)."""

    type: Literal["https://in-toto.io/Statement/v1"] = Field(alias="_type")
    subject: tuple[Subject, ...] = Field(min_length=1)
    predicate_type: Literal["urn:lean-eval:predicate:run:v1"] = Field(alias="predicateType")
    predicate: RunPredicate
