"""Replay a recorded run: score its pairs again from the submissions, compare, audit kernels.

Invariants (the pins and statuses: design §5.6):
- Nothing is scored while a pin of the record differs from the replay's, unless
  ``allow_drift``; then every differing pin is named in the report.
- A record is data, never settings: pairs are scored with the replayer's own options (flags
  given, else run-eval's defaults) and probes, unless the replayer says ``skip_probes``. The
  record's options, every recorded verdict's options and limits, and each verdict's resume key
  recomputed from its own fields under the record's options, are compared with those: each
  difference is drift (SECURITY.md invariant 19).
- Pairs are scored by ``scoring.batch.run_batch``, every pair afresh, into a directory that
  overlaps neither the record nor an input; the record is only read.
- ``paranoid`` adds ``lake comparator --paranoid`` and nothing else.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

from lean_eval.benchmark.catalog import Catalog
from lean_eval.errors import ReplayRefusedError, UsageError
from lean_eval.files.atomic import write_model
from lean_eval.files.paths import overlap
from lean_eval.intake import reader
from lean_eval.outputs import outdir
from lean_eval.outputs.report import run_report
from lean_eval.records import out_layout
from lean_eval.records.replay import (
    STATUSES,
    VERDICT_SAYS,
    Drift,
    Judgement,
    ReplayPair,
    ReplayReport,
    Status,
)
from lean_eval.records.verdict import Identity, Preflight, Summary, Verdict
from lean_eval.scoring import batch, classification, resume
from lean_eval.scoring.arguments import Submission, check_ids
from lean_eval.scoring.options import RunOptions, Tools, identity
from lean_eval.scoring.scheduler import Progress
from lean_eval.scoring.shard import Shard
from lean_eval.supervise import resources

Pair = tuple[str, str]
# As merge's: paths differ between machines and are not pins.
IDENTITY_PINS = ("harness_version", "benchmark_commit", "toolchain_name", "bwrap_sha256",
                 "bwrap_version", "bwrap_minimum_version")
FALLBACK_TIMEOUT = 1800.0  # run-eval's default, for a record that does not say its options


class Record(NamedTuple):
    """A run-eval or merge output directory: its summary and every pair's verdict."""

    path: Path
    summary: Summary
    verdicts: Mapping[Pair, Verdict]


class Settings(NamedTuple):
    """How to replay; ``paranoid`` (the audit), ``overrides`` and ``skip_probes`` can change a
    verdict, and only what the replayer gives here (never the record) is used."""

    out_dir: Path | None = None  # None: a temporary directory, removed afterwards
    work_dir: Path | None = None
    keep_work: bool = False
    jobs: int | None = None
    paranoid: bool = False
    # Verdict-changing options to use instead of run-eval's defaults (RunOptions or PairLimits
    # fields: timeout, memory_limit, disk_limit, limits, ...): each that differs from the
    # record is drift.
    overrides: Mapping[str, object] = {}
    skip_probes: bool = False  # --skip-probes: the replayer's choice (the record's is a pin)


class Plan(NamedTuple):

    record: Record
    submissions: tuple[Submission, ...]
    catalog: Catalog  # restricted to the record's problems
    options: RunOptions  # the replayer's, out_dir still to be set
    drift: tuple[Drift, ...]
    skip_probes: bool  # the replayer's choice: the replay's preflight must do the same


def load_record(path: Path) -> Record:
    """The record at ``path``, read as ``report`` reads it; anything unreadable is a refusal."""
    try:
        run = run_report.load_run(path)
    except UsageError as exc:
        raise ReplayRefusedError(f"{exc}; nothing to replay") from exc
    verdicts: dict[Pair, Verdict] = {}
    for entry, verdict in zip(run.summary.every_pair(), run.verdicts, strict=True):
        if verdict is None:
            raise ReplayRefusedError(
                f"{path / out_layout.place_of(entry.submission, entry.problem)}: the recorded "
                f"verdict of {entry.submission}/{entry.problem} is unreadable")
        verdicts[(entry.submission, entry.problem)] = verdict
    return Record(path, run.summary, verdicts)


def _options(settings: Settings, shard: Shard | None) -> RunOptions:
    """The replay's verdict-changing options: run-eval's defaults and the replayer's own
    ``overrides``; never the record's (module invariants)."""
    base = RunOptions(out_dir=Path(), timeout=FALLBACK_TIMEOUT, work_dir=settings.work_dir,
                      keep_work=settings.keep_work, jobs=settings.jobs, rescore=True,
                      shard=shard, paranoid=settings.paranoid)
    tree = {k: v for k, v in settings.overrides.items() if k in resources.PairLimits._fields}
    run = {k: v for k, v in settings.overrides.items() if k not in tree}
    return base._replace(pair_limits=base.pair_limits._replace(**tree),  # type: ignore[arg-type]
                         **run)  # type: ignore[arg-type]


# A verdict's ``limits`` field for each limit option of the record
_LIMIT_FIELDS = (("memory_limit", "memory_bytes"), ("max_processes", "max_processes"),
                 ("disk_limit", "disk_bytes"), ("disk_files", "disk_files"))


def _verdict_drift(verdict: Verdict, recorded: Mapping[str, Any] | None,
                   subject: str) -> list[Drift]:
    """How the recorded verdict disagrees with the record's options: its own options, its
    limits, and its resume key recomputed under them."""
    if recorded is None:
        return []
    own = verdict.options or {}
    found = [Drift(pin=f"option {key}", subject=subject, recorded=_compact(recorded.get(key)),
                   current=f"{VERDICT_SAYS}{_compact(own.get(key))}")
             for key in (sorted({*own, *recorded}) if own else ())
             if own.get(key) != recorded.get(key)]
    for option, field in _LIMIT_FIELDS if verdict.limits is not None else ():
        said = getattr(verdict.limits, field)
        if option in recorded and recorded[option] != said:
            found.append(Drift(pin=f"limit {option}", subject=subject,
                               recorded=_compact(recorded[option]),
                               current=f"{VERDICT_SAYS}{_compact(said)}"))
    if verdict.resume_key is not None:
        key = resume.key_of(verdict.submission.digest, verdict.problem.id,
                            verdict.problem.statement_revision, verdict.trusted_files,
                            verdict.identity, recorded)
        if key != verdict.resume_key:
            found.append(Drift(pin="resume_key", subject=subject, recorded=verdict.resume_key,
                               current=f"{key} under the record's options"))
    return found


def _compact(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _identity_drift(recorded: Identity, current: Identity, subject: str,
                    already: Identity | None = None) -> list[Drift]:
    found = []
    for pin in IDENTITY_PINS:
        was, now = getattr(recorded, pin), getattr(current, pin)
        if was != now and (already is None or getattr(already, pin) == now):
            found.append(Drift(pin=pin, subject=subject, recorded=was, current=now))
    return found


def _files_drift(recorded: Mapping[str, str], current: Mapping[str, str]) -> tuple[str, str]:
    names = sorted(n for n in {*recorded, *current} if recorded.get(n) != current.get(n))

    def show(side: Mapping[str, str]) -> str:
        return "; ".join(f"{n} {side[n][:16] if n in side else 'absent'}" for n in names)

    return show(recorded), show(current)


def plan(record: Record, submissions: Sequence[Path], catalog: Catalog, tools: Tools,
         settings: Settings) -> Plan:
    """Check every pin of the record against this replay, listing each difference."""
    summary = record.summary
    inputs = tuple(p.absolute() for p in submissions)
    ids = check_ids(inputs)
    recorded_subs = {s.id: s for s in summary.submissions}
    for sid, path in ids:
        if sid not in recorded_subs:
            raise ReplayRefusedError(f"submission {path} (id {sid!r}) is not in the record "
                                     f"{record.path}; it lists: "
                                     + (", ".join(sorted(recorded_subs)) or "none"))
    if settings.out_dir is not None and overlap(settings.out_dir, record.path):
        raise ReplayRefusedError(f"--out {settings.out_dir} and the record {record.path} "
                                 "overlap; the replay writes elsewhere")
    shard = Shard(summary.shard.k, summary.shard.n) if summary.shard else None
    options = _options(settings, shard)
    skip = settings.skip_probes
    drift: list[Drift] = []
    current = identity(catalog, tools)
    drift += _identity_drift(summary.identity, current, "run")
    stub = Preflight(skipped=skip, toolchain_path="", bwrap_path="", bwrap_version="",
                     bwrap_sha256="")
    used = {k: v for k, v in resume.verdict_options(options, stub).items() if k != "paranoid"}
    if summary.options is None:
        drift.append(Drift(pin="options", subject="run", recorded=None, current=_compact(used)))
    else:
        for key in sorted({*summary.options, *used}):
            if summary.options.get(key) != used.get(key):
                drift.append(Drift(pin=f"option {key}", subject="run",
                                   recorded=_compact(summary.options.get(key)),
                                   current=_compact(used.get(key))))
    problems = set(summary.problems)
    limits = options.limits
    for sid, path in ids:
        digest = reader.read_submission(path, frozenset(problems), limits).digest
        if digest != recorded_subs[sid].digest:
            drift.append(Drift(pin="submission_digest", subject=sid,
                               recorded=recorded_subs[sid].digest, current=digest))
    given = {sid for sid, _ in ids}
    for (sid, pid), verdict in record.verdicts.items():  # each verdict: any may be edited
        if sid not in given:
            continue
        drift += _identity_drift(verdict.identity, current, f"{sid}/{pid}", summary.identity)
        drift += _verdict_drift(verdict, summary.options, f"{sid}/{pid}")
        workspace = catalog.problems.get(pid)
        if workspace is None:
            drift.append(Drift(pin="problem", subject=pid, recorded="in the benchmark",
                               current=None))
            continue
        if verdict.problem.statement_revision != workspace.problem.statement_revision:
            drift.append(Drift(pin="statement_revision", subject=pid,
                               recorded=str(verdict.problem.statement_revision),
                               current=str(workspace.problem.statement_revision)))
        if dict(verdict.trusted_files) != dict(workspace.digests):
            was, now = _files_drift(verdict.trusted_files, workspace.digests)
            drift.append(Drift(pin="trusted_files", subject=pid, recorded=was, current=now))
    scoped = catalog.model_copy(update={"problems": {
        pid: w for pid, w in catalog.problems.items() if pid in problems}})
    return Plan(record, ids, scoped, options, tuple(dict.fromkeys(drift)), skip)


def check(plan_: Plan, allow_drift: bool) -> None:
    if plan_.drift and not allow_drift:
        raise ReplayRefusedError(
            f"the replay differs from the record {plan_.record.path} in "
            f"{len(plan_.drift)} pin(s); nothing was scored (--allow-drift replays anyway and "
            "names them in the report):\n" + "\n".join(f"  {d.describe()}" for d in plan_.drift))


def judgement(verdict: Verdict) -> Judgement:
    """What the comparison needs of a verdict, with each checker's comparator line."""
    return Judgement(verdict=verdict.verdict, execution=verdict.execution, reason=verdict.reason,
                     checkers=verdict.checkers,
                     checker_lines=tuple(classification.checker_line(c) for c in verdict.checkers))


def compare(recorded: Verdict, new: Verdict | None,
            paranoid: bool) -> tuple[Status, tuple[str, ...]]:
    """The pair's status (design §5.6; the message is not compared: it may name paths and
    times) and, for a kernel disagreement, the rejecting checkers' lines."""
    if new is None:
        return "not_scored", ()
    if (new.verdict, new.reason.code) == (recorded.verdict, recorded.reason.code):
        return "reproduced", ()
    rejecting = tuple(classification.checker_line(c) for c in new.checkers
                      if c.result == "rejected")
    if (paranoid and recorded.verdict == "accepted" and new.verdict == "rejected"
            and new.reason.code == "kernel_rejected" and rejecting):
        return "kernel_disagreement", rejecting
    return "changed", ()


def _new_verdicts(out_dir: Path, summary: Summary) -> dict[Pair, tuple[Verdict | None, str]]:
    found: dict[Pair, tuple[Verdict | None, str]] = {}
    files = outdir.pair_files(out_dir, summary)  # our own output, read as report reads one
    for entry, held in zip(summary.every_pair(), files, strict=True):
        found[(entry.submission, entry.problem)] = (held.verdict, entry.path)
    return found


def replay(plan_: Plan, tools: Tools, preflight: Preflight, caller_env: Mapping[str, str],
           settings: Settings, allow_drift: bool,
           on_progress: Callable[[Progress], None] | None = None) -> ReplayReport:
    """Score the plan's pairs, compare, write ``replay.json`` (unless to a temporary ``out``)."""
    check(plan_, allow_drift)
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    temporary = settings.out_dir is None
    out_dir = (Path(tempfile.mkdtemp(prefix="lean-eval-replay-")) if settings.out_dir is None
               else settings.out_dir)
    try:
        options = plan_.options._replace(out_dir=out_dir, preflight=preflight)
        summary = batch.run_batch(plan_.submissions, plan_.catalog, tools, options,
                                  caller_env, on_progress=on_progress)
        new = _new_verdicts(out_dir.resolve(), summary)
    finally:
        if temporary:
            shutil.rmtree(out_dir, ignore_errors=True)
    given = {s.sid for s in plan_.submissions}
    pairs: list[ReplayPair] = []
    for entry in plan_.record.summary.every_pair():
        key = (entry.submission, entry.problem)
        if entry.submission not in given:
            continue
        recorded = plan_.record.verdicts[key]
        verdict, path = new.get(key, (None, None))
        status, lines = compare(recorded, verdict, settings.paranoid)
        pairs.append(ReplayPair(submission=key[0], problem=key[1], status=status,
                                recorded=judgement(recorded),
                                new=judgement(verdict) if verdict is not None else None,
                                disagreement=lines, path=None if temporary else path))
    counts = {s: sum(p.status == s for p in pairs) for s in STATUSES}
    exit_code = (summary.exit_code if summary.interrupted
                 else 0 if counts["reproduced"] == len(pairs) else 1)
    result = ReplayReport(
        record=str(plan_.record.path), out=None if temporary else str(out_dir),
        started_at=started, finished_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        paranoid=settings.paranoid, allow_drift=allow_drift, drift=plan_.drift, counts=counts,
        pairs=tuple(pairs), exit_code=exit_code)
    if not temporary:
        write_model(out_dir / out_layout.REPLAY, result)
    return result
