"""The JSON documents that ``probe``, ``test``, the self-checks and the authoring commands print
with ``--json``.

Like verdicts and summaries they are versioned frozen models whose JSON Schema is committed in
``lean_eval/schemas/`` (``python3 -m lean_eval.schema_registry`` regenerates every schema; a
test fails on drift). ``schema_version`` comes first in every document; a breaking change bumps
it. Each is built by the code that produces its data (``selfcheck`` builds the self-check
report, ``driver.workspace_test_report`` the ``test`` one); nothing here imports above the
models.
"""

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
    failed_step: str | None = None  # elan, lean, bubblewrap or dependencies
    error: str | None = None  # why failed_step failed


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
