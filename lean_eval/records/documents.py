"""The JSON documents commands print with ``--json`` (``probe``, ``test``, the self-checks, the
authoring commands, ``validate-submission``, ``list-problems``, ``export-results``, ``verify``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from lean_eval.records.base import Record
from lean_eval.records.probe_result import ProbeResult
from lean_eval.records.verdict import Checker, Reason

DOCUMENT_SCHEMA_VERSION = 1


class ProbeReport(Record):
    """``lean-eval probe --json``."""

    schema_version: int = DOCUMENT_SCHEMA_VERSION
    ok: bool
    toolchain_path: str
    bwrap_path: str
    bwrap_version: str
    probes: tuple[ProbeResult, ...]


class WorkspaceTestReport(Record):
    """``lean-eval test --json``: one workspace run through the scoring driver as it stands."""

    schema_version: int = DOCUMENT_SCHEMA_VERSION
    workspace: str
    verdict: str
    execution: str
    reason: Reason
    last_phase: str | None
    checkers: tuple[Checker, ...]
    exit_code: int | None
    log: str | None  # the raw log, when it was kept (--keep-work); None once removed
    kept: str | None  # the directory kept with --keep-work


class SelfCheckFinding(Record):
    """One generated submission of a self-check, what it should score and what it did."""

    submission: str
    ok: bool
    verdict: str
    reason: str
    message: str
    expected_verdicts: tuple[str, ...]
    expected_reasons: tuple[str, ...]


class SelfCheckReport(Record):
    """``lean-eval check-comparator-installation --json`` and ``check-eval-workflow --json``."""

    schema_version: int = DOCUMENT_SCHEMA_VERSION
    check: str
    ok: bool
    counts: dict[str, int]
    expected_counts: dict[str, int]
    where: str | None  # generated files, kept when the check failed
    findings: tuple[SelfCheckFinding, ...]


def probe_report(entries: Sequence[ProbeResult], toolchain: Path, bwrap: Path,
                 bwrap_version: str) -> ProbeReport:
    """Every probe run by ``lean-eval probe``."""
    return ProbeReport(ok=all(e.status == "pass" for e in entries),
                       toolchain_path=str(toolchain), bwrap_path=str(bwrap),
                       bwrap_version=bwrap_version, probes=tuple(entries))


class StartProblemReport(Record):
    """``lean-eval start-problem --json``: what was written, and the commands that come next."""

    schema_version: int = DOCUMENT_SCHEMA_VERSION
    problem: str
    directory: str
    editable: tuple[str, ...]
    reference: tuple[str, ...]
    next: tuple[str, ...]


class CatalogFinding(Record):
    """One fault of the catalog and the file that holds it."""

    path: str
    message: str


class CatalogReport(Record):
    """``lean-eval validate-catalog --json``."""

    schema_version: int = DOCUMENT_SCHEMA_VERSION
    ok: bool
    benchmark: str
    problems: tuple[str, ...]
    solution_only_modules: tuple[str, ...]
    findings: tuple[CatalogFinding, ...]


class PrepareStep(Record):
    """One step of ``lean-eval prepare``: ``done``, ``present`` (nothing to do) or ``planned``."""

    name: str
    status: Literal["done", "present", "planned"]
    detail: str


class PrepareReport(Record):
    """``lean-eval prepare --json``."""

    schema_version: int = DOCUMENT_SCHEMA_VERSION
    dry_run: bool
    steps: tuple[PrepareStep, ...]  # on failure: the steps finished before the failing one
    ok: bool = True
    failed_step: str | None = None  # elan, lean, bubblewrap, dependencies or prerequisites
    error: str | None = None  # why failed_step failed
    # The tool options prepare was given that the scoring commands must be given too (they
    # are not remembered): e.g. ["--toolchain", "/opt/lean", "--allow-bwrap-version", "0.8.0"]
    run_with: tuple[str, ...] = ()


class ConfigSetting(Record):
    """One setting of one command: its effective value and where it comes from."""

    command: str
    option: str  # the long option, e.g. --jobs; the config key is its name without the dashes
    value: bool | int | float | str | tuple[str, ...] | None  # None: unset
    source: Literal["flag", "env", "config", "default"]
    origin: str  # "command line", the environment variable, the config file, "built-in default"
    envvar: str | None  # the LEAN_EVAL_<OPTION> variable that sets it


class ConfigReport(Record):
    """``lean-eval config --json``."""

    schema_version: int = DOCUMENT_SCHEMA_VERSION
    config_file: str | None  # None: no config file is in effect
    table: str  # "tool.lean-eval" for a pyproject.toml, "" otherwise
    settings: tuple[ConfigSetting, ...]


# What run-eval would do with one problem directory (verdict.Outcome is what it did); error:
# the harness could not read a file of the problem (a host fault, not the submitter's).
CheckOutcome = Literal["scored", "unchanged", "invalid_submission", "error"]


class ProblemCheck(Record):
    """One problem directory: what would happen to it, and why."""

    problem_id: str
    location: str  # the problem directory inside the submission
    outcome: CheckOutcome
    files: tuple[str, ...]  # relpaths that would replace the starters
    changed: tuple[str, ...]  # of those, the ones that differ from the starter of their path
    ignored: tuple[str, ...]
    rejection: str | None = None
    rejection_code: str | None = None
    fault: str | None = None
    # Names of the problem's trusted files (Challenge.lean, config.json, ...) found beside the
    # submission, as `start-problem` writes them: never read (scoring uses the benchmark's own),
    # and not repeated in `ignored`. Matched by name only, since they are not read.
    reference: tuple[str, ...] = ()
    # What the comparator would reject that is visible without Lean (a changed hole statement,
    # an import of the challenge or solution module or of a library the benchmark lacks): the
    # pair would still be scored. Also a read-only copy in `reference` edited to no effect.
    warnings: tuple[str, ...] = ()


class SubmissionCheck(Record):
    """A whole submission as run-eval would read it; `ok` when nothing would be rejected."""

    schema_version: Literal[1] = 1
    submission_id: str
    source: str
    digest: str
    ok: bool
    problems: tuple[ProblemCheck, ...]
    ignored: tuple[str, ...]
    rejection: str | None
    rejection_code: str | None
    named: tuple[str, ...]  # problem directories found, also when the whole is rejected
    hint: str | None  # what to change when no problem directory was found
    hidden: tuple[str, ...] = ()  # entries a limit hid, where a problem directory may be


class ListedHole(Record):
    """One hole of a listed problem."""

    name: str
    kind: Literal["theorem", "def", "instance"]


class ListedProblem(Record):
    """One problem as ``list-problems`` shows it (descriptive keys included)."""

    id: str
    title: str
    status: str
    visible: bool
    statement_revision: int
    holes: tuple[ListedHole, ...]
    sets: tuple[str, ...]
    tags: tuple[str, ...]
    group: str | None = None
    module: str | None = None


class ProblemList(Record):
    """``lean-eval list-problems --json``."""

    schema_version: int = DOCUMENT_SCHEMA_VERSION
    benchmark: str
    sets: tuple[str, ...]
    problems: tuple[ListedProblem, ...]


class ExportReport(Record):
    """``lean-eval export-results --json``."""

    schema_version: Literal[1] = 1
    results_dir: str
    added: tuple[dict[str, str], ...]  # file, result_id, submission, problem
    kept: int
    written: tuple[str, ...]


class Failure(Record):
    """One thing that does not hold, and the file it concerns (relative to OUT when inside)."""

    path: str
    problem: str


class VerifyReport(Record):
    """``lean-eval verify --json``: what was checked and every failure."""

    schema_version: Literal[1] = 1
    out_dir: str
    key_fingerprint: str
    verdict_files: tuple[str, ...]  # every verdict checked, relative to OUT
    envelopes_verified: int
    submissions: int
    failures: tuple[Failure, ...]

    @property
    def ok(self) -> bool:
        return not self.failures
