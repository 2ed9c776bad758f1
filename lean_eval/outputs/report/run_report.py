"""An output directory for people and CI systems: loading it (through ``outputs.outdir``) and
the ``RunReport`` document every format renders (design §5.5 "Reports").

Invariants (SECURITY.md invariant 13):
- Every string a submission or a build controls reaches the console as ``rich.text.Text`` or
  through ``rich.markup.escape``, so ``[bold red]x`` cannot raise ``MarkupError``, restyle or
  hide text; every format shows bidi and zero-width controls as ``\\uXXXX`` (``visible``).
- Pairs no run scored and submissions without a problem directory (with intake's hint) are
  shown in every format, never silently absent.
- ``failures`` (``scoring.gate``, re-exported here) alone decides which pairs trip
  ``--fail-on``, for ``run-eval`` and ``report``; a pair no run scored trips every gate.
- A pair's verdict, execution and reason are its verdict file's (``Run.summary``); a summary
  line that says otherwise is named in ``disagreements`` and beside the pair (SECURITY.md
  invariant 21); ``Run.recorded`` is the summary as written, for ``verify`` and ``export``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from lean_eval.errors import UsageError
from lean_eval.outputs import outdir
from lean_eval.outputs.report.names import FORMATS, Format  # noqa: F401 - named there, once
from lean_eval.records import kinds, out_layout
from lean_eval.records.run_report import PairReport, RunReport, SubmissionReport
from lean_eval.records.verdict import (
    TALLY,
    PairRef,
    PairSummary,
    Summary,
    Tally,
    Verdict,
    compact_pairs,
)
from lean_eval.scoring.gate import failures as failures  # noqa: PLC0414 - re-exported
from lean_eval.scoring.gate import not_scored as not_scored  # noqa: PLC0414 - re-exported
from lean_eval.scoring.gate import scored_nothing as scored_nothing  # noqa: PLC0414 - re-exported
from lean_eval.scoring.shard import shard_of

FAIL_ON = kinds.FAIL_ON  # what --fail-on accepts


# Bidi embeddings, overrides, isolates and marks, and zero-width characters: they reorder or
# hide text without being seen (the "Trojan Source" characters).
_INVISIBLE = "\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff"
_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f{_INVISIBLE}]")
_HIDDEN = re.compile(f"[{_INVISIBLE}]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with controls shown as ``\\xNN`` (bidi and zero-width ones as ``\\uXXXX``)."""
    return _CONTROL.sub(_escaped, text)


def visible(text: str) -> str:
    """``text`` with bidi and zero-width controls shown as ``\\uXXXX`` (lines kept)."""
    return _HIDDEN.sub(_escaped, text)


def detail(verdict: str, reason: str, execution: str) -> str:
    """The reason code and execution status, only where they add to the verdict."""
    parts = [] if reason in (verdict, "accepted", "unchanged") else [reason]
    if execution not in ("completed", "not_run"):
        parts.append(execution)
    return ", ".join(parts)


def why_not_scored(summary: Summary, ref: PairRef) -> str:
    for text in summary.missing_shards:
        k, n = (int(x) for x in text.split("/"))
        if shard_of(ref.submission, ref.problem, n) == k:
            return f"not scored: its shard {text} is missing from the merge"
    return NO_VERDICT


NO_VERDICT = ("not scored: no run recorded a verdict for it (interrupted or stopped); a re-run "
              "scores it")


def unscored_count(summary: Summary, missing: Sequence[PairRef]) -> str:
    n = max(summary.not_scored, len(missing))
    shards = f" (missing shard(s) {', '.join(summary.missing_shards)})" \
        if summary.missing_shards else ""
    return f"{n} not scored{shards}" if n or shards else ""


def no_problem_directory(summary: Summary) -> tuple[tuple[str, str | None], ...]:
    """(id, hint) of each submission in which intake found no problem directory."""
    return tuple((s.id, s.hint) for s in scored_nothing(summary) if s.rejection is None)


# --- lean-eval report OUT: one output directory, rendered -----------------------------------


class Run(NamedTuple):
    out_dir: Path
    summary: Summary  # as its verdict files say (module invariants)
    verdicts: tuple[Verdict | None, ...]  # aligned with every_pair(); None: unreadable
    logs: tuple[bool, ...] = ()  # aligned with every_pair(): a log is beside it
    recorded: Summary | None = None  # summary.json as written (None: ``summary``)
    disagreements: tuple[str, ...] = ()  # "<sid>/<pid>: how its line differs from its file"

    @property
    def written(self) -> Summary:
        return self.recorded or self.summary


def load_run(out_dir: Path) -> Run:
    """The run in ``out_dir``, checked by ``outputs.outdir``."""
    summary = outdir.read_summary(out_dir)
    files = outdir.pair_files(out_dir, summary)
    verdicts = tuple(f.verdict for f in files)
    pairs, disagreements = [], []
    for line, verdict in zip(summary.every_pair(), verdicts, strict=True):
        why = outdir.disagreement(line, verdict) if verdict is not None else None
        if why is not None and verdict is not None:
            disagreements.append(f"{line.submission}/{line.problem}: {why}")
            line = line.model_copy(update={"verdict": verdict.verdict,  # noqa: PLW2901
                                           "execution": verdict.execution,
                                           "reason": verdict.reason.code})
        pairs.append(line)
    said = _as_files_say(summary, pairs) if disagreements else summary
    return Run(out_dir, said, verdicts, tuple(f.log for f in files), summary,
               tuple(disagreements))


def _as_files_say(summary: Summary, every: list[PairSummary]) -> Summary:
    """``summary`` with ``every`` pair line (its files' verdicts), counts and tallies."""
    pairs, unchanged = compact_pairs(tuple(every))
    counts = dict.fromkeys(summary.counts, 0)
    tallies: dict[str, dict[str, int]] = {}
    for p in every:
        counts[p.verdict] = counts.get(p.verdict, 0) + 1
        tally = tallies.setdefault(p.submission, {})
        tally[TALLY[p.verdict]] = tally.get(TALLY[p.verdict], 0) + 1
    return summary.model_copy(update={
        "pairs": pairs, "counts": counts,
        "submissions": tuple(s.model_copy(update={
            "unchanged": unchanged.get(s.id, ()), "tally": Tally(**tallies.get(s.id, {}))})
            for s in summary.submissions)})


def run_report(run: Run) -> RunReport:
    """The output directory as one document."""
    tallies: dict[str, dict[str, int]] = {s.id: dict.fromkeys(TALLY.values(), 0)
                                          for s in run.summary.submissions}
    pairs = []
    logs = run.logs or (False,) * len(run.verdicts)
    every = run.summary.every_pair()
    told = dict(d.split(": ", 1) for d in run.disagreements)
    for pair, verdict, beside in zip(every, run.verdicts, logs, strict=True):
        tally = tallies.setdefault(pair.submission, dict.fromkeys(TALLY.values(), 0))
        tally[TALLY[pair.verdict]] += 1
        # The log beside the verdict file, as the summary names it (relative to the output
        # directory, which may have moved or been merged); else what the verdict recorded.
        beside_log = out_layout.place_of(pair.submission, pair.problem, out_layout.LOG_SUFFIX)
        log = str(beside_log) if beside else verdict.log.path if verdict is not None else None
        pairs.append(PairReport(
            submission=pair.submission, problem=pair.problem, verdict=pair.verdict,
            execution=pair.execution, reason=visible(pair.reason),
            message=visible(_told(told.get(f"{pair.submission}/{pair.problem}"))
                            + verdict.reason.message) if verdict
            else "(verdict file unreadable)",
            wall_seconds=verdict.timings.wall_seconds if verdict else None,
            verdict_path=pair.path, log_path=visible(log) if log is not None else None))
    rejections = {s.id: s.rejection for s in run.summary.submissions}
    hints = dict(no_problem_directory(run.summary))
    return RunReport(
        started_at=visible(run.summary.started_at), finished_at=visible(run.summary.finished_at),
        exit_code=run.summary.exit_code,
        counts={visible(k): v for k, v in run.summary.counts.items()},
        submissions=tuple(SubmissionReport(id=sid, **t, pairs=sum(t.values()),
                                           rejection=visible(rejections.get(sid) or "") or None,
                                           hint=visible(hints.get(sid) or "") or None)
                          for sid, t in tallies.items()),
        pairs=tuple(pairs), not_scored=not_scored(run.summary),
        missing_shards=run.summary.missing_shards,
        disagreements=tuple(visible(d) for d in run.disagreements))


def out_of(doc: RunReport) -> dict[str, int]:
    """Each submission's pairs, those no run scored included: what a matrix's "solved" counts
    out of (3 solved of 5 pairs, 2 unscored, is 3/5, never 3/3)."""
    total = {s.id: s.pairs for s in doc.submissions}
    for ref in doc.not_scored:
        total[ref.submission] = total.get(ref.submission, 0) + 1
    return total


def _told(disagreement: str | None) -> str:
    return f"[{disagreement}; shown as the file says] " if disagreement else ""


def render_json(run: Run) -> str:
    return run_report(run).model_dump_json(indent=2) + "\n"


def failure_kinds(names: Sequence[str]) -> frozenset[str]:
    """The tally kinds ``--fail-on`` names (comma-separated items), checked against FAIL_ON."""
    items = [item.strip() for name in names for item in name.split(",") if item.strip()]
    unknown = [item for item in items if item not in FAIL_ON]
    if unknown:
        raise UsageError(f"--fail-on: unknown kind(s) {', '.join(map(repr, unknown))}; "
                         f"choose from {', '.join(k for k in FAIL_ON if k != 'invalid_submission')}"
                         " (verdict names such as invalid_submission are accepted too)")
    return frozenset(FAIL_ON[item] for item in items)
