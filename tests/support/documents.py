"""Verdicts, summaries and run-eval output directories built from the models, without running
the harness; and the runs the merge, export, signing, replay and report tests share."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lean_eval.files.atomic import write_model
from lean_eval.records.verdict import (
    Identity,
    LogRef,
    PairSummary,
    Preflight,
    ProblemRef,
    Reason,
    ShardInfo,
    SubmissionRef,
    SubmissionSummary,
    Summary,
    Timings,
    Verdict,
    compact_pairs,
)
from lean_eval.scoring import shard

# The one factory of the suite: every verdict, summary and output directory a test writes
# without running the harness is built here, so a model change is made once.

KINDS = ("accepted", "rejected", "invalid_submission", "unchanged", "error")  # summary counts


def make_identity(**changes: Any) -> Identity:
    """A plausible run identity; ``changes`` replace fields."""
    base = {"harness_version": "0.1.0", "benchmark_path": "/bench", "benchmark_commit": "c0ffee",
            "toolchain_name": "leanprover/lean4:v4.22.0", "toolchain_path": "/tc",
            "bwrap_path": "/usr/bin/bwrap", "bwrap_version": "0.12.0", "bwrap_owner": "root",
            "bwrap_setuid": False, "bwrap_sha256": "ab" * 32, "bwrap_minimum_version": "0.12.0"}
    return Identity.model_validate({**base, **changes})


def make_verdict(sid: str, pid: str, outcome: str = "accepted", *, execution: str | None = None,
                 code: str | None = None, message: str = "x", identity: Identity | None = None,
                 source: str | None = None, wall_seconds: float = 0.5,
                 log: LogRef | None = None, **fields: Any) -> Verdict:
    """The verdict of (``sid``, ``pid``); by default an unchanged pair was not run, any other
    completed, and a rejection's reason is ``kernel_rejected``. ``fields`` sets others."""
    if execution is None:
        execution = "not_run" if outcome == "unchanged" else "completed"
    if code is None:
        code = "kernel_rejected" if outcome == "rejected" else outcome
    return Verdict.model_validate({
        "submission": SubmissionRef(id=sid, digest="d" * 64, source=source or f"/in/{sid}"),
        "problem": ProblemRef(id=pid, statement_revision=1), "verdict": outcome,
        "execution": execution, "reason": Reason(code=code, message=message),
        "timings": Timings(wall_seconds=wall_seconds), "identity": identity or make_identity(),
        "log": log or LogRef(path=f"{sid}/{pid}.log", tail=("last line",)), **fields})


def pair_line(verdict: Verdict) -> PairSummary:
    """The summary's line for ``verdict``."""
    return PairSummary(submission=verdict.submission.id, problem=verdict.problem.id,
                       verdict=verdict.verdict, execution=verdict.execution,
                       reason=verdict.reason.code,
                       path=f"{verdict.submission.id}/{verdict.problem.id}.json")


def make_summary(pairs: Sequence[PairSummary], submissions: Sequence[SubmissionSummary], *,
                 problems: Sequence[str], identity: Identity, compact: bool = True,
                 exit_code: int = 0, finished_at: str = "2026-01-01T00:01:00+00:00",
                 shard: ShardInfo | None = None) -> Summary:
    """A run's summary over ``pairs``: counted, and (``compact``, as run-eval writes it) its
    unchanged pairs listed by id in their submission."""
    counts = dict.fromkeys(KINDS, 0)
    for pair in pairs:
        counts[pair.verdict] += 1
    kept, unchanged = compact_pairs(tuple(pairs)) if compact else (tuple(pairs), {})
    return Summary(
        started_at="2026-01-01T00:00:00+00:00", finished_at=finished_at, identity=identity,
        preflight=Preflight(skipped=True, toolchain_path=identity.toolchain_path,
                            bwrap_path=identity.bwrap_path, bwrap_version=identity.bwrap_version,
                            bwrap_sha256=identity.bwrap_sha256),
        problems=tuple(problems),
        submissions=tuple(s.model_copy(update={"unchanged": unchanged[s.id]})
                          if s.id in unchanged else s for s in submissions),
        counts=counts, pairs=kept, exit_code=exit_code, shard=shard)


def write_verdicts(out: Path, verdicts: Sequence[Verdict]) -> None:
    """Each verdict's file under ``out``, and its log where it names one."""
    for v in verdicts:
        write_model(out / v.submission.id / f"{v.problem.id}.json", v)
        if v.log.path is not None:
            (out / v.log.path).write_text(f"log of {v.submission.id}/{v.problem.id}\n",
                                          encoding="utf-8")


# The batch of the merge, export, signing and replay tests: four submissions with one outcome
# each, on three problems.
BATCH_PROBLEMS = ("add_comm_explicit", "double_def", "two_plus_two")
BATCH_SUBMISSIONS = ("alice", "bob", "carol", "dave")
BATCH_OUTCOME = {"alice": "accepted", "bob": "rejected", "carol": "unchanged",
                 "dave": "accepted"}
BATCH = [(s, p) for s in BATCH_SUBMISSIONS for p in BATCH_PROBLEMS]


def write_output(out: Path, pairs: Sequence[tuple[str, str]], *, k: int | None = None,
                 n: int = 2, identity: Identity | None = None,
                 digest: str | None = None, options_digest: str | None = "o" * 64) -> Path:
    """A run-eval output directory holding ``pairs`` of ``BATCH`` (optionally as shard k of
    n)."""
    identity = identity or make_identity()
    verdicts = [make_verdict(sid, pid, BATCH_OUTCOME[sid], identity=identity)
                for sid, pid in pairs]
    write_verdicts(out, verdicts)
    subs = [SubmissionSummary(id=s, source=f"/in/{s}", digest="d" * 64,
                              problems=tuple(p for s2, p in pairs if s2 == s))
            for s in BATCH_SUBMISSIONS]
    info = None if k is None else ShardInfo(
        k=k, n=n, batch_digest=digest or shard.batch_digest(BATCH), options_digest=options_digest,
        batch={} if digest else shard.batch_map(BATCH))
    write_model(out / "summary.json", make_summary(
        [pair_line(v) for v in verdicts], subs, problems=BATCH_PROBLEMS, identity=identity,
        shard=info))
    return out


def shards_of(tmp_path: Path, n: int = 2, **kwargs: Any) -> list[Path]:
    """``BATCH`` as the outputs of its ``n`` shards, ``tmp_path/shard1`` on."""
    return [write_output(tmp_path / f"shard{k}", shard.select(BATCH, k, n), k=k, n=n, **kwargs)
            for k in range(1, n + 1)]


# The report tests' run: every verdict kind, hostile names and control characters.
HOSTILE = ("[bold red]x", "a[/x]", "[link=https://evil]click[/link]", "pipe|star*_[b]")
# (submission, problem, verdict, execution, reason, message)
REPORT_PAIRS = [
    ("good", "two_plus_two", "accepted", "completed", "accepted", "all kernels accepted"),
    ("good", "double_def", "rejected", "completed", "statement_mismatch", "x differs"),
    ("bad", "two_plus_two", "invalid_submission", "not_run", "path_rejected", "a[/x] bad"),
    ("bad", "double_def", "unchanged", "not_run", "unchanged", "starter"),
    ("bad", "multi_hole", "error", "timed_out", "timeout", "deadline \x1b[31m\x00 reached"),
    # ids follow intake's rules (report refuses others); messages and rejections are free text
    ("hostile", "two_plus_two", "rejected", "completed", "kernel_rejected",
     f"{HOSTILE[1]} {HOSTILE[3]}"),
    ("dotted.name_1-x", "two_plus_two", "accepted", "completed", "accepted", "ok"),
]
REJECTION = f"corrupt [blink]archive {HOSTILE[0]} {HOSTILE[3]}"
REPORT_IDENTITY = make_identity(benchmark_path="/b", benchmark_commit=None, toolchain_name="t",
                                toolchain_path="/t", bwrap_sha256="a" * 64)


def report_verdict(sid: str, pid: str, outcome: str, execution: str, code: str,
                   message: str) -> Verdict:
    """One row of ``REPORT_PAIRS`` as a verdict (its log tail carries markup and a bell)."""
    return make_verdict(sid, pid, outcome, execution=execution, code=code, message=message,
                        identity=REPORT_IDENTITY, source="/in", wall_seconds=0.7,
                        log=LogRef(path=None, tail=("tail [red]line[/red]", "\x07bell")))


def report_run(out: Path, pairs: list[tuple[str, str, str, str, str, str]] = REPORT_PAIRS,
               rejected_whole: str | None = "gone") -> Path:
    """An output directory of ``pairs`` (rows as in ``REPORT_PAIRS``), its summary listing each
    pair (unchanged ones too) and ``rejected_whole`` as a submission rejected as a whole."""
    verdicts = [report_verdict(*row) for row in pairs]
    write_verdicts(out, verdicts)
    ids = list(dict.fromkeys(r[0] for r in pairs))
    subs = [SubmissionSummary(id=s, source="/in", digest="d" * 64,
                              problems=tuple(r[1] for r in pairs if r[0] == s)) for s in ids]
    if rejected_whole:
        subs.append(SubmissionSummary(id=rejected_whole, source="/in", digest="d" * 64,
                                      problems=(), rejection=REJECTION))
    write_model(out / "summary.json", make_summary(
        [pair_line(v) for v in verdicts], subs,
        problems=("double_def", "multi_hole", "two_plus_two"), identity=REPORT_IDENTITY,
        compact=False, exit_code=1, finished_at="2026-01-01T00:00:09+00:00"))
    return out
