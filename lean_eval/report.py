"""Render runs and self-checks for people and CI systems: console, markdown, JUnit XML, JSON.

Invariants:
- Every string a submission or a build controls (submission ids, problem ids, paths, messages,
  log tails, rejection texts, hints) reaches the console as ``rich.text.Text`` or through
  ``rich.markup.escape``: a name such as ``[bold red]x`` or ``a[/x]`` can neither raise
  ``MarkupError`` nor restyle or hide console text.
- JUnit XML is built with ``xml.etree`` and stripped of characters XML 1.0 forbids, so any
  standard parser reads it whatever a build printed.
- Markdown escapes table and inline syntax in user strings; a step summary stays under the size
  GitHub accepts (longer pair tables are cut with a note saying how many rows were left out).
"""

from __future__ import annotations

import io
import os
import re
import secrets
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from lean_eval.errors import UsageError
from lean_eval.verdict import INFRASTRUCTURE_FAILURES, PairSummary, Summary, Verdict

if TYPE_CHECKING:
    from lean_eval.selfcheck import SelfCheck

Format = Literal["table", "markdown", "junit", "json"]
FORMATS: tuple[Format, ...] = ("table", "markdown", "junit", "json")
_STYLE = {"accepted": "green", "rejected": "red", "invalid_submission": "magenta",
          "unchanged": "dim", "error": "bold yellow"}
_TALLY = {"accepted": "solved", "rejected": "rejected", "invalid_submission": "invalid",
          "unchanged": "unchanged", "error": "error"}
STEP_SUMMARY_BUDGET = 900_000  # bytes; GitHub refuses a step summary over 1 MiB


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with control characters (escape sequences, newlines) shown as ``\\xNN``.

    A name or message can then not move the cursor, recolour or hide what the console shows.
    """
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


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


def summary_table(summary: Summary) -> Table:
    """Every pair of the run."""
    table = Table(title=f"lean-eval: {len(summary.pairs)} pair(s)")
    for column in ("submission", "problem", "verdict", "detail"):
        table.add_column(column, overflow="fold")
    for pair in summary.pairs:
        table.add_row(_t(pair.submission), _t(pair.problem),
                      _t(pair.verdict, _STYLE.get(pair.verdict, "")),
                      _t(_detail(pair.verdict, pair.reason, pair.execution)))
    return table


def print_summary(summary: Summary, console: Console) -> None:
    """The table, submission-level rejections, the counts and the exit code."""
    if summary.pairs:
        console.print(summary_table(summary))
    for sub in summary.submissions:
        if sub.rejection:
            console.print(Text.assemble((printable(sub.id), "magenta"),
                                        ": rejected as a whole: ", printable(sub.rejection)))
    counts = ", ".join(f"{n} {name}" for name, n in summary.counts.items() if n) or "no pairs"
    console.print(Text(f"{counts}; exit {summary.exit_code}"))


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


class Run(NamedTuple):
    """An output directory: its summary and each pair's verdict (None when unreadable)."""

    out_dir: Path
    summary: Summary
    verdicts: tuple[Verdict | None, ...]  # aligned with summary.pairs


def verdict_file(out_dir: Path, pair: PairSummary) -> Path:
    """Where a summary line's verdict file is, for relative and (older) absolute paths."""
    recorded = Path(pair.path)
    if not recorded.is_absolute():
        return out_dir / recorded
    return out_dir / pair.submission / f"{pair.problem}.json"


def load_run(out_dir: Path) -> Run:
    """Read ``out_dir/summary.json`` and the verdicts it lists."""
    try:
        summary = Summary.model_validate_json((out_dir / "summary.json").read_bytes())
    except OSError as exc:
        raise UsageError(f"{out_dir}: no readable summary.json ({exc.strerror or exc}); is it "
                         "a run-eval or merge output directory?") from exc
    except ValidationError as exc:
        raise UsageError(f"{out_dir}/summary.json is not a summary this lean-eval can read: "
                         f"{exc.errors()[0]['msg']}") from exc
    return Run(out_dir, summary, tuple(_read_verdict(verdict_file(out_dir, pair))
                                       for pair in summary.pairs))


def _read_verdict(path: Path) -> Verdict | None:
    try:
        return Verdict.model_validate_json(path.read_bytes())
    except (OSError, ValidationError):
        return None


def run_report(run: Run) -> RunReport:
    """The output directory as one JSON document."""
    tallies: dict[str, dict[str, int]] = {s.id: dict.fromkeys(_TALLY.values(), 0)
                                          for s in run.summary.submissions}
    pairs = []
    for pair, verdict in zip(run.summary.pairs, run.verdicts, strict=True):
        tally = tallies.setdefault(pair.submission, dict.fromkeys(_TALLY.values(), 0))
        tally[_TALLY[pair.verdict]] += 1
        # The log beside the verdict file, as the summary names it (relative to the output
        # directory, which may have moved or been merged); else what the verdict recorded.
        beside = verdict_file(run.out_dir, pair).with_suffix(".log")
        log = str(Path(pair.path).with_suffix(".log")) if beside.is_file() else \
            verdict.log.path if verdict is not None else None
        pairs.append(PairReport(
            submission=pair.submission, problem=pair.problem, verdict=pair.verdict,
            execution=pair.execution, reason=pair.reason,
            message=verdict.reason.message if verdict else "(verdict file unreadable)",
            wall_seconds=verdict.timings.wall_seconds if verdict else None,
            verdict_path=pair.path, log_path=log))
    rejections = {s.id: s.rejection for s in run.summary.submissions}
    return RunReport(
        started_at=run.summary.started_at, finished_at=run.summary.finished_at,
        exit_code=run.summary.exit_code, counts=dict(run.summary.counts),
        submissions=tuple(SubmissionReport(id=sid, **t, pairs=sum(t.values()),
                                           rejection=rejections.get(sid))
                          for sid, t in tallies.items()),
        pairs=tuple(pairs))


_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def md(text: str) -> str:
    """``text`` as literal markdown inline content (tables included): no markup, no HTML."""
    flat = printable(" ".join(text.split()))
    flat = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", flat)


def render_markdown(run: Run, budget: int = STEP_SUMMARY_BUDGET) -> str:
    """Per-submission solved counts, then a per-pair table; fits ``$GITHUB_STEP_SUMMARY``."""
    doc = run_report(run)
    counts = ", ".join(f"{n} {name}" for name, n in doc.counts.items() if n) or "no pairs"
    lines = ["## lean-eval results", "",
             f"{len(doc.pairs)} pair(s): {counts}; exit code {doc.exit_code}.", "",
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
    return _XML_ILLEGAL.sub("\ufffd", text)


def render_junit(run: Run) -> str:
    """JUnit XML: a testsuite per submission, a testcase per problem.

    ``rejected`` and ``invalid_submission`` are failures, ``error`` an error, ``unchanged``
    skipped. A submission rejected as a whole, with no pair, is one failing testcase.
    """
    doc = run_report(run)
    tails = {(p.submission.id, p.problem.id): p.log.tail for p in run.verdicts if p is not None}
    root = ET.Element("testsuites", name="lean-eval")
    by_sub: dict[str, list[PairReport]] = {s.id: [] for s in doc.submissions}
    for p in doc.pairs:
        by_sub.setdefault(p.submission, []).append(p)
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    rejections = {s.id: s.rejection for s in doc.submissions}
    for sid, pairs in by_sub.items():
        suite = ET.SubElement(root, "testsuite", name=_x(sid))
        n = dict.fromkeys(totals, 0)
        wall = 0.0
        for p in pairs:
            case = ET.SubElement(suite, "testcase", classname=_x(sid), name=_x(p.problem),
                                 time=f"{p.wall_seconds or 0.0:.3f}")
            wall += p.wall_seconds or 0.0
            n["tests"] += 1
            body = "\n".join((p.message, *tails.get((p.submission, p.problem), ())))
            if p.verdict in ("rejected", "invalid_submission"):
                n["failures"] += 1
                node = ET.SubElement(case, "failure", type=_x(p.reason), message=_x(p.message))
                node.text = _x(body)
            elif p.verdict == "error" or p.execution in INFRASTRUCTURE_FAILURES:
                n["errors"] += 1
                node = ET.SubElement(case, "error", type=_x(f"{p.execution}/{p.reason}"),
                                     message=_x(p.message))
                node.text = _x(body)
            elif p.verdict == "unchanged":
                n["skipped"] += 1
                ET.SubElement(case, "skipped", message="unchanged: the starter was submitted")
        if not pairs and rejections.get(sid):
            case = ET.SubElement(suite, "testcase", classname=_x(sid), name="(submission)",
                                 time="0.000")
            ET.SubElement(case, "failure", type="rejected_submission",
                          message=_x(rejections[sid] or ""))
            n["tests"] += 1
            n["failures"] += 1
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
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    # 0o666 through the umask, as open() would; O_EXCL: never through a planted file or link
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
