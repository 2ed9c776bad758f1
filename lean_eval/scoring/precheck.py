"""validate-submission: what run-eval would do with a submission, decided without Lean.

Runs the same intake as ``run-eval`` (every limit, the import header check) and compares each
submitted file with the catalog's starter of that path, so a submitter learns before scoring
which problems would be scored, which are ``unchanged``, what is ignored and every rejection
with the entry it names. No toolchain, sandbox or probe is involved. The printed document is a
versioned frozen model whose JSON Schema is committed (``submission-check.schema.json``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Literal

from lean_eval.benchmark.catalog import Catalog
from lean_eval.intake.reader import DEFAULT_LIMITS, IntakeLimits, ProblemEntry, read_submission
from lean_eval.intake.readset import NOT_READ
from lean_eval.records.base import Record

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


def changed_files(entry: ProblemEntry, starter: Mapping[str, bytes]) -> tuple[str, ...]:
    """Submitted relpaths whose bytes differ from the starter of their path (or have none)."""
    return tuple(f.relpath for f in entry.files if starter.get(f.relpath) != f.data)


def _problem(entry: ProblemEntry, starter: Mapping[str, bytes],
             trusted: Collection[str] = ()) -> ProblemCheck:
    changed = changed_files(entry, starter)
    outcome: CheckOutcome = ("invalid_submission" if entry.rejection is not None
                        else "error" if entry.fault is not None
                        else "scored" if changed else "unchanged")
    # intake's line for a file it did not read: "<location>/<name>: not read (...)"
    prefix = f"{entry.location}/"
    reference = tuple(name for name in sorted(trusted)
                      if f"{prefix}{name}: {NOT_READ}" in entry.ignored)
    shown = {f"{prefix}{name}: {NOT_READ}" for name in reference}
    return ProblemCheck(problem_id=entry.problem_id, location=entry.location, outcome=outcome,
                        files=tuple(f.relpath for f in entry.files), changed=changed,
                        ignored=tuple(line for line in entry.ignored if line not in shown),
                        rejection=entry.rejection, rejection_code=entry.rejection_code,
                        fault=entry.fault, reference=reference)


def check_submission(path: Path, catalog: Catalog,
                     limits: IntakeLimits = DEFAULT_LIMITS) -> SubmissionCheck:
    """Intake `path` against the problems of `catalog`; UsageError for an unusable path."""
    intake = read_submission(path, frozenset(catalog.problems), limits)
    problems = tuple(_problem(e, catalog.problems[e.problem_id].starter,
                              catalog.problems[e.problem_id].trusted)
                     for e in intake.problems)
    ok = (intake.rejection is None and bool(intake.named)
          and all(p.rejection is None and p.fault is None for p in problems))
    return SubmissionCheck(submission_id=intake.submission_id, source=intake.source,
                           digest=intake.digest, ok=ok, problems=problems,
                           ignored=intake.ignored, rejection=intake.rejection,
                           rejection_code=intake.rejection_code, named=intake.named,
                           hint=intake.hint, hidden=intake.hidden)
