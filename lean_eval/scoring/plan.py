"""Plan a batch before scoring anything: every input read once, the pairs listed, resumes decided.

Invariants (design §5.5):
- Planning keeps no submission bytes (``Intake.without_data``); a submission's unchanged pairs
  are decided here, while its bytes are read (``pair.is_unchanged``).
- A verdict on disk whose ``resume_key`` equals the pair's key, of this version and not
  ``error``, is reused untouched (``--rescore``: none is); what is kept is decided once, here,
  before the probes. Under ``--sign-key`` it is kept only when its envelope verifies under the
  same key and attests exactly its bytes at its place; else it is scored again and
  ``not_reused`` says why, so a resumed run never signs what it did not score (SECURITY.md
  invariant 20). Without a key, resume trusts whoever can write ``--out``.
- ``--shard K/N``: the whole batch is planned (its digest and map go in the summary), then only
  the shard's pairs are kept.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from lean_eval.benchmark.catalog import Catalog
from lean_eval.intake import reader
from lean_eval.intake.bounds import max_path_bytes_under
from lean_eval.records import out_layout
from lean_eval.records.verdict import SCHEMA_VERSION, Identity, Preflight, Verdict
from lean_eval.scoring import pair, resume
from lean_eval.scoring.options import Planned, RunOptions, Tools, identity, not_probed
from lean_eval.scoring.shard import batch_digest, batch_map, in_shard
from lean_eval.supervise import lock

_ID_MAX = 128  # the longest submission id and problem id intake and the catalog accept


class Prepared(NamedTuple):
    """A planned run: what it scores and keeps, decided before the probes."""

    options: RunOptions  # with the path bound for this run's workspaces
    ident: Identity
    preflight: Preflight
    plans: list[reader.Intake]
    items: list[Planned]  # this shard's
    digest: str  # of the whole batch
    batch: dict[str, tuple[str, ...]]
    kept: dict[int, Verdict]  # by Planned.order: verdicts on disk that resume reuses
    unchanged: dict[str, frozenset[str]]  # by submission: problems planning found unchanged
    needs_sandbox: bool  # a pair is neither kept nor decided at intake: the probes must run
    not_reused: tuple[str, ...] = ()  # "<sid>/<pid>: why": a matching key, but not kept signed


def prepare(ids: Sequence[tuple[str, Path]], catalog: Catalog, tools: Tools,
            options: RunOptions, out_dir: Path) -> Prepared:
    """The run planned (module invariants): its pairs, this shard's, and what resume keeps."""
    lock.remove_stray_temps(out_dir)
    options = _bound_paths(options)
    ident = identity(catalog, tools)
    preflight = options.preflight or not_probed(tools)
    unchanged: dict[str, frozenset[str]] = {}
    plans, items = _plan(ids, catalog, options, ident, preflight, unchanged)
    digest = batch_digest((i.sid, i.problem_id) for i in items)
    batch = batch_map((i.sid, i.problem_id) for i in items) if options.shard is not None else {}
    if options.shard is not None:
        items = [i for i in items if in_shard(i.sid, i.problem_id, options.shard)]
    kept: dict[int, Verdict] = {}
    not_reused: list[str] = []
    for i in [] if options.rescore else items:
        path = out_layout.verdict_path(out_dir, i.sid, i.problem_id)
        verdict = _reusable(path, i.key)
        why = (options.sign_key.check(path, out_dir)
               if verdict is not None and options.sign_key is not None else None)
        if why is not None:
            not_reused.append(f"{i.sid}/{i.problem_id}: {why}")
        elif verdict is not None:
            kept[i.order] = verdict
    sandboxed = any(i.order not in kept and _runs_lake(i, unchanged) for i in items)
    return Prepared(options, ident, preflight, plans, items, digest, batch, kept, unchanged,
                    sandboxed, tuple(not_reused))


def _plan(ids: Sequence[tuple[str, Path]], catalog: Catalog, options: RunOptions,
          ident: Identity, preflight: Preflight, unchanged: dict[str, frozenset[str]]
          ) -> tuple[list[reader.Intake], list[Planned]]:
    """The pairs in input order, each input read once; fills ``unchanged`` per submission."""
    problem_ids = frozenset(catalog.problems)
    starters = {pid: ws.starter for pid, ws in catalog.problems.items()}
    plans: list[reader.Intake] = []
    items: list[Planned] = []
    for _, path in ids:
        read = reader.read_submission(path, problem_ids, options.limits, starters)
        if read.rejection is None:
            unchanged[read.submission_id] = frozenset(
                e.problem_id for e in read.problems
                if pair.is_unchanged(e, catalog.problems.get(e.problem_id)))
        plan = read.without_data()
        plans.append(plan)
        for job in pair.jobs_for(plan, catalog.problems):
            key = resume.pair_key(plan, catalog.problems[job.problem_id], ident, options,
                                  preflight)
            items.append(Planned(len(items), plan.submission_id, job.problem_id, path,
                                 plan.digest, key, plan))
    return plans, items


def _reusable(path: Path, key: str) -> Verdict | None:
    try:
        verdict = Verdict.model_validate_json(path.read_bytes())
    except (OSError, ValueError):
        return None
    return verdict if (verdict.resume_key == key and verdict.schema_version == SCHEMA_VERSION
                       and verdict.verdict != "error") else None


def _bound_paths(options: RunOptions) -> RunOptions:
    """Intake's path limit under this run's scoring root with the longest ids, so a relpath
    past PATH_MAX there is a pair rejection, never ENAMETOOLONG while writing the workspace."""
    parent = options.scoring_root or options.work_dir or Path(tempfile.gettempdir())
    worst = (Path(os.path.realpath(parent)) / (lock.RUN_PREFIX + "x" * 16) / ("x" * _ID_MAX)
             / ("x" * _ID_MAX) / "workspace")
    bound = min(options.limits.max_path_bytes, max_path_bytes_under(str(worst)))
    return options._replace(limits=options.limits.model_copy(update={"max_path_bytes": bound}))


def _runs_lake(item: Planned, unchanged: dict[str, frozenset[str]]) -> bool:
    """Whether scoring the pair runs Lake: not when intake decided it (a rejected submission
    or entry is ``invalid_submission``, an unchanged one ``unchanged``: ``pair._score``)."""
    plan = item.plan
    entry = next((e for e in plan.problems if e.problem_id == item.problem_id), None)
    return not (plan.rejection is not None or entry is None or entry.rejection is not None
                or item.problem_id in unchanged.get(item.sid, frozenset()))
