"""The JSON documents that ``probe``, ``test`` and the self-checks print with ``--json``.

Like verdicts and summaries they are versioned frozen models whose JSON Schema is committed in
``lean_eval/schemas/`` (``python3 -m lean_eval.verdict`` regenerates every schema; a test fails
on drift). ``schema_version`` comes first in every document; a breaking change bumps it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from lean_eval.verdict import Checker, Reason

if TYPE_CHECKING:
    from lean_eval.driver import DriverResult
    from lean_eval.probe import ProbeResult
    from lean_eval.selfcheck import SelfCheck

DOCUMENT_SCHEMA_VERSION = 1


class _Document(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ProbeCheckEntry(_Document):
    """One property a probe verified, with the evidence it judged."""

    name: str
    ok: bool
    evidence: str


class ProbeEntry(_Document):
    """One probe: its status, how long it took, and every check."""

    name: str
    status: Literal["pass", "fail", "error"]
    seconds: float
    proves: str
    message: str
    checks: tuple[ProbeCheckEntry, ...]


class ProbeReport(_Document):
    """``lean-eval probe --json``."""

    schema_version: int = DOCUMENT_SCHEMA_VERSION
    ok: bool
    toolchain_path: str
    bwrap_path: str
    bwrap_version: str
    probes: tuple[ProbeEntry, ...]


class WorkspaceTestReport(_Document):
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


class SelfCheckFinding(_Document):
    """One generated submission of a self-check, what it should score and what it did."""

    submission: str
    ok: bool
    verdict: str
    reason: str
    message: str
    expected_verdicts: tuple[str, ...]
    expected_reasons: tuple[str, ...]


class SelfCheckReport(_Document):
    """``lean-eval check-comparator-installation --json`` and ``check-eval-workflow --json``."""

    schema_version: int = DOCUMENT_SCHEMA_VERSION
    check: str
    ok: bool
    counts: dict[str, int]
    expected_counts: dict[str, int]
    where: str | None  # generated files, kept when the check failed
    findings: tuple[SelfCheckFinding, ...]


def probe_entry(result: ProbeResult, seconds: float) -> ProbeEntry:
    """A probe result as a document entry."""
    return ProbeEntry(name=result.name, status=result.status, seconds=round(seconds, 3),
                      proves=result.proves, message=result.message,
                      checks=tuple(ProbeCheckEntry(name=c.name, ok=c.ok, evidence=c.evidence)
                                   for c in result.checks))


def probe_report(entries: Sequence[ProbeEntry], toolchain: Path, bwrap: Path,
                 bwrap_version: str) -> ProbeReport:
    """Every probe run by ``lean-eval probe``."""
    return ProbeReport(ok=all(e.status == "pass" for e in entries),
                       toolchain_path=str(toolchain), bwrap_path=str(bwrap),
                       bwrap_version=bwrap_version, probes=tuple(entries))


def workspace_test_report(workspace: Path, result: DriverResult, log: Path | None,
                          kept: Path | None) -> WorkspaceTestReport:
    """What ``lean-eval test`` found."""
    c = result.classification
    return WorkspaceTestReport(workspace=str(workspace), verdict=c.verdict,
                               execution=c.execution, reason=c.reason, last_phase=c.last_phase,
                               checkers=c.checkers, exit_code=result.outcome.returncode,
                               log=str(log) if log else None, kept=str(kept) if kept else None)


def selfcheck_report(check: str, result: SelfCheck) -> SelfCheckReport:
    """A finished self-check."""
    return SelfCheckReport(
        check=check, ok=result.ok, counts=result.counts, expected_counts=result.expected_counts,
        where=None if result.ok else str(result.where),
        findings=tuple(SelfCheckFinding(
            submission=f.submission, ok=f.ok, verdict=f.verdict, reason=f.reason,
            message=f.message, expected_verdicts=tuple(sorted(f.expected.verdicts)),
            expected_reasons=tuple(sorted(f.expected.reasons))) for f in result.findings))


class StartProblemReport(_Document):
    """``lean-eval start-problem --json``: what was written, and the commands that come next."""

    schema_version: int = DOCUMENT_SCHEMA_VERSION
    problem: str
    directory: str
    editable: tuple[str, ...]
    reference: tuple[str, ...]
    next: tuple[str, ...]


class CatalogFinding(_Document):
    """One fault of the catalog and the file that holds it."""

    path: str
    message: str


class CatalogReport(_Document):
    """``lean-eval validate-catalog --json``."""

    schema_version: int = DOCUMENT_SCHEMA_VERSION
    ok: bool
    benchmark: str
    problems: tuple[str, ...]
    solution_only_modules: tuple[str, ...]
    findings: tuple[CatalogFinding, ...]


class PrepareStep(_Document):
    """One step of ``lean-eval prepare``: ``done``, ``present`` (nothing to do) or ``planned``."""

    name: str
    status: Literal["done", "present", "planned"]
    detail: str


class PrepareReport(_Document):
    """``lean-eval prepare --json``."""

    schema_version: int = DOCUMENT_SCHEMA_VERSION
    dry_run: bool
    steps: tuple[PrepareStep, ...]  # on failure: the steps finished before the failing one
    ok: bool = True
    failed_step: str | None = None  # elan, lean, bubblewrap or dependencies
    error: str | None = None  # why failed_step failed


class ConfigSetting(_Document):
    """One setting of one command: its effective value and where it comes from."""

    command: str
    option: str  # the long option, e.g. --jobs; the config key is its name without the dashes
    value: bool | int | float | str | tuple[str, ...] | None  # None: unset
    source: Literal["flag", "env", "config", "default"]
    origin: str  # "command line", the environment variable, the config file, "built-in default"
    envvar: str | None  # the LEAN_EVAL_<OPTION> variable that sets it


class ConfigReport(_Document):
    """``lean-eval config --json``."""

    schema_version: int = DOCUMENT_SCHEMA_VERSION
    config_file: str | None  # None: no config file is in effect
    table: str  # "tool.lean-eval" for a pyproject.toml, "" otherwise
    settings: tuple[ConfigSetting, ...]


def schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schema of each printed document, by file name."""
    return {
        "probe-report.schema.json": ProbeReport.model_json_schema(),
        "test-report.schema.json": WorkspaceTestReport.model_json_schema(),
        "selfcheck-report.schema.json": SelfCheckReport.model_json_schema(),
        "start-problem-report.schema.json": StartProblemReport.model_json_schema(),
        "catalog-report.schema.json": CatalogReport.model_json_schema(),
        "prepare-report.schema.json": PrepareReport.model_json_schema(),
        "config-report.schema.json": ConfigReport.model_json_schema(),
    }
