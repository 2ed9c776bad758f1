"""Score a batch: plan every input, then run its pairs over worker threads, resumably.

Invariants (design §5.5):
- Everything that can fail the whole run (duplicate or reserved ids, unusable or overlapping
  paths, a locked ``--out``) is checked before the first pair is scored, so exit 2 always means
  nothing was scored. Planning keeps no submission bytes (``Intake.without_data``). The
  caller's ``probe`` runs after planning and before the first pair, and is told whether any pair
  needs a sandbox (none does when every pair is kept or decided at intake).
- Admission is FIFO in input order (submissions as given, problems by id): no pair overtakes an
  earlier one, and a pair waiting for memory or disk holds back those behind it. A pair waits
  while ``jobs`` pairs run; while another pair runs and ``MemAvailable`` is below
  ``--memory-limit``; and while another pair runs or is being removed and the scoring or the
  output filesystem has less free space than ``--disk-reserve``. With nothing else in flight
  it starts at once (waiting could not free anything), and its verdict's ``limits`` record
  what it started with (``started_below_memory``, ``started_below_reserve``).
- Each pair runs in its own thread, which lives until the pair's process tree is reaped (the
  parent-death signal of its reaper is tied to that thread). Its ``-j`` slot is freed as soon
  as its processes are gone; the same thread then removes its tree (at most ``--disk-files``
  entries, which the disk watchdog enforces) and writes its verdict, while admission goes on.
  A full ``--out`` is known only then, so the pair admitted into that slot still runs; nothing
  is admitted after the fault is known.
- A pair that ended ``error`` after running while a filesystem was short of space
  (``pair.worth_another_try``: ``disk_short``, ``challenge_failed``, ``harness_error``..., not
  its own limit or deadline) is scored once more after every other pair, with nothing else in
  flight, so a filesystem filled by a concurrent pair cannot fail it twice; the second verdict
  stands, whatever it is. Interrupted first, the first one stands.
- A submission's bytes are read again when its first scored pair is admitted, must match the
  planned digest (else its pairs are ``error``), and are dropped when its last pair ends. Its
  unchanged pairs were decided by planning from the bytes it read (the planned digest).
- A verdict on disk whose ``resume_key`` equals the pair's key and which is not ``error`` is
  reused untouched; ``--rescore`` ignores what is on disk. One run holds ``--out`` at a time.
- SIGINT/SIGTERM stop admission and kill the running pairs' trees; their verdicts are discarded,
  the summary says ``interrupted`` and the exit code is 128 + the signal.
- ``summary.json`` lists pairs in input order whatever order they finished in; unchanged pairs
  are listed by id per submission (``SubmissionSummary.unchanged``), not as pairs.
- An unchanged pair is decided on the admission thread (no worker, no scoring directory) and
  its verdict written without its own fsync; one ``sync_filesystem`` makes every such verdict
  durable before ``summary.json`` is written, so a summary on disk never names a verdict a
  power loss could take back (design §5.5 "Unchanged pairs").
"""

from __future__ import annotations

import hashlib
import os
import queue
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

from lean_eval import disk, driver, intake, lock, pair, resume, sandbox, tree_removal
from lean_eval.atomic import sync_filesystem, write_model
from lean_eval.catalog import Catalog
from lean_eval.errors import OutputError, UsageError
from lean_eval.interrupt import Stop, signals, terminate_children
from lean_eval.limits import max_path_bytes_under
from lean_eval.resume import Planned, RunOptions, Tools, identity, not_probed
from lean_eval.shard import batch_digest, batch_map, in_shard, options_digest
from lean_eval.verdict import (
    INFRASTRUCTURE_FAILURES,
    Identity,
    PairSummary,
    Preflight,
    ResourceLimits,
    ShardInfo,
    SubmissionSummary,
    Summary,
    Tally,
    Verdict,
    compact_pairs,
)

__all__ = ["Progress", "RunOptions", "Tools", "check_inputs", "identity", "not_probed",
           "run_batch", "write_refusal"]

REFUSED_SUMMARY = "summary.refused.json"  # a refusal beside an earlier run's summary.json
RESERVED_IDS = frozenset({"summary.json", REFUSED_SUMMARY})  # names a run writes atop --out
_TALLY = {"accepted": "solved", "rejected": "rejected", "invalid_submission": "invalid",
          "unchanged": "unchanged", "error": "error"}
_OUTCOMES = ("accepted", "rejected", "invalid_submission", "unchanged", "error")
_POLL = 0.2
_ID_MAX = 128  # the longest submission id and problem id intake and the catalog accept


class Progress(NamedTuple):
    """What the console shows after each event: totals, and the verdict that just finished."""

    total: int
    done: int
    running: int
    counts: Mapping[str, int]
    verdict: Verdict | None
    kept: bool = False  # the verdict is an earlier run's, reused by resume


def _contains(outer: Path, inner: Path) -> bool:
    outer_s, inner_s = os.path.realpath(outer), os.path.realpath(inner)
    return inner_s == outer_s or inner_s.startswith(outer_s.rstrip("/") + "/")


def check_inputs(inputs: Sequence[Path]) -> list[tuple[str, Path]]:
    """Submission ids in input order; a duplicate or reserved id is a setup failure."""
    seen: dict[str, Path] = {}
    for path in inputs:
        sid = intake.submission_id(path)
        if sid in RESERVED_IDS:
            raise UsageError(f"submission {path}: its id {sid!r} collides with a file run-eval "
                             "writes at the top of --out; rename it")
        if sid in seen:
            raise UsageError(f"submissions {seen[sid]} and {path} have the same id {sid!r} "
                             "(an id is the file or directory name without .tar/.tar.gz/"
                             f".tgz); rename one, e.g. to <submitter>-{sid}")
        seen[sid] = path
    return list(seen.items())


def _check_paths(inputs: Sequence[Path], options: RunOptions, catalog: Catalog,
                 tools: Tools) -> None:
    must_see = [tools.toolchain.root, tools.bwrap.path, catalog.root]
    if options.work_dir is not None:
        must_see.append(options.work_dir)
    for path in inputs:
        for needed in must_see:
            if _contains(path, needed):
                raise UsageError(f"submission input {path} contains {needed}, which scoring "
                                 "needs; move the submission elsewhere")
        if _contains(path, options.out_dir) or _contains(options.out_dir, path):
            raise UsageError(f"--out {options.out_dir} and submission {path} overlap")
    if options.work_dir is not None and (_contains(options.out_dir, options.work_dir)
                                         or _contains(options.work_dir, options.out_dir)):
        raise UsageError(f"--out {options.out_dir} and --work-dir {options.work_dir} overlap")
    driver.check_toolchain_placement(
        tools.toolchain, (options.out_dir, *([options.work_dir] if options.work_dir else [])))


def mem_available() -> int | None:
    """``MemAvailable`` of /proc/meminfo in bytes (None when the kernel does not say)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def default_jobs(memory_limit: int) -> int:
    """CPUs, lowered so that jobs x memory limit fits in the memory available now."""
    cpus = len(os.sched_getaffinity(0)) or 1
    available = mem_available()
    if available is None:
        return cpus
    return max(1, min(cpus, available // max(memory_limit, 1)))


class _Done(NamedTuple):
    item: Planned
    verdict: Verdict | None  # None: discarded (interrupted) or never produced
    fault: str | None  # the output directory could not be written


class _Released(NamedTuple):
    """The pair's processes are gone; its tree is being removed."""

    item: Planned


class _Run:
    """State of one run shared by the admission loop and its workers."""

    def __init__(self, inputs: Sequence[Path], catalog: Catalog, tools: Tools,
                 options: RunOptions, caller_env: Mapping[str, str], out_dir: Path,
                 root: Path, ident: Identity, preflight: Preflight, stop: Stop) -> None:
        self.catalog, self.options, self.out_dir = catalog, options, out_dir
        self.problem_ids = frozenset(catalog.problems)
        self.ctx = self._context(inputs, tools, caller_env, root, ident, preflight)
        self.done: queue.SimpleQueue[_Done | _Released] = queue.SimpleQueue()
        self.stop = stop
        self.jobs = options.jobs or default_jobs(options.memory_limit)
        self.reused = 0
        self.kept: dict[int, Verdict] = {}  # by Planned.order: verdicts resume reuses
        self.unsynced = False  # a verdict was written with durable=False since the last sync
        self.unchanged_ids: dict[str, frozenset[str]] = {}  # by submission, decided at planning
        self.signed_options = resume.verdict_options(options, preflight)  # what envelopes attest
        self.filesystems = disk.distinct_filesystems((str(root), str(out_dir)))

    def room_ok(self) -> bool:
        """Whether every scoring and output filesystem has at least --disk-reserve free."""
        reserve = self.options.disk_reserve
        return not reserve or all((r := disk.room(p)) is None or r.bytes >= reserve
                                  for p in self.filesystems)

    def admission(self) -> dict[str, object]:
        """What a pair starts with, for its verdict's ``limits`` (measured now)."""
        available = mem_available()
        rooms = [r.bytes for p in self.filesystems if (r := disk.room(p)) is not None]
        free = min(rooms) if rooms else None
        reserve = self.options.disk_reserve
        return {"memory_available_at_start": available,
                "started_below_memory": available is not None
                and available < self.options.memory_limit,
                "disk_free_at_start": free,
                "started_below_reserve": bool(reserve and free is not None and free < reserve)}

    def _context(self, inputs: Sequence[Path], tools: Tools, caller_env: Mapping[str, str],
                 root: Path, ident: Identity, preflight: Preflight) -> pair.RunContext:
        """Everything fixed for the run, computed once: masks cover whole directories (the
        scoring root, --out, every input, the private roots), never one per pair."""
        options, catalog = self.options, self.catalog
        shared = catalog.shared_packages
        # --work-dir holds other runs' scoring roots too (live or killed): hide it whole.
        private = (*options.private, *([options.work_dir] if options.work_dir else []),
                   *(sandbox.default_private_roots(inputs, self.out_dir)
                     if options.private_defaults else ()))
        keep = [tools.toolchain.root, tools.bwrap.path, catalog.root, *([shared] if shared else [])]
        mounts = sandbox.run_masks(scoring_root=root, out_dir=self.out_dir, inputs=inputs,
                                   private=private, keep=keep,
                                   packages=[shared] if shared else [])
        work = [options.work_dir] if options.work_dir else []
        settings = driver.DriverSettings(
            toolchain=tools.toolchain, bwrap=tools.bwrap.path, caller_env=caller_env,
            timeout=options.timeout, writable_roots=(root, self.out_dir, *work),
            mounts=mounts, max_file_bytes=options.max_written_file_bytes,
            memory_limit=options.memory_limit, max_processes=options.max_processes,
            paranoid=options.paranoid,
            disk_bytes=options.disk_limit, disk_files=options.disk_files,
            disk_reserve=options.disk_reserve, runner=tools.runner)
        limits = ResourceLimits(memory_bytes=options.memory_limit,
                                max_processes=options.max_processes, mechanism="none",
                                disk_bytes=options.disk_limit, disk_files=options.disk_files,
                                disk_reserve_bytes=options.disk_reserve)
        space = disk.SpaceWatch((str(root), str(self.out_dir)), options.disk_reserve or 0)
        return pair.RunContext(problems=catalog.problems, settings=settings, ident=ident,
                               scoring_root=root, out_dir=self.out_dir, shared_packages=shared,
                               mounts=mounts, probes_skipped=preflight.skipped,
                               keep_work=options.keep_work, space=space, limits=limits)

    def verdict_path(self, item: Planned) -> Path:
        return pair.verdict_path(self.out_dir, item.sid, item.pid)

    def score(self, item: Planned, sub: intake.Intake | None, note: str | None,
              admitted: Mapping[str, object]) -> None:
        """Worker thread: score one pair, write its verdict, report to the admission loop."""
        verdict: Verdict | None = None
        fault: str | None = None
        try:
            if note is not None:
                verdict = resume.error_verdict(item.plan, self.ctx.problems[item.pid],
                                               self.ctx.ident, note, item.key, self.ctx.limits)
                write_model(self.verdict_path(item), verdict)
            else:
                base = sub or item.plan
                entry = next((e for e in base.problems if e.problem_id == item.pid), None)
                job = pair.PairJob(base, item.pid, entry, item.key,
                                   released=lambda: self.done.put(_Released(item)),
                                   admitted=admitted)
                verdict = pair.run_pair(job, self.ctx)
        except (OutputError, OSError) as exc:  # nothing further could be recorded
            fault = str(exc)
        if self.stop.signum is not None and verdict is not None and note is None:
            self.verdict_path(item).unlink(missing_ok=True)  # the kill may have decided it
            verdict = None
        self.done.put(_Done(item, verdict, fault))


def _plan(ids: Sequence[tuple[str, Path]], catalog: Catalog, options: RunOptions,
          ident: Identity, preflight: Preflight, unchanged: dict[str, frozenset[str]]
          ) -> tuple[list[intake.Intake], list[Planned]]:
    """Intake every input once, keeping no bytes, and list the pairs in input order.

    ``unchanged`` receives each submission's unchanged problems: their pairs are decided from
    the bytes read here (the verdict names the planned digest), never read again."""
    problem_ids = frozenset(catalog.problems)
    plans: list[intake.Intake] = []
    items: list[Planned] = []
    for _, path in ids:
        read = intake.read_submission(path, problem_ids, options.limits)
        if read.rejection is None:  # decided now, while the bytes are here (design §5.5)
            unchanged[read.submission_id] = frozenset(
                e.problem_id for e in read.problems
                if pair.unchanged_at_plan(e, catalog.problems.get(e.problem_id)))
        plan = resume.without_data(read)
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
    return verdict if verdict.resume_key == key and verdict.verdict != "error" else None


def run_batch(inputs: Sequence[Path], catalog: Catalog, tools: Tools, options: RunOptions,
              caller_env: Mapping[str, str],
              on_verdict: Callable[[Verdict], None] | None = None,
              on_progress: Callable[[Progress], None] | None = None, *,
              out_lock: lock.OutLock | None = None,
              probe: Callable[[bool], Preflight] | None = None) -> Summary:
    """Score every (submission, problem) pair and write verdicts and ``summary.json``.

    ``out_lock``: ``options.out_dir``'s lock, already taken by the caller (who releases it);
    else the batch takes it. ``probe``: called once after planning and before any pair is
    scored, with whether any pair needs a sandbox (False when every pair is kept or decided at
    intake); it returns the run's preflight record (its ``skipped`` must equal that of
    ``options.preflight``, which the resume keys use) or raises ``SetupError`` to refuse.
    """
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    inputs = [p.absolute() for p in inputs]
    ids = check_inputs(inputs)
    _check_paths(inputs, options, catalog, tools)
    options.out_dir.mkdir(parents=True, exist_ok=True)
    out_dir = options.out_dir.resolve()
    if out_lock is not None and out_lock.out_dir != out_dir:
        raise UsageError(f"the lock given is for {out_lock.out_dir}, not --out {out_dir}")
    held = lock.OutLock(out_dir) if out_lock is None else None
    stop = Stop()  # from here on, SIGINT/SIGTERM end the run with an `interrupted` summary
    try:
        with signals(stop):
            planned = _prepare(ids, catalog, tools, options, out_dir)
        # The probes run outside the run's handlers, as before a run: Ctrl-C stops them at once
        # (KeyboardInterrupt) rather than letting every remaining probe run first.
        if probe is not None and stop.signum is None:
            planned = planned._replace(preflight=probe(any(
                i.order not in planned.kept
                and i.pid not in planned.unchanged.get(i.sid, frozenset())
                and _needs_sandbox(i, catalog)
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


class _Prepared(NamedTuple):
    """A planned run: what it scores and keeps, decided before the probes."""

    options: RunOptions  # with the path bound for this run's workspaces
    ident: Identity
    preflight: Preflight
    plans: list[intake.Intake]
    items: list[Planned]  # this shard's
    digest: str  # of the whole batch
    batch: dict[str, tuple[str, ...]]
    kept: dict[int, Verdict]  # by Planned.order: verdicts on disk that resume reuses
    unchanged: dict[str, frozenset[str]]  # by submission: problems planning found unchanged


def _prepare(ids: Sequence[tuple[str, Path]], catalog: Catalog, tools: Tools,
             options: RunOptions, out_dir: Path) -> _Prepared:
    lock.remove_stray_temps(out_dir)
    options = _bound_paths(options)
    ident = identity(catalog, tools)
    preflight = options.preflight or not_probed(tools)
    unchanged: dict[str, frozenset[str]] = {}
    plans, items = _plan(ids, catalog, options, ident, preflight, unchanged)
    digest = batch_digest((i.sid, i.pid) for i in items)
    batch = batch_map((i.sid, i.pid) for i in items) if options.shard is not None else {}
    if options.shard is not None:
        items = [i for i in items if in_shard(i.sid, i.pid, options.shard)]
    # Decided once, here: what is kept is known before the probes, which run only when a pair
    # still needs a sandbox (the scheduler reuses exactly these, never re-reads the files).
    kept = {} if options.rescore else {
        i.order: v for i in items if (v := _reusable(pair.verdict_path(out_dir, i.sid, i.pid),
                                                     i.key)) is not None}
    return _Prepared(options, ident, preflight, plans, items, digest, batch, kept, unchanged)


def _needs_sandbox(item: Planned, catalog: Catalog) -> bool:
    """Whether scoring the pair runs Lake; a pair decided at intake does not (``pair._score``:
    a rejected submission or entry is ``invalid_submission``, starters only ``unchanged``)."""
    plan = item.plan
    entry = next((e for e in plan.problems if e.problem_id == item.pid), None)
    if plan.rejection is not None or entry is None or entry.rejection is not None:
        return False
    starter = catalog.problems[item.pid].starter  # the plan has digests, not bytes
    return not (entry.files and all(
        f.relpath in starter and hashlib.sha256(starter[f.relpath]).hexdigest() == f.sha256
        for f in entry.files))


def _run(inputs: Sequence[Path], catalog: Catalog, tools: Tools,
         caller_env: Mapping[str, str], out_dir: Path, stop: Stop, started_at: str,
         on_verdict: Callable[[Verdict], None] | None,
         on_progress: Callable[[Progress], None] | None, planned: _Prepared) -> Summary:
    options, ident, preflight, plans, items, digest, batch, kept, unchanged = planned
    run_dir = _run_dir(options)
    try:
        run = _Run(inputs, catalog, tools, options, caller_env, out_dir, run_dir.path,
                   ident, preflight, stop)
        run.kept = kept
        run.unchanged_ids = unchanged
        try:
            results = _Scheduler(run, items, on_verdict, on_progress).schedule()
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
    return _summary(started_at, ident, preflight, catalog, plans, items, results, out_dir,
                    run, shard, resume.verdict_options(options, preflight))


def _bound_paths(options: RunOptions) -> RunOptions:
    """Intake's path limit for where this run's workspaces will be, with the longest ids.

    A relpath that would pass PATH_MAX under the real scoring root is then a pair rejection
    naming the entry, never ENAMETOOLONG while the workspace is written.
    """
    parent = options.scoring_root or options.work_dir or Path(tempfile.gettempdir())
    worst = (Path(os.path.realpath(parent)) / (lock.RUN_PREFIX + "x" * 16) / ("x" * _ID_MAX)
             / ("x" * _ID_MAX) / "workspace")
    bound = min(options.limits.max_path_bytes, max_path_bytes_under(str(worst)))
    return options._replace(limits=options.limits.model_copy(update={"max_path_bytes": bound}))


def _run_dir(options: RunOptions) -> lock.RunDir:
    """This run's scoring root; first reclaim what killed runs left in the same place."""
    if options.scoring_root is not None:
        return lock.RunDir(options.scoring_root, exact=True)
    parent = options.work_dir or Path(tempfile.gettempdir())
    parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    lock.reclaim(parent, tree_removal.remove_tree)
    return lock.RunDir(parent)


class _Scheduler:
    """The admission loop (main thread): FIFO, at most ``jobs`` pairs and enough memory."""

    def __init__(self, run: _Run, items: Sequence[Planned],
                 on_verdict: Callable[[Verdict], None] | None,
                 on_progress: Callable[[Progress], None] | None) -> None:
        self.run, self.items = run, items
        self.on_verdict, self.on_progress = on_verdict, on_progress
        self.results: dict[int, PairSummary] = {}
        self.counts = dict.fromkeys(_OUTCOMES, 0)
        self.remaining: dict[str, int] = {}
        for item in items:
            self.remaining[item.sid] = self.remaining.get(item.sid, 0) + 1
        self.loaded: dict[str, tuple[intake.Intake | None, str | None]] = {}
        self.running = 0  # pairs holding a -j slot: admitted, processes not yet gone
        self.removing: set[int] = set()  # pairs released from their slot, tree being removed
        self.retry: list[tuple[Planned, Verdict]] = []  # ended disk_short: to score again alone
        self.retried: set[int] = set()
        self.entries: dict[str, dict[str, intake.ProblemEntry]] = {}  # of loaded submissions

    def record(self, item: Planned, verdict: Verdict, kept: bool = False) -> None:
        self.results[item.order] = PairSummary(
            submission=item.sid, problem=item.pid, verdict=verdict.verdict,
            execution=verdict.execution, reason=verdict.reason.code,
            path=str(self.run.verdict_path(item).relative_to(self.run.out_dir)))
        self.counts[verdict.verdict] += 1
        key, run = self.run.options.sign_key, self.run
        if key is not None:  # --sign-key: sign every verdict recorded, scored or reused
            fault = key.sign(run.verdict_path(item), run.out_dir, run.signed_options)
            if fault is not None and run.stop.fault is None:
                run.stop.fault = fault
                run.stop.event.set()
        if self.on_verdict is not None:
            self.on_verdict(verdict)
        self.tell(verdict, kept)

    def finish(self, done: _Done | _Released, admitted: bool = True) -> None:
        if isinstance(done, _Released):
            self.running -= 1
            self.removing.add(done.item.order)
            return
        if done.item.order in self.removing:
            self.removing.discard(done.item.order)
        elif admitted:
            self.running -= 1
        stop = self.run.stop
        if done.fault is not None and stop.fault is None:
            stop.fault = done.fault
            stop.event.set()
        if (done.verdict is not None and pair.worth_another_try(done.verdict)
                and done.item.order not in self.retried and not stop.event.is_set()):
            self.retry.append((done.item, done.verdict))  # once more, alone, at the end
            return
        self.settle(done.item, done.verdict)

    def settle(self, item: Planned, verdict: Verdict | None) -> None:
        """The pair's last word in this run: record its verdict, drop bytes no pair needs."""
        self.remaining[item.sid] -= 1
        if self.remaining[item.sid] == 0:
            self.loaded.pop(item.sid, None)  # its last pair ended: drop the bytes
            self.entries.pop(item.sid, None)
        if verdict is not None:
            self.record(item, verdict)

    def drain(self, block: bool) -> None:
        try:
            self.finish(self.run.done.get(timeout=_POLL) if block else self.run.done.get_nowait())
            while True:
                self.finish(self.run.done.get_nowait())
        except queue.Empty:
            pass

    def unchanged(self, item: Planned) -> bool:
        """Record ``item`` here when planning found it unchanged (``pair.write_unchanged``):
        no worker, no scoring directory, no second read; False when it needs a worker."""
        run = self.run
        if item.pid not in run.unchanged_ids.get(item.sid, frozenset()):
            return False
        entries = self.entries.get(item.sid)
        if entries is None:
            entries = self.entries[item.sid] = {e.problem_id: e for e in item.plan.problems}
        try:
            verdict = pair.write_unchanged(
                pair.PairJob(item.plan, item.pid, entries[item.pid], item.key), run.ctx)
        except OutputError as exc:
            self.finish(_Done(item, None, str(exc)), admitted=False)
            return True
        run.unsynced = True
        self.finish(_Done(item, verdict, None), admitted=False)
        return True

    def admit(self, item: Planned) -> None:
        run = self.run
        if self.unchanged(item):
            return
        self.drain(False)
        while not run.stop.event.is_set() and (
                self.running >= run.jobs
                or (self.running > 0 and not _memory_ok(run.options.memory_limit))
                or ((self.running or self.removing) and not run.room_ok())):
            self.drain(True)
        if run.stop.event.is_set():
            return
        sub, note = self.loaded.get(item.sid) or _load(item, run)
        self.loaded[item.sid] = (sub, note)
        self.running += 1
        threading.Thread(target=run.score, args=(item, sub, note, run.admission()),
                         name=f"pair-{item.order}").start()
        self.tell(None)

    def tell(self, verdict: Verdict | None, kept: bool = False) -> None:
        if self.on_progress is not None:
            self.on_progress(Progress(len(self.items), len(self.results), self.running,
                                      self.counts, verdict, kept))

    def schedule(self) -> dict[int, PairSummary]:
        run = self.run
        self.tell(None)
        for item in self.items:
            if run.stop.event.is_set():
                break
            if not run.options.rescore:
                reused = run.kept.get(item.order)
                if reused is not None:
                    self.remaining[item.sid] -= 1
                    run.reused += 1
                    self.record(item, reused, kept=True)
                    continue
            self.admit(item)
        last_kill = time.monotonic()
        while self.running > 0 or self.removing or self.retry:
            if self.retry and not (self.running or self.removing):
                item, first = self.retry.pop(0)
                self.retried.add(item.order)
                if run.stop.event.is_set():  # no second try: the first verdict stands
                    self.settle(item, first)
                else:  # nothing else in flight: the filesystem is this pair's alone
                    self.admit(item)
                continue
            self.drain(True)
            if run.stop.signum is not None and time.monotonic() - last_kill > 1:
                terminate_children()  # a pair admitted just before the signal started since
                last_kill = time.monotonic()
        return self.results


def _memory_ok(limit: int) -> bool:
    available = mem_available()
    return available is None or available >= limit


def _load(item: Planned, run: _Run) -> tuple[intake.Intake | None, str | None]:
    """Read a submission again for its first admitted pair; it must still be what was planned."""
    if item.plan.rejection is not None:
        return None, None  # whole-submission rejection: the plan says all there is to say
    try:
        sub = intake.read_submission(item.source, run.problem_ids, run.options.limits)
    except Exception as exc:  # noqa: BLE001 - this submission's pairs are errors, not the run
        return None, f"submission could not be read again: {type(exc).__name__}: {exc}"
    if sub.digest != item.digest:
        return None, (f"submission changed after planning (digest {item.digest[:12]} became "
                      f"{sub.digest[:12]}); not scored")
    return sub, None


def _summary(started_at: str, ident: Identity, preflight: Preflight, catalog: Catalog,
             plans: Sequence[intake.Intake], items: Sequence[Planned],
             results: Mapping[int, PairSummary], out_dir: Path, run: _Run,
             shard: ShardInfo | None, options: dict[str, object] | None = None) -> Summary:
    every = tuple(results[i.order] for i in items if i.order in results)
    pairs, unchanged = compact_pairs(every)
    counts = dict.fromkeys(_OUTCOMES, 0)
    tallies: dict[str, dict[str, int]] = {p.submission_id: {} for p in plans}
    for p in every:
        counts[p.verdict] += 1
        tally = tallies[p.submission]
        tally[_TALLY[p.verdict]] = tally.get(_TALLY[p.verdict], 0) + 1
    failed = any(p.verdict == "error" or p.execution in INFRASTRUCTURE_FAILURES for p in pairs)
    signum = run.stop.signum
    exit_code = 128 + signum if signum is not None else 1 if failed or run.stop.fault else 0
    planned = {(i.sid, i.pid) for i in items}
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
        counts=counts, pairs=pairs, exit_code=exit_code, shard=shard,
        interrupted=signum is not None, not_scored=len(items) - len(every),
        reused=run.reused, jobs=run.jobs, options=options,
        signing_key=run.options.sign_key.fingerprint if run.options.sign_key else None)
    try:
        if run.unsynced:  # the fast path's verdicts are durable before a summary names them
            sync_filesystem(out_dir)
            run.unsynced = False
        write_model(out_dir / "summary.json", summary)
        (out_dir / REFUSED_SUMMARY).unlink(missing_ok=True)  # this run supersedes a refusal
    except OSError as exc:
        raise OutputError(f"cannot write {out_dir / 'summary.json'}: {exc}") from exc
    if run.stop.fault is not None:
        raise OutputError(run.stop.fault)
    return summary


def _scored_summary(path: Path) -> bool:
    """Whether ``path`` is the summary of a run that planned and scored (not a refusal)."""
    try:
        return Summary.model_validate_json(path.read_bytes()).refused is None
    except (OSError, ValueError):
        return False


def write_refusal(out_dir: Path, catalog: Catalog, tools: Tools, preflight: Preflight,
                  reason: str, started_at: str, out_lock: lock.OutLock | None = None) -> Path:
    """Record a run refused after its probes ran (no submission read, no pair) in ``out_dir``.

    The summary has the probes' outcome, zero pairs, ``exit_code`` 2 and ``refused``. It is
    written atomically while holding ``out_dir``'s lock (a run holding it makes this raise
    ``UsageError``). It goes to ``summary.json`` unless that file is an earlier run's summary of
    scored pairs, which describes verdicts still on disk and is kept: then to
    ``summary.refused.json``. ``out_lock``: the lock, already held by the caller (who keeps
    it). Returns the path written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    held = lock.OutLock(out_dir.resolve()) if out_lock is None else None
    try:
        summary = Summary(
            started_at=started_at,
            finished_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            identity=identity(catalog, tools), preflight=preflight,
            problems=tuple(catalog.problems), submissions=(),
            counts=dict.fromkeys(_OUTCOMES, 0), pairs=(), exit_code=2, refused=reason)
        target = out_dir / "summary.json"
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
