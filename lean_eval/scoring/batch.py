"""Score a batch in two steps, planned then executed, with the preflight between them.

The application (``api.run_request``) runs :func:`plan_batch`, decides the probes, then
:func:`execute`; library callers (the probes, the self-checks, replay) take :func:`run_batch`.
SIGINT/SIGTERM while planning or scoring end the run with an ``interrupted`` summary.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

from lean_eval.benchmark.catalog import Catalog
from lean_eval.errors import UsageError
from lean_eval.records.verdict import Preflight, ShardInfo, Summary, Verdict
from lean_eval.scoring import driver, resume
from lean_eval.scoring.arguments import Submission, check_paths
from lean_eval.scoring.gate import VERDICTS_ONLY, ExitPolicy
from lean_eval.scoring.options import RunOptions, Tools
from lean_eval.scoring.plan import Prepared, prepare
from lean_eval.scoring.scheduler import Progress, RunState, Scheduler
from lean_eval.scoring.shard import options_digest
from lean_eval.scoring.summary import write_summary
from lean_eval.supervise import lock, tree_removal
from lean_eval.supervise.interrupt import Stop, signals

__all__ = ["Batch", "check_places", "execute", "plan_batch", "run_batch"]


class Batch(NamedTuple):
    """A planned batch, ready to score once its preflight is known."""

    planned: Prepared
    catalog: Catalog
    tools: Tools
    inputs: tuple[Path, ...]
    out_dir: Path  # resolved, locked by the caller
    stop: Stop  # set by SIGINT/SIGTERM from planning on
    started_at: str

    @property
    def interrupted(self) -> bool:
        return self.stop.signum is not None


def check_places(inputs: Sequence[Path], out_dir: Path, work_dir: Path | None,
                 catalog: Catalog, tools: Tools) -> None:
    """No input holds what scoring needs, no place overlaps another and no tool lies where a
    build writes; checked before ``--out`` is created."""
    check_paths(inputs, out_dir, work_dir,
                needed=(tools.toolchain.root, tools.bwrap.path, catalog.root))
    driver.check_toolchain_placement(tools.toolchain, (out_dir, *([work_dir] if work_dir else [])))


def plan_batch(submissions: Sequence[Submission], catalog: Catalog, tools: Tools,
               options: RunOptions, held: lock.OutLock) -> Batch:
    """Plan the run under ``held``, ``--out``'s lock, once :func:`check_places` passed;
    ``submissions`` as ``arguments.check_ids`` returned them."""
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    inputs = tuple(s.path for s in submissions)
    out_dir = options.out_dir.resolve()
    if held.out_dir != out_dir:
        raise UsageError(f"the lock given is for {held.out_dir}, not --out {out_dir}")
    stop = Stop()
    with signals(stop):
        planned = prepare(submissions, catalog, tools, options, out_dir)
    return Batch(planned, catalog, tools, inputs, out_dir, stop, started_at)


def execute(batch: Batch, caller_env: Mapping[str, str], preflight: Preflight | None = None,
            on_verdict: Callable[[Verdict], None] | None = None,
            on_progress: Callable[[Progress], None] | None = None,
            policy: ExitPolicy = VERDICTS_ONLY) -> Summary:
    """Score the planned pairs and write ``summary.json`` with the exit code ``policy`` gives.
    ``preflight``: the run's record (its ``skipped`` must equal that of the options the plan
    was keyed with); None: the plan's."""
    planned = batch.planned if preflight is None else batch.planned._replace(
        preflight=preflight)
    options, ident, preflight, plans, items, digest, shards, kept, unchanged, _, distrusted = \
        planned
    catalog, out_dir = batch.catalog, batch.out_dir
    with signals(batch.stop):
        run_dir = _run_dir(options)
        try:
            run = RunState(batch.inputs, catalog, batch.tools, options, caller_env, out_dir,
                           run_dir.path, ident, preflight, batch.stop)
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
        recorded = resume.verdict_options(options, preflight)
        shard = None if options.shard is None else ShardInfo(
            k=options.shard.k, n=options.shard.n, batch_digest=digest, batch=shards,
            options_digest=options_digest(recorded))
        return write_summary(batch.started_at, ident, preflight, catalog, plans, items,
                             results, out_dir, run, shard, recorded, distrusted, policy)


def run_batch(submissions: Sequence[Submission], catalog: Catalog, tools: Tools,
              options: RunOptions, caller_env: Mapping[str, str],
              on_verdict: Callable[[Verdict], None] | None = None,
              on_progress: Callable[[Progress], None] | None = None) -> Summary:
    """Both steps, taking ``--out``'s lock here, with the preflight the options carry (none
    asked for: a record that the probes were skipped)."""
    check_places([s.path for s in submissions], options.out_dir, options.work_dir, catalog,
                 tools)
    options.out_dir.mkdir(parents=True, exist_ok=True)
    held = lock.OutLock(options.out_dir.resolve())
    try:
        batch = plan_batch(submissions, catalog, tools, options, held)
        return execute(batch, caller_env, on_verdict=on_verdict, on_progress=on_progress)
    finally:
        held.close()


def _run_dir(options: RunOptions) -> lock.RunDir:
    """This run's scoring root; first reclaim what killed runs left in the same place."""
    if options.scoring_root is not None:
        return lock.RunDir(options.scoring_root, exact=True)
    parent = options.work_dir or Path(tempfile.gettempdir())
    parent.mkdir(mode=0o711, parents=True, exist_ok=True)  # the sandbox identity passes it
    lock.reclaim(parent, tree_removal.remove_tree)
    return lock.RunDir(parent)
