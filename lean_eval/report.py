"""Render runs and self-checks for people and CI systems: console, markdown, JUnit XML, JSON.

Invariants:
- Every string a submission or a build controls (submission ids, problem ids, paths, messages,
  log tails, rejection texts, hints) reaches the console as ``rich.text.Text`` or through
  ``rich.markup.escape``: a name such as ``[bold red]x`` or ``a[/x]`` can neither raise
  ``MarkupError`` nor restyle or hide console text.
- Bidi and zero-width controls (U+202A-U+202E, U+2066-U+2069, U+200E/F, U+061C, U+200B-U+200D,
  U+2060, U+FEFF) are shown as ``\\uXXXX`` in every format, so no text can be reordered or
  hidden in a review; the console and markdown show other control characters as ``\\xNN``.
- ``report`` renders only what the output directory really holds (``lean_eval/outputs.py``),
  and a summary's pairs no run scored (missing shards, interrupted runs) are shown in every
  format: a "not scored" section, an ``error`` testcase each in JUnit, entries in JSON.
- JUnit XML is built with ``xml.etree`` and stripped of characters XML 1.0 forbids, so any
  standard parser reads it whatever a build printed.
- Markdown escapes table and inline syntax in user strings; a step summary stays under the size
  GitHub accepts (longer pair tables are cut with a note saying how many rows were left out).
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from lean_eval import outputs
from lean_eval.errors import UsageError
from lean_eval.shard import shard_of
from lean_eval.verdict import (
    INFRASTRUCTURE_FAILURES,
    PairRef,
    Summary,
    Verdict,
    write_bytes_atomic,
)

if TYPE_CHECKING:
    from lean_eval.selfcheck import SelfCheck

Format = Literal["table", "markdown", "junit", "json"]
FORMATS: tuple[Format, ...] = ("table", "markdown", "junit", "json")
_STYLE = {"accepted": "green", "rejected": "red", "invalid_submission": "magenta",
          "unchanged": "dim", "error": "bold yellow"}
_TALLY = {"accepted": "solved", "rejected": "rejected", "invalid_submission": "invalid",
          "unchanged": "unchanged", "error": "error"}
STEP_SUMMARY_BUDGET = 900_000  # bytes; GitHub refuses a step summary over 1 MiB


# Bidi embeddings, overrides, isolates and marks, and zero-width characters: they reorder or
# hide text without being seen (the "Trojan Source" characters).
_INVISIBLE = "\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff"
_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f{_INVISIBLE}]")
_HIDDEN = re.compile(f"[{_INVISIBLE}]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with control characters (escape sequences, newlines) shown as ``\\xNN``.

    A name or message can then not move the cursor, recolour or hide what the console shows;
    bidi and zero-width controls are shown as ``\\uXXXX``.
    """
    return _CONTROL.sub(_escaped, text)


def visible(text: str) -> str:
    """``text`` with bidi and zero-width controls shown as ``\\uXXXX`` (lines kept)."""
    return _HIDDEN.sub(_escaped, text)


def _t(text: str, style: str = "") -> Text:
    return Text(printable(text), style=style)


def _detail(verdict: str, reason: str, execution: str) -> str:
    """The reason code and execution status, only where they add to the verdict."""
    parts = [] if reason in (verdict, "accepted", "unchanged") else [reason]
    if execution not in ("completed", "not_run"):
        parts.append(execution)
    return ", ".join(parts)


def verdict_line(verdict: Verdict) -> str:
    """One plain-text line for a finished pair: ``good/two_plus_two  accepted  0.7 s``.

    The result is not markup: print it as ``Text`` (it holds user-controlled names).
    """
    detail = _detail(verdict.verdict, verdict.reason.code, verdict.execution)
    parts = [printable(f"{verdict.submission.id}/{verdict.problem.id}"), verdict.verdict]
    if detail:
        parts.append(detail)
    if verdict.execution != "not_run":
        parts.append(f"{verdict.timings.wall_seconds:.1f} s")
    return "  ".join(parts)


def verdict_text(verdict: Verdict) -> Text:
    """``verdict_line`` with the verdict coloured; safe for any submission or problem name."""
    line = Text(verdict_line(verdict))
    start = len(printable(f"{verdict.submission.id}/{verdict.problem.id}")) + 2
    line.stylize(_STYLE.get(verdict.verdict, ""), start, start + len(verdict.verdict))
    return line


def not_scored(summary: Summary) -> tuple[PairRef, ...]:
    """The pairs no run scored: those a merge lists, and those a submission names without a pair
    (an interrupted run's), in submission order."""
    scored = {(p.submission, p.problem) for p in summary.pairs}
    found = dict.fromkeys((r.submission, r.problem) for r in summary.not_scored_pairs)
    for sub in summary.submissions:
        found.update(dict.fromkeys(key for key in ((sub.id, pid) for pid in sub.problems)
                                   if key not in scored))
    return tuple(PairRef(submission=s, problem=p) for s, p in found if (s, p) not in scored)


def why_not_scored(summary: Summary, ref: PairRef) -> str:
    """One sentence on why a pair has no verdict."""
    for text in summary.missing_shards:
        k, n = (int(x) for x in text.split("/"))
        if shard_of(ref.submission, ref.problem, n) == k:
            return f"not scored: its shard {text} is missing from the merge"
    return ("not scored: no run recorded a verdict for it (interrupted or stopped); a re-run "
            "scores it")


def _unscored_count(summary: Summary, missing: Sequence[PairRef]) -> str:
    n = max(summary.not_scored, len(missing))
    shards = f" (missing shard(s) {', '.join(summary.missing_shards)})" \
        if summary.missing_shards else ""
    return f"{n} not scored{shards}" if n or shards else ""


def summary_table(summary: Summary) -> Table:
    """Every pair of the run, then every pair no run scored."""
    table = Table(title=f"lean-eval: {len(summary.pairs)} pair(s)")
    for column in ("submission", "problem", "verdict", "detail"):
        table.add_column(column, overflow="fold")
    for pair in summary.pairs:
        table.add_row(_t(pair.submission), _t(pair.problem),
                      _t(pair.verdict, _STYLE.get(pair.verdict, "")),
                      _t(_detail(pair.verdict, pair.reason, pair.execution)))
    for ref in not_scored(summary):
        table.add_row(_t(ref.submission), _t(ref.problem), _t("not scored", "bold yellow"),
                      _t(why_not_scored(summary, ref)))
    return table


def print_summary(summary: Summary, console: Console) -> None:
    """The table, submission-level rejections, the counts and the exit code."""
    missing = not_scored(summary)
    if summary.pairs or missing:
        console.print(summary_table(summary))
    for sub in summary.submissions:
        if sub.rejection:
            console.print(Text.assemble((printable(sub.id), "magenta"),
                                        ": rejected as a whole: ", printable(sub.rejection)))
    for text in summary.missing_shards:
        console.print(_t(f"shard {text} is missing: none of the merged outputs scored it",
                         "bold yellow"))
    counts = ", ".join(f"{n} {name}" for name, n in summary.counts.items() if n) or "no pairs"
    unscored = _unscored_count(summary, missing)
    console.print(_t(f"{counts}{'; ' + unscored if unscored else ''}; exit {summary.exit_code}"))


def print_selfcheck(name: str, result: SelfCheck, console: Console) -> None:
    """Each generated submission, then what differed, then the verdict on the installation.

    On a terminal a table; otherwise one line per submission, so no column is ever cut.
    """
    rows = []
    for f in result.findings:
        expected = "/".join(sorted(f.expected.verdicts)) + " (" + \
            "|".join(sorted(f.expected.reasons)) + ")"
        rows.append((f, expected, f"{f.verdict} ({f.reason})"))
    if console.is_terminal:
        table = Table(title=escape(name))
        for column in ("submission", "expected", "got", "message"):
            table.add_column(column, overflow="fold")
        for f, expected, got in rows:
            table.add_row(_t(f.submission), _t(expected), _t(got, "" if f.ok else "red"),
                          _t(f.message))
        console.print(table)
    else:
        console.print(Text(f"{name}:"))
        for f, expected, got in rows:
            console.print(_t(f"  {'ok  ' if f.ok else 'DIFF'}  {f.submission}: expected "
                             f"{expected}, got {got}" + (f": {f.message}" if f.message
                                                          else "")), soft_wrap=True)
    if result.counts != result.expected_counts:
        console.print(Text.assemble(("counts differ", "red"), f": expected "
                                    f"{result.expected_counts}, got {result.counts}"))
    if result.ok:
        console.print(Text(f"{name}: OK", style="green"))
    else:
        console.print(Text.assemble((f"{name}: FAILED", "red"), ": the installation (toolchain, "
                                    "bubblewrap or harness) does not score as expected; files "
                                    f"kept in {result.where}"))


# --- lean-eval report OUT: one output directory, rendered -----------------------------------


class _Document(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PairReport(_Document):
    """One pair as ``report --format json`` gives it."""

    submission: str
    problem: str
    verdict: str
    execution: str
    reason: str
    message: str
    wall_seconds: float | None
    verdict_path: str
    log_path: str | None


class SubmissionReport(_Document):
    """One submission's pairs by outcome."""

    id: str
    solved: int
    rejected: int
    invalid: int
    unchanged: int
    error: int
    pairs: int
    rejection: str | None


class RunReport(_Document):
    """An output directory (one run or a merge) as ``report --format json`` gives it."""

    schema_version: Literal[1] = 1
    started_at: str
    finished_at: str
    exit_code: int
    counts: dict[str, int]
    submissions: tuple[SubmissionReport, ...]
    pairs: tuple[PairReport, ...]
    not_scored: tuple[PairRef, ...] = ()  # pairs no run scored (none has a verdict)
    missing_shards: tuple[str, ...] = ()  # merge: shards "K/N" none of its outputs scored


class Run(NamedTuple):
    """An output directory: its summary and what it holds for each pair."""

    out_dir: Path
    summary: Summary
    verdicts: tuple[Verdict | None, ...]  # aligned with summary.pairs; None when unreadable
    logs: tuple[bool, ...] = ()  # aligned with summary.pairs: a log is beside the verdict


def load_run(out_dir: Path) -> Run:
    """Read ``out_dir/summary.json`` and what it lists, checked as merge checks a shard."""
    try:
        summary = Summary.model_validate_json((out_dir / "summary.json").read_bytes())
    except OSError as exc:
        raise UsageError(f"{out_dir}: no readable summary.json ({exc.strerror or exc}); is it "
                         "a run-eval or merge output directory?") from exc
    except ValidationError as exc:
        raise UsageError(f"{out_dir}/summary.json is not a summary this lean-eval can read: "
                         f"{exc.errors()[0]['msg']}") from exc
    outputs.check_summary(out_dir, summary)
    files = outputs.pair_files(out_dir, summary)
    return Run(out_dir, summary, tuple(f.verdict for f in files), tuple(f.log for f in files))


def run_report(run: Run) -> RunReport:
    """The output directory as one JSON document (bidi and zero-width controls escaped)."""
    tallies: dict[str, dict[str, int]] = {s.id: dict.fromkeys(_TALLY.values(), 0)
                                          for s in run.summary.submissions}
    pairs = []
    logs = run.logs or (False,) * len(run.verdicts)
    for pair, verdict, beside in zip(run.summary.pairs, run.verdicts, logs, strict=True):
        tally = tallies.setdefault(pair.submission, dict.fromkeys(_TALLY.values(), 0))
        tally[_TALLY[pair.verdict]] += 1
        # The log beside the verdict file, as the summary names it (relative to the output
        # directory, which may have moved or been merged); else what the verdict recorded.
        log = str(outputs.place_of(pair.submission, pair.problem, ".log")) if beside else \
            verdict.log.path if verdict is not None else None
        pairs.append(PairReport(
            submission=pair.submission, problem=pair.problem, verdict=pair.verdict,
            execution=pair.execution, reason=visible(pair.reason),
            message=visible(verdict.reason.message) if verdict else "(verdict file unreadable)",
            wall_seconds=verdict.timings.wall_seconds if verdict else None,
            verdict_path=pair.path, log_path=visible(log) if log is not None else None))
    rejections = {s.id: s.rejection for s in run.summary.submissions}
    return RunReport(
        started_at=visible(run.summary.started_at), finished_at=visible(run.summary.finished_at),
        exit_code=run.summary.exit_code,
        counts={visible(k): v for k, v in run.summary.counts.items()},
        submissions=tuple(SubmissionReport(id=sid, **t, pairs=sum(t.values()),
                                           rejection=visible(rejections.get(sid) or "") or None)
                          for sid, t in tallies.items()),
        pairs=tuple(pairs), not_scored=not_scored(run.summary),
        missing_shards=run.summary.missing_shards)


_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def md(text: str) -> str:
    """``text`` as literal markdown inline content (tables included): no markup, no HTML."""
    flat = printable(" ".join(text.split()))
    flat = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", flat)


NOT_SCORED_ROWS = 1000  # markdown rows listing unscored pairs; the rest are counted


def _not_scored_section(summary: Summary, doc: RunReport) -> list[str]:
    """The "Not scored" section: missing shards and pairs without a verdict (kept short)."""
    if not doc.not_scored and not doc.missing_shards and not summary.not_scored:
        return []
    lines = ["### Not scored", "",
             f"**Incomplete:** {_unscored_count(summary, doc.not_scored)}; no verdict for these.",
             ""]
    lines += [f"- shard {md(k)} is missing: none of the merged outputs scored it"
              for k in doc.missing_shards]
    if doc.missing_shards:
        lines.append("")
    if doc.not_scored:
        lines += ["| submission | problem | why |", "|---|---|---|"]
        lines += [f"| {md(r.submission)} | {md(r.problem)} | {md(why_not_scored(summary, r))} |"
                  for r in doc.not_scored[:NOT_SCORED_ROWS]]
        if len(doc.not_scored) > NOT_SCORED_ROWS:
            lines.append(f"\n{len(doc.not_scored) - NOT_SCORED_ROWS} more unscored pair(s) "
                         "not shown; see summary.json.")
        lines.append("")
    return lines


def render_markdown(run: Run, budget: int = STEP_SUMMARY_BUDGET) -> str:
    """Per-submission solved counts, then a per-pair table; fits ``$GITHUB_STEP_SUMMARY``."""
    doc = run_report(run)
    counts = ", ".join(f"{n} {md(name)}" for name, n in doc.counts.items() if n) or "no pairs"
    unscored = _unscored_count(run.summary, doc.not_scored)
    head = f"{len(doc.pairs)} pair(s): {counts}{'; ' + unscored if unscored else ''}"
    lines = ["## lean-eval results", "", f"{head}; exit code {doc.exit_code}.", "",
             *_not_scored_section(run.summary, doc),
             "| submission | solved | rejected | invalid | unchanged | error | pairs |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for s in doc.submissions:
        note = f" (rejected as a whole: {md(s.rejection)})" if s.rejection and not s.pairs else ""
        lines.append(f"| {md(s.id)}{note} | {s.solved} | {s.rejected} | {s.invalid} | "
                     f"{s.unchanged} | {s.error} | {s.pairs} |")
    lines += ["", "| submission | problem | verdict | detail | time |",
              "|---|---|---|---|---:|"]
    used = sum(len(line) + 1 for line in lines)
    for i, p in enumerate(doc.pairs):
        detail = _detail(p.verdict, p.reason, p.execution)
        if p.verdict not in ("accepted", "unchanged") and p.message:
            detail = f"{detail}: {p.message[:300]}" if detail else p.message[:300]
        time = f"{p.wall_seconds:.1f} s" if p.wall_seconds and p.execution != "not_run" else ""
        row = f"| {md(p.submission)} | {md(p.problem)} | {p.verdict} | {md(detail)} | {time} |"
        if used + len(row.encode()) + 200 > budget:
            lines.append(f"\n{len(doc.pairs) - i} more pair(s) not shown (size limit); "
                         "see summary.json.")
            break
        lines.append(row)
        used += len(row.encode()) + 1
    return "\n".join(lines) + "\n"


_XML_ILLEGAL = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _x(text: str) -> str:
    return _XML_ILLEGAL.sub("\ufffd", visible(text))


def _junit_case(suite: ET.Element, p: PairReport, tail: Sequence[str]) -> str | None:
    """One pair's testcase; the counter it adds to besides ``tests``, if any."""
    case = ET.SubElement(suite, "testcase", classname=_x(p.submission), name=_x(p.problem),
                         time=f"{p.wall_seconds or 0.0:.3f}")
    body = "\n".join((p.message, *tail))
    if p.verdict in ("rejected", "invalid_submission"):
        node = ET.SubElement(case, "failure", type=_x(p.reason), message=_x(p.message))
        node.text = _x(body)
        return "failures"
    if p.verdict == "error" or p.execution in INFRASTRUCTURE_FAILURES:
        node = ET.SubElement(case, "error", type=_x(f"{p.execution}/{p.reason}"),
                             message=_x(p.message))
        node.text = _x(body)
        return "errors"
    if p.verdict == "unchanged":
        ET.SubElement(case, "skipped", message="unchanged: the starter was submitted")
        return "skipped"
    return None


def _junit_error(suite: ET.Element, classname: str, name: str, kind: str, message: str) -> str:
    case = ET.SubElement(suite, "testcase", classname=_x(classname), name=_x(name),
                         time="0.000")
    ET.SubElement(case, "error", type=kind, message=_x(message))
    return "errors"


def render_junit(run: Run) -> str:
    """JUnit XML: a testsuite per submission, a testcase per problem.

    ``rejected`` and ``invalid_submission`` are failures, ``error`` an error, ``unchanged``
    skipped. A submission rejected as a whole, with no pair, is one failing testcase. A pair no
    run scored is an ``error`` testcase (``not_scored``), and so is each missing shard (in the
    testsuite ``(missing shards)``): a CI view of a partial merge is red.
    """
    doc = run_report(run)
    tails = {(p.submission.id, p.problem.id): p.log.tail for p in run.verdicts if p is not None}
    root = ET.Element("testsuites", name="lean-eval")
    by_sub: dict[str, list[PairReport]] = {s.id: [] for s in doc.submissions}
    for p in doc.pairs:
        by_sub.setdefault(p.submission, []).append(p)
    unscored: dict[str, list[PairRef]] = {}
    for ref in doc.not_scored:
        unscored.setdefault(ref.submission, []).append(ref)
        by_sub.setdefault(ref.submission, [])
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    rejections = {s.id: s.rejection for s in doc.submissions}
    suites: list[tuple[ET.Element, list[str | None], float]] = []
    for sid, pairs in by_sub.items():
        suite = ET.SubElement(root, "testsuite", name=_x(sid))
        added = [_junit_case(suite, p, tails.get((p.submission, p.problem), ())) for p in pairs]
        added += [_junit_error(suite, sid, r.problem, "not_scored",
                               why_not_scored(run.summary, r)) for r in unscored.get(sid, ())]
        if not pairs and not unscored.get(sid) and rejections.get(sid):
            case = ET.SubElement(suite, "testcase", classname=_x(sid), name="(submission)",
                                 time="0.000")
            ET.SubElement(case, "failure", type="rejected_submission",
                          message=_x(rejections[sid] or ""))
            added.append("failures")
        suites.append((suite, added, sum(p.wall_seconds or 0.0 for p in pairs)))
    if doc.missing_shards:  # "(...)" is no submission id, so this suite is no submission's
        suite = ET.SubElement(root, "testsuite", name="(missing shards)")
        suites.append((suite, [_junit_error(suite, "(missing shards)", k, "missing_shard",
                                            f"shard {k} is missing: none of the merged outputs "
                                            "scored it") for k in doc.missing_shards], 0.0))
    for suite, added, wall in suites:
        n = {"tests": len(added), **{k: added.count(k) for k in totals if k != "tests"}}
        for key, value in n.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("time", f"{wall:.3f}")
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def render_json(run: Run) -> str:
    """The ``RunReport`` document."""
    return run_report(run).model_dump_json(indent=2) + "\n"


def render_table(run: Run, width: int = 120) -> str:
    """The console table of a run as plain text (for ``--output FILE`` and pipes)."""
    buffer = io.StringIO()
    print_summary(run.summary, Console(file=buffer, width=width, color_system=None,
                                       force_terminal=False))
    return buffer.getvalue()


def render(run: Run, fmt: Format) -> str:
    """The run in one of ``FORMATS`` as text."""
    if fmt == "markdown":
        return render_markdown(run)
    if fmt == "junit":
        return render_junit(run)
    if fmt == "json":
        return render_json(run)
    return render_table(run)


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path``: readers see the old file or the new one, never half."""
    write_bytes_atomic(path, text.encode("utf-8"))
