"""Score a batch: plan every input, then run its pairs over worker threads, resumably.

``run_batch`` is the whole run: the path checks, ``--out``'s lock, planning (``planning``), the
caller's probes, the scoring root, the admission loop (``scheduler``, with ``context`` and
``sizing``) and the summary (``summary``).

Invariants (design §5.5):
- Everything that can fail the whole run (duplicate or reserved ids, unusable or overlapping
  paths, a locked ``--out``) is checked before the first pair is scored, so exit 2 always means
  nothing was scored. The caller's ``probe`` runs after planning and before the first pair,
  and is told whether any pair needs a sandbox (none does when every pair is kept or decided
  at intake). One run holds ``--out`` at a time.
- SIGINT/SIGTERM stop admission and kill the running pairs' trees; their verdicts are discarded,
  the summary says ``interrupted`` and the exit code is 128 + the signal.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path

from lean_eval.benchmark.catalog import Catalog
from lean_eval.errors import UsageError
from lean_eval.records.verdict import Preflight, ShardInfo, Summary, Verdict
from lean_eval.scoring import driver, resume
from lean_eval.scoring.arguments import Submission, check_paths
from lean_eval.scoring.options import RunOptions, Tools
from lean_eval.scoring.plan import Prepared, needs_sandbox, prepare
from lean_eval.scoring.scheduler import Progress, RunState, Scheduler
from lean_eval.scoring.shard import options_digest
from lean_eval.scoring.summary import write_summary
from lean_eval.supervise import lock, tree_removal
from lean_eval.supervise.interrupt import Stop, signals

__all__ = ["run_batch"]


def _check_paths(inputs: Sequence[Path], options: RunOptions, catalog: Catalog,
                 tools: Tools) -> None:
    check_paths(inputs, options.out_dir, options.work_dir,
                needed=(tools.toolchain.root, tools.bwrap.path, catalog.root))
    driver.check_toolchain_placement(
        tools.toolchain, (options.out_dir, *([options.work_dir] if options.work_dir else [])))


def run_batch(submissions: Sequence[Submission], catalog: Catalog, tools: Tools,
              options: RunOptions, caller_env: Mapping[str, str],
              on_verdict: Callable[[Verdict], None] | None = None,
              on_progress: Callable[[Progress], None] | None = None, *,
              out_lock: lock.OutLock | None = None,
              probe: Callable[[bool], Preflight] | None = None) -> Summary:
    """Score every (submission, problem) pair and write verdicts and ``summary.json``.

    ``submissions``: as ``inputs.check_ids`` returned them (ids unique, paths absolute).
    ``out_lock``: ``options.out_dir``'s lock, already taken by the caller (who releases it);
    else the batch takes it. ``probe``: called once after planning and before any pair is
    scored, with whether any pair needs a sandbox (False when every pair is kept or decided at
    intake); it returns the run's preflight record (its ``skipped`` must equal that of
    ``options.preflight``, which the resume keys use) or raises ``SetupError`` to refuse.
    """
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    inputs = [s.path for s in submissions]
    _check_paths(inputs, options, catalog, tools)
    options.out_dir.mkdir(parents=True, exist_ok=True)
    out_dir = options.out_dir.resolve()
    if out_lock is not None and out_lock.out_dir != out_dir:
        raise UsageError(f"the lock given is for {out_lock.out_dir}, not --out {out_dir}")
    held = lock.OutLock(out_dir) if out_lock is None else None
    stop = Stop()  # from here on, SIGINT/SIGTERM end the run with an `interrupted` summary
    try:
        with signals(stop):
            planned = prepare(submissions, catalog, tools, options, out_dir)
        # The probes run outside the run's handlers, as before a run: Ctrl-C stops them at once
        # (KeyboardInterrupt) rather than letting every remaining probe run first.
        if probe is not None and stop.signum is None:
            planned = planned._replace(preflight=probe(any(
                i.order not in planned.kept
                and i.problem_id not in planned.unchanged.get(i.sid, frozenset())
                and needs_sandbox(i, catalog)
                for i in planned.items)))
        elif probe is not None:  # interrupted while planning: nothing will be scored
            planned = planned._replace(preflight=planned.preflight.model_copy(
                update={"reason": "interrupted before the probes ran"}))
        with signals(stop):
            return _run(inputs, catalog, tools, caller_env, out_dir, stop, started_at,
                        on_verdict, on_progress, planned)
    finally:
        if held is not None:
            held.close()


def _run(inputs: Sequence[Path], catalog: Catalog, tools: Tools,
         caller_env: Mapping[str, str], out_dir: Path, stop: Stop, started_at: str,
         on_verdict: Callable[[Verdict], None] | None,
         on_progress: Callable[[Progress], None] | None, planned: Prepared) -> Summary:
    options, ident, preflight, plans, items, digest, batch, kept, unchanged = planned
    run_dir = _run_dir(options)
    try:
        run = RunState(inputs, catalog, tools, options, caller_env, out_dir, run_dir.path,
                       ident, preflight, stop)
        run.kept = kept
        run.unchanged_ids = unchanged
        try:
            results = Scheduler(run, items, on_verdict, on_progress).schedule()
        finally:
            if run.ctx.space is not None:
                run.ctx.space.close()
    finally:
        run_dir.release(keep=options.keep_work or options.scoring_root is not None)
        if not options.keep_work:
            tree_removal.remove_tree(run_dir.path)
    shard = None if options.shard is None else ShardInfo(
        k=options.shard.k, n=options.shard.n, batch_digest=digest, batch=batch,
        options_digest=options_digest(resume.verdict_options(options, preflight)))
    return write_summary(started_at, ident, preflight, catalog, plans, items, results, out_dir,
                         run, shard, resume.verdict_options(options, preflight))


def _run_dir(options: RunOptions) -> lock.RunDir:
    """This run's scoring root; first reclaim what killed runs left in the same place."""
    if options.scoring_root is not None:
        return lock.RunDir(options.scoring_root, exact=True)
    parent = options.work_dir or Path(tempfile.gettempdir())
    parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    lock.reclaim(parent, tree_removal.remove_tree)
    return lock.RunDir(parent)
