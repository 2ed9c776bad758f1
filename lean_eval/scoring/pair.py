"""Score one (submission, problem) pair end to end: prepare, run, clean up, record.

:func:`run_pair` touches only its own pair's directory and files, so pairs may run concurrently.

Invariants (design §6.10, §6.13):
- ``run_pair`` never raises for anything a submission or a build can cause: any fault while
  preparing, running, cleaning up or recording the pair ends it ``error``/``harness_error`` with
  the exception's class and message. Only ``OutputError`` escapes: the verdict could not be
  written, so the batch must stop admitting pairs.
- The pair's directory is removed before its verdict is written, so a build that filled the
  disk frees it first; ``job.released`` is called once, before that removal.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

from lean_eval.benchmark.catalog import ProblemWorkspace
from lean_eval.errors import OutputError
from lean_eval.files.atomic import write_bytes_atomic
from lean_eval.intake import reader
from lean_eval.records.kinds import LIMIT_REACHED
from lean_eval.records.out_layout import log_path, verdict_path
from lean_eval.records.verdict import (
    Checker,
    Execution,
    Identity,
    LogRef,
    Mounts,
    Outcome,
    ProblemRef,
    Reason,
    ResourceLimits,
    SubmissionRef,
    Timings,
    Verdict,
)
from lean_eval.scoring import driver, workspace
from lean_eval.supervise import disk, disk_ledger

MESSAGE_CAP = 2000
DISK_SHORT = "disk_short"  # reason of a failure while a filesystem was short of space


class PairJob(NamedTuple):
    """One pair to score; ``entry`` is None when the submission was rejected as a whole."""

    sub: reader.Intake
    problem_id: str
    entry: reader.ProblemEntry | None
    resume_key: str | None = None  # recorded in the verdict as is
    released: Callable[[], None] | None = None  # called once its processes are gone
    admitted: Mapping[str, object] | None = None  # ResourceLimits fields measured at admission


class RunContext(NamedTuple):
    """What every pair of a run shares; fixed before the first pair."""

    problems: Mapping[str, ProblemWorkspace]
    settings: driver.DriverSettings
    ident: Identity
    scoring_root: Path
    out_dir: Path  # resolved
    shared_packages: Path | None = None
    mounts: Mounts | None = None
    probes_skipped: bool = False
    keep_work: bool = False
    space: disk.SpaceWatch | None = None  # samples the scoring and output filesystems
    limits: ResourceLimits | None = None  # the run's limits, for pairs that never ran
    # Every verdict-changing setting of the run (resume.verdict_options), in every verdict
    options: Mapping[str, object] | None = None


def named_problems(sub: reader.Intake) -> tuple[str, ...]:
    """Problem ids whose directories intake found, even when it rejected the whole submission."""
    return tuple(sorted(set(sub.named) | {e.problem_id for e in sub.problems}))


def jobs_for(sub: reader.Intake, problems: Mapping[str, ProblemWorkspace]) -> list[PairJob]:
    """The pairs of one submission, in problem-id order, restricted to ``problems``; one per
    problem directory found when the submission was rejected whole (``named_problems``)."""
    if sub.rejection is not None:
        return [PairJob(sub, problem_id, None) for problem_id in named_problems(sub)
                if problem_id in problems]
    return [PairJob(sub, e.problem_id, e) for e in sub.problems if e.problem_id in problems]


def _verdict(job: PairJob, ctx: RunContext, outcome: Outcome, execution: Execution,
             reason: Reason, *, last_phase: str | None = None,
             checkers: tuple[Checker, ...] = (), exit_code: int | None = None,
             signal: int | None = None, timings: Timings | None = None,
             log: LogRef | None = None, limits: ResourceLimits | None = None) -> Verdict:
    """The one place a pair's verdict is built: ``limits`` default to the run's."""
    problem = ctx.problems.get(job.problem_id)  # None only for a job the catalog lacks
    sub, entry = job.sub, job.entry
    return Verdict(
        submission=SubmissionRef(id=sub.submission_id, digest=sub.digest, source=sub.source),
        problem=ProblemRef(id=job.problem_id, statement_revision=(
            problem.problem.statement_revision if problem else 0)),
        verdict=outcome, execution=execution, reason=reason, last_phase=last_phase,
        checkers=checkers, exit_code=exit_code, signal=signal,
        timings=timings if timings is not None else Timings(wall_seconds=0.0),
        identity=ctx.ident, trusted_files=problem.digests if problem else {},
        submission_files={f.relpath: f.sha256 for f in entry.files} if entry else {},
        ignored=entry.ignored if entry else (), log=log if log is not None else LogRef(path=None),
        probes_skipped=ctx.probes_skipped, mounts=ctx.mounts, resume_key=job.resume_key,
        limits=_limits(job, limits or ctx.limits),
        options=dict(ctx.options) if ctx.options is not None else None)


def _limits(job: PairJob, record: ResourceLimits | None) -> ResourceLimits | None:
    """The limits record with what the batch measured when it admitted the pair."""
    if record is not None and job.admitted:
        return record.model_copy(update=dict(job.admitted))
    return record


def error_verdict(job: PairJob, ctx: RunContext, message: str) -> Verdict:
    """A pair the harness could not score: ``error``. It never reached a sandbox, so it records
    neither the run's mask set nor its probe policy."""
    return _verdict(job, ctx._replace(mounts=None, probes_skipped=False), "error", "not_run",
                    Reason(code="harness_error", message=message))


def _short_of_space(verdict: Verdict) -> Verdict:
    """``verdict`` of a pair that ran while a scoring or output filesystem was short of space:
    a rejection, or an acceptance leaving files, may be the host's (``disk_short``)."""
    limits = verdict.limits.model_copy(update={"short_of_space": True}) if verdict.limits else None
    update: dict[str, object] = {"limits": limits}
    if verdict.verdict == "rejected" or (verdict.verdict == "accepted" and verdict.cleanup):
        update |= {"verdict": "error", "execution": "harness_error", "reason": Reason(
            code=DISK_SHORT,
            message=(f"a scoring or output filesystem was short of space while the pair ran, "
                     f"so its {verdict.verdict} ({verdict.reason.code}) may be the host's; the "
                     f"next run scores it again: {verdict.reason.message}")[:MESSAGE_CAP])}
    return verdict.model_copy(update=update)


# bwrap's words when a mount it copied with its recursive bind of / went away before it could
# remount it read-only: a pair filesystem another pair (of this harness or another) unmounted
# and removed just then (its directory's removal detaches the copy in every namespace). The
# sandbox never started; a fresh try almost never meets the same moment.
MOUNT_RACE = "Unable to apply mount flags"


def worth_another_try(verdict: Verdict) -> bool:
    """Whether the batch scores this pair once more, alone, from a fresh copy: a pair that may
    have failed for its filesystem's lack of space (design §5.5 "Disk"), or whose sandbox lost
    the race above (``MOUNT_RACE``)."""
    if verdict.execution == "sandbox_error" and MOUNT_RACE in verdict.reason.message:
        return True
    return (verdict.verdict == "error" and verdict.limits is not None
            and verdict.limits.short_of_space
            and verdict.execution not in LIMIT_REACHED)


_UNCHANGED = Reason(code="unchanged", message="every submitted file is the starter of its path")


def is_unchanged(entry: reader.ProblemEntry, problem: ProblemWorkspace | None) -> bool:
    """The one decision that a pair is ``unchanged``: nothing rejected or faulty, at least one
    file, and every submitted file equal to the starter of its path."""
    return (problem is not None and entry.rejection is None and entry.fault is None
            and bool(entry.files)
            and all(problem.starter.get(f.relpath) == f.data for f in entry.files))


def write_verdict(out_dir: Path, verdict: Verdict, *, durable: bool = True) -> None:
    """The one writer of verdict files (atomic); raises ``OutputError``. ``durable=False``:
    made durable by ``scoring.summary.write_summary`` (design §5.5)."""
    path = verdict_path(out_dir, verdict.submission.id, verdict.problem.id)
    # pydantic's own JSON encoder: the per-pair cost is mostly encoding (identity, mounts)
    data = (verdict.model_dump_json(indent=2) + "\n").encode("utf-8")
    try:
        write_bytes_atomic(path, data, durable=durable)
    except OSError as exc:
        raise OutputError(f"cannot write the verdict {path}: {exc}") from exc


def write_unchanged(job: PairJob, ctx: RunContext) -> Verdict:
    """Record an unchanged pair from its plan alone (design §5.5 "Unchanged pairs")."""
    verdict = _verdict(job, ctx, "unchanged", "not_run", _UNCHANGED)
    write_verdict(ctx.out_dir, verdict, durable=False)
    return verdict


def write_error(job: PairJob, ctx: RunContext, message: str) -> Verdict:
    verdict = error_verdict(job, ctx, message)
    write_verdict(ctx.out_dir, verdict)
    return verdict


def harness_reason(exc: BaseException, stage: str) -> Reason:
    """``reason`` of a pair the harness failed: the exception's class and message."""
    text = f"{stage}: {type(exc).__name__}: {exc}"
    if len(text) > MESSAGE_CAP:
        text = text[:MESSAGE_CAP - 3] + "..."
    return Reason(code="harness_error", message=text)


def _score(job: PairJob, ctx: RunContext, dirs: workspace.PairDirs, started: float) -> Verdict:
    sub, entry = job.sub, job.entry
    if sub.rejection is not None or (entry is not None and entry.rejection is not None):
        message = sub.rejection or (entry.rejection if entry else None) or ""
        code = sub.rejection_code or (entry.rejection_code if entry else None) or "path_rejected"
        return _verdict(job, ctx, "invalid_submission", "not_run",
                        Reason(code=code, message=message))
    if entry is not None and entry.fault is not None:  # the host's fault: retried on resume
        return _verdict(job, ctx, "error", "not_run",
                        Reason(code="harness_error", message=entry.fault))
    if entry is None:
        raise LookupError(f"submission {sub.submission_id} has no entry for {job.problem_id}")
    problem = ctx.problems[job.problem_id]  # unchanged pairs never get here (write_unchanged)
    leftovers = workspace.prepare(dirs)
    if leftovers:
        raise OSError(f"the pair's scoring directory could not be emptied: {leftovers[0]}")
    budget = ctx.settings.limits
    own = not ctx.keep_work and workspace.own_filesystem(dirs, budget.disk_limit,
                                                         budget.disk_files)
    workspace.materialise(dirs, problem.trusted, problem.starter, entry.files,
                          ctx.shared_packages)
    workspace.hand_over(ctx.scoring_root, dirs, ctx.settings.user)
    log = log_path(ctx.out_dir, sub.submission_id, job.problem_id)
    result = driver.run_workspace(dirs.workspace, dirs.state, problem.config, ctx.settings, log,
                                  own_filesystem=dirs.root if own else None)
    c = result.classification
    return _verdict(job, ctx, c.verdict, c.execution, c.reason,
                    last_phase=c.last_phase, checkers=c.checkers,
                    exit_code=result.outcome.returncode, signal=result.outcome.signal,
                    timings=Timings(wall_seconds=round(time.monotonic() - started, 3),
                                    phases=result.phase_seconds),
                    log=LogRef(path=_relative_log(log, ctx.out_dir), tail=result.log_tail),
                    limits=result.limits)


def _relative_log(log: Path, out_dir: Path) -> str:
    """The log's path as a verdict records it: relative to the output directory, so it stays
    right when the directory moves or is merged (the verdict's bytes are carried unchanged)."""
    return log.relative_to(out_dir).as_posix()


def _failed(job: PairJob, ctx: RunContext, exc: BaseException, stage: str,
            started: float) -> Verdict:
    log = log_path(ctx.out_dir, job.sub.submission_id, job.problem_id)
    return _verdict(job, ctx, "error", "harness_error", harness_reason(exc, stage),
                    timings=Timings(wall_seconds=round(time.monotonic() - started, 3)),
                    log=LogRef(path=_relative_log(log, ctx.out_dir) if log.is_file() else None))


def run_pair(job: PairJob, ctx: RunContext) -> Verdict:
    """Score, clean up and record one pair; raises only ``OutputError`` (module invariants)."""
    started = time.monotonic()
    sid, problem_id = job.sub.submission_id, job.problem_id
    dirs = workspace.pair_dirs(ctx.scoring_root, sid, problem_id)
    token = ctx.space.mark() if ctx.space is not None else 0
    try:
        verdict = _score(job, ctx, dirs, started)
    except Exception as exc:  # noqa: BLE001 - one pair's fault must not end the batch
        verdict = _failed(job, ctx, exc, "scoring", started)
    if job.released is not None:
        job.released()  # its processes are gone (run() returned): the slot is free
    if not ctx.keep_work:
        leftovers = workspace.remove(dirs)  # never raises; frees a full disk before the verdict
        if leftovers:
            verdict = verdict.model_copy(update={"cleanup": leftovers})
        ledger = ctx.settings.limits.disk_ledger if ctx.settings is not None else None
        if ledger is not None:  # its tree is gone: nothing left to explain
            disk_ledger.forget(ledger, str(dirs.workspace))
    if ctx.space is not None and verdict.execution != "not_run" and ctx.space.short_since(token):
        verdict = _short_of_space(verdict)
    try:
        write_verdict(ctx.out_dir, verdict)
    except OutputError:
        raise
    except Exception as exc:  # noqa: BLE001 - a verdict that cannot be encoded is the pair's
        verdict = _failed(job, ctx, exc, "recording", started)
        try:
            write_verdict(ctx.out_dir, verdict)
        except OutputError:
            raise
        except Exception as again:
            raise OutputError(f"cannot write the verdict of {sid}/{problem_id}: {again}"
                              ) from again
    return verdict

