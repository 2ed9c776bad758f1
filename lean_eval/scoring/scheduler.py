"""Run a planned batch's pairs over worker threads: the admission loop and its workers.

Invariants (design §5.5 "Admission"):
- FIFO in input order: a pair waiting for a slot, memory or disk (:meth:`Scheduler.admit`)
  holds back those behind it; with nothing else in flight it starts at once, its ``limits``
  recording what it started with.
- Each pair runs on its own thread, which lives until its tree is reaped (its reaper's
  parent-death signal is tied to that thread). Its slot is freed once its processes are gone
  (``_Released``); a full ``--out`` is known only when its verdict is written, so the pair
  admitted into that slot still runs, and nothing is admitted after.
- A pair ``pair.worth_another_try`` names is scored once more, alone, after every other pair.
- After SIGINT/SIGTERM nothing more is admitted, and the running pairs' trees are killed and
  their verdicts discarded, each with its log.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from lean_eval.benchmark.catalog import Catalog
from lean_eval.errors import OutputError
from lean_eval.intake import reader
from lean_eval.records import kinds, out_layout
from lean_eval.records.verdict import Identity, PairSummary, Preflight, Verdict
from lean_eval.scoring import pair, sizing
from lean_eval.scoring.options import Planned, RunOptions, Tools
from lean_eval.scoring.pair_settings import run_context
from lean_eval.supervise import disk
from lean_eval.supervise.interrupt import Stop, terminate_children

OUTCOMES: tuple[str, ...] = tuple(kinds.OUTCOMES)
_POLL = 0.2


class Progress(NamedTuple):
    """What the console shows after each event: totals, and the verdict that just finished."""

    total: int
    done: int
    running: int
    counts: Mapping[str, int]
    verdict: Verdict | None
    kept: bool = False  # the verdict is an earlier run's, reused by resume


class _Done(NamedTuple):
    item: Planned
    verdict: Verdict | None  # None: discarded (interrupted) or never produced
    fault: str | None  # the output directory could not be written


class _Released(NamedTuple):
    """The pair's processes are gone; its tree is being removed."""

    item: Planned


class RunState:
    """State of one run shared by the admission loop and its workers."""

    def __init__(self, inputs: Sequence[Path], catalog: Catalog, tools: Tools,
                 options: RunOptions, caller_env: Mapping[str, str], out_dir: Path,
                 root: Path, ident: Identity, preflight: Preflight, stop: Stop) -> None:
        self.catalog, self.options, self.out_dir = catalog, options, out_dir
        self.problem_ids = frozenset(catalog.problems)
        self.starters = {pid: ws.starter for pid, ws in catalog.problems.items()}
        self.ctx = run_context(inputs, catalog, tools, options, caller_env, out_dir, root,
                               ident, preflight)
        self.done: queue.SimpleQueue[_Done | _Released] = queue.SimpleQueue()
        self.stop = stop
        self.jobs = options.jobs or sizing.default_jobs(options.pair_limits.memory_limit)
        self.reused = 0
        self.kept: dict[int, Verdict] = {}  # by Planned.order: verdicts resume reuses
        self.unsynced = False  # durable=False verdicts since the last sync (summary.write_summary)
        self.unchanged_ids: dict[str, frozenset[str]] = {}  # by submission, decided at planning
        self.filesystems = disk.distinct_filesystems((str(root), str(out_dir)))
        self.watchdog_pairs = 0  # pairs scored now whose limits only the watchdog enforced

    def room_ok(self) -> bool:
        """Whether every scoring and output filesystem has at least --disk-reserve free."""
        reserve = self.options.disk_reserve
        return not reserve or all((r := disk.room(p)) is None or r.bytes >= reserve
                                  for p in self.filesystems)

    def admission(self) -> dict[str, object]:
        """What a pair starts with, for its verdict's ``limits`` (measured now)."""
        available = sizing.mem_available()
        rooms = [r.bytes for p in self.filesystems if (r := disk.room(p)) is not None]
        free = min(rooms) if rooms else None
        reserve = self.options.disk_reserve
        return {"memory_available_at_start": available,
                "started_below_memory": available is not None
                and available < (self.options.pair_limits.memory_limit or 0),
                "disk_free_at_start": free,
                "started_below_reserve": bool(reserve and free is not None and free < reserve)}

    def verdict_path(self, item: Planned) -> Path:
        return out_layout.verdict_path(self.out_dir, item.sid, item.problem_id)

    def score(self, item: Planned, sub: reader.Intake | None, note: str | None,
              admitted: Mapping[str, object]) -> None:
        """Worker thread: score one pair, write its verdict, report to the admission loop."""
        verdict: Verdict | None = None
        fault: str | None = None
        try:
            if note is not None:
                job = pair.PairJob(item.plan, item.problem_id, None, item.key)
                verdict = pair.write_error(job, self.ctx, note)
            else:
                base = sub or item.plan
                entry = next((e for e in base.problems if e.problem_id == item.problem_id), None)
                job = pair.PairJob(base, item.problem_id, entry, item.key,
                                   released=lambda: self.done.put(_Released(item)),
                                   admitted=admitted)
                verdict = pair.run_pair(job, self.ctx)
        except (OutputError, OSError) as exc:  # nothing further could be recorded
            fault = str(exc)
        if self.stop.signum is not None and verdict is not None and note is None:
            self.verdict_path(item).unlink(missing_ok=True)  # the kill may have decided it
            # and its log with it: no log is left without its verdict (a resume rewrites both)
            out_layout.log_path(self.out_dir, item.sid, item.problem_id).unlink(missing_ok=True)
            verdict = None
        self.done.put(_Done(item, verdict, fault))


class Scheduler:
    """The admission loop, on the main thread (module invariants)."""

    def __init__(self, run: RunState, items: Sequence[Planned],
                 on_verdict: Callable[[Verdict], None] | None,
                 on_progress: Callable[[Progress], None] | None) -> None:
        self.run, self.items = run, items
        self.on_verdict, self.on_progress = on_verdict, on_progress
        self.results: dict[int, PairSummary] = {}
        self.counts = dict.fromkeys(OUTCOMES, 0)
        self.remaining: dict[str, int] = {}
        for item in items:
            self.remaining[item.sid] = self.remaining.get(item.sid, 0) + 1
        self.loaded: dict[str, tuple[reader.Intake | None, str | None]] = {}
        self.running = 0  # pairs holding a -j slot: admitted, processes not yet gone
        self.removing: set[int] = set()  # pairs released from their slot, tree being removed
        self.retry: list[tuple[Planned, Verdict]] = []  # pair.worth_another_try: again, alone
        self.retried: set[int] = set()
        self.entries: dict[str, dict[str, reader.ProblemEntry]] = {}  # of loaded submissions

    def record(self, item: Planned, verdict: Verdict, kept: bool = False) -> None:
        self.results[item.order] = PairSummary(
            submission=item.sid, problem=item.problem_id, verdict=verdict.verdict,
            execution=verdict.execution, reason=verdict.reason.code,
            path=str(self.run.verdict_path(item).relative_to(self.run.out_dir)))
        self.counts[verdict.verdict] += 1
        if not kept and verdict.limits is not None and verdict.limits.mechanism == "watchdog":
            self.run.watchdog_pairs += 1
        key, run = self.run.options.sign_key, self.run
        if key is not None:  # --sign-key: sign every verdict recorded, scored or reused
            fault = key.sign(run.verdict_path(item), run.out_dir)
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
            self.loaded.pop(item.sid, None)
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
        """Record ``item`` here if planning found it unchanged; False when it needs a worker."""
        run = self.run
        if item.problem_id not in run.unchanged_ids.get(item.sid, frozenset()):
            return False
        entries = self.entries.get(item.sid)
        if entries is None:
            entries = self.entries[item.sid] = {e.problem_id: e for e in item.plan.problems}
        try:
            verdict = pair.write_unchanged(pair.PairJob(
                item.plan, item.problem_id, entries[item.problem_id], item.key), run.ctx)
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
                or (self.running > 0 and not sizing.memory_ok(run.options.pair_limits.memory_limit))
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


def _load(item: Planned, run: RunState) -> tuple[reader.Intake | None, str | None]:
    """Read a submission again for its first admitted pair; it must still be what was planned."""
    if item.plan.rejection is not None:
        return None, None  # whole-submission rejection: the plan says all there is to say
    try:
        sub = reader.read_submission(item.source, run.problem_ids, run.options.limits,
                                     run.starters)
    except Exception as exc:  # noqa: BLE001 - this submission's pairs are errors, not the run
        return None, f"submission could not be read again: {type(exc).__name__}: {exc}"
    if sub.digest != item.digest:
        return None, (f"submission changed after planning (digest {item.digest[:12]} became "
                      f"{sub.digest[:12]}); not scored")
    return sub, None
