"""Score one (submission, problem) pair: refuse, skip or run the driver, and build its verdict.

Invariants:
- A bad submission never raises here: it is a verdict (``invalid_submission``, ``unchanged``,
  ``rejected``).
"""

from __future__ import annotations

import time
from pathlib import Path

from lean_eval import driver, intake, workspace
from lean_eval.catalog import ProblemWorkspace
from lean_eval.verdict import (
    Execution,
    Identity,
    LogRef,
    Outcome,
    ProblemRef,
    Reason,
    SubmissionRef,
    Timings,
    Verdict,
)


def _verdict(sub: intake.Intake, problem: ProblemWorkspace, ident: Identity, outcome: Outcome,
             execution: Execution, reason: Reason, **extra: object) -> Verdict:
    return Verdict.model_validate({
        "submission": SubmissionRef(id=sub.submission_id, digest=sub.digest, source=sub.source),
        "problem": ProblemRef(id=problem.problem.id,
                              statement_revision=problem.problem.statement_revision),
        "verdict": outcome, "execution": execution, "reason": reason,
        "identity": ident, "trusted_files": problem.digests,
        "timings": extra.pop("timings", Timings(wall_seconds=0.0)), **extra,
    })


def score_pair(sub: intake.Intake, entry: intake.ProblemEntry, problem: ProblemWorkspace,
               settings: driver.DriverSettings, dirs: workspace.PairDirs, ident: Identity,
               log_path: Path, shared_packages: Path | None) -> Verdict:
    """One pair: refuse, skip or run the driver; never raises for a bad submission."""
    files = {f.relpath: f.sha256 for f in entry.files}
    base: dict[str, object] = {"submission_files": files, "ignored": entry.ignored}
    if sub.rejection is not None or entry.rejection is not None:
        message = sub.rejection or entry.rejection or ""
        code = sub.rejection_code or entry.rejection_code or "path_rejected"
        return _verdict(sub, problem, ident, "invalid_submission", "not_run",
                        Reason(code=code, message=message), **base)
    submitted = next(f.data for f in entry.files if f.relpath == "Submission.lean")
    if submitted == problem.starter["Submission.lean"]:
        return _verdict(sub, problem, ident, "unchanged", "not_run",
                        Reason(code="unchanged", message="Submission.lean is the starter"), **base)
    started = time.monotonic()
    workspace.materialise(dirs, problem.trusted, entry.files, shared_packages)
    result = driver.run_workspace(dirs.workspace, dirs.state, problem.config, settings, log_path)
    c = result.classification
    return _verdict(sub, problem, ident, c.verdict, c.execution, c.reason,
                    last_phase=c.last_phase, checkers=c.checkers,
                    exit_code=result.outcome.returncode, signal=result.outcome.signal,
                    timings=Timings(wall_seconds=round(time.monotonic() - started, 3),
                                    phases=result.phase_seconds),
                    log=LogRef(path=str(log_path), tail=result.log_tail), **base)
