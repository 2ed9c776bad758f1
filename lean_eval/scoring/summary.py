"""The run's record at the top of ``--out``: ``summary.json``, or a refusal (design §5.5).

Invariants:
- Pairs are listed in input order, whatever order they finished in.
- Verdicts written without their own fsync (unchanged pairs) are made durable by one
  ``sync_filesystem`` before ``summary.json`` is written, so a summary on disk never names a
  verdict a power loss could take back.
- A run's envelope (``run.intoto.json``) is removed before its summary is written and, under
  ``--sign-key``, signed again after it: it never outlives the run it names.
- The summary is written once, with the exit code the process returns (``scoring.gate``
  decides it before the write), and never rewritten after the run was signed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path

from lean_eval.benchmark.catalog import Catalog
from lean_eval.errors import OutputError
from lean_eval.files.atomic import sync_filesystem, write_model
from lean_eval.intake import reader
from lean_eval.records.out_layout import REFUSED_SUMMARY, RUN_ENVELOPE, SUMMARY
from lean_eval.records.verdict import (
    INFRASTRUCTURE_FAILURES,
    TALLY,
    Identity,
    PairSummary,
    Preflight,
    ShardInfo,
    SubmissionSummary,
    Summary,
    Tally,
    compact_pairs,
)
from lean_eval.scoring import gate, resume
from lean_eval.scoring.options import Planned, Tools, identity
from lean_eval.scoring.scheduler import OUTCOMES, RunState
from lean_eval.supervise import lock, pair_fs, resources


def write_summary(started_at: str, ident: Identity, preflight: Preflight, catalog: Catalog,
                  plans: Sequence[reader.Intake], items: Sequence[Planned],
                  results: Mapping[int, PairSummary], out_dir: Path, run: RunState,
                  shard: ShardInfo | None, options: dict[str, object] | None = None,
                  not_reused: tuple[str, ...] = (), policy: gate.ExitPolicy = gate.VERDICTS_ONLY
                  ) -> Summary:
    """Write ``summary.json`` of a run that planned, with the exit code ``policy`` gives it, and
    return it; raises ``OutputError`` when it cannot be written or the run met a fault writing
    ``--out``."""
    every = tuple(results[i.order] for i in items if i.order in results)
    pairs, unchanged = compact_pairs(every)
    counts = dict.fromkeys(OUTCOMES, 0)
    tallies: dict[str, dict[str, int]] = {p.submission_id: {} for p in plans}
    for p in every:
        counts[p.verdict] += 1
        tally = tallies[p.submission]
        tally[TALLY[p.verdict]] = tally.get(TALLY[p.verdict], 0) + 1
    failed = any(p.verdict == "error" or p.execution in INFRASTRUCTURE_FAILURES for p in pairs)
    signum = run.stop.signum
    verdicts_code = 128 + signum if signum is not None else 1 if failed or run.stop.fault else 0
    planned = {(i.sid, i.problem_id) for i in items}
    summary = Summary(
        started_at=started_at,
        finished_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        identity=ident, preflight=preflight, problems=tuple(catalog.problems),
        submissions=tuple(SubmissionSummary(
            id=s.submission_id, source=s.source, digest=s.digest,
            problems=tuple(p for p in resume.problem_ids_of(s)
                           if (s.submission_id, p) in planned),
            rejection=s.rejection, rejection_code=s.rejection_code, hint=resume.hint_of(s),
            tally=Tally(**tallies[s.submission_id]), hidden=s.hidden,
            unchanged=unchanged.get(s.submission_id, ())) for s in plans),
        counts=counts, pairs=pairs, exit_code=verdicts_code, shard=shard,
        interrupted=signum is not None, not_scored=len(items) - len(every),
        reused=run.reused, jobs=run.jobs, options=options,
        # the watchdog was all there was, or a pair's group could not be made (a downgrade),
        # or no pair had a filesystem of its own for its disk budget
        limits_best_effort=bool(every) and (
            resources.best_effort(run.options.pair_limits) is not None
            or run.watchdog_pairs > 0
            or _disk_best_effort(run.options.pair_limits, run.options.keep_work)),
        signing_key=run.options.sign_key.fingerprint if run.options.sign_key else None,
        not_reused=not_reused)
    finished = signum is None and run.stop.fault is None
    summary = summary.model_copy(update={"exit_code": gate.exit_code(summary, policy, finished)})
    try:
        if run.unsynced:
            sync_filesystem(out_dir)
            run.unsynced = False
        (out_dir / RUN_ENVELOPE).unlink(missing_ok=True)
        write_model(out_dir / SUMMARY, summary)
        (out_dir / REFUSED_SUMMARY).unlink(missing_ok=True)  # this run supersedes a refusal
    except OSError as exc:
        raise OutputError(f"cannot write {out_dir / SUMMARY}: {exc}") from exc
    if run.stop.fault is not None:
        raise OutputError(run.stop.fault)
    if run.options.sign_key is not None:
        fault = run.options.sign_key.sign_run(out_dir)
        if fault is not None:
            raise OutputError(fault)
    return summary


def _scored_summary(path: Path) -> bool:
    """Whether ``path`` is the summary of a run that planned and scored (not a refusal)."""
    try:
        return Summary.model_validate_json(path.read_bytes()).refused is None
    except (OSError, ValueError):
        return False


def write_refusal(out_dir: Path, catalog: Catalog, tools: Tools, preflight: Preflight,
                  reason: str, started_at: str, out_lock: lock.OutLock | None = None) -> Path:
    """Record a run refused after its probes (design §5.5 "Refusal") and return the path
    written: ``summary.refused.json`` when ``summary.json`` lists an earlier run's scored pairs.
    ``out_lock``: held by the caller, who keeps it; else taken here (``UsageError`` when
    another run holds it)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    held = lock.OutLock(out_dir.resolve()) if out_lock is None else None
    try:
        summary = Summary(
            started_at=started_at,
            finished_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            identity=identity(catalog, tools), preflight=preflight,
            problems=tuple(catalog.problems), submissions=(),
            counts=dict.fromkeys(OUTCOMES, 0), pairs=(), exit_code=2, refused=reason)
        target = out_dir / SUMMARY
        if _scored_summary(target):
            target = out_dir / REFUSED_SUMMARY
        try:
            write_model(target, summary)
        except OSError as exc:
            raise OutputError(f"cannot write {target}: {exc}") from exc
        return target
    finally:
        if held is not None:
            held.close()


def _disk_best_effort(limits: resources.PairLimits, keep_work: bool) -> bool:
    """Whether the watchdog, not a filesystem of each pair's own, kept the disk budget."""
    return pair_fs.best_effort(limits.disk_limit, limits.disk_files, keep_work) is not None
