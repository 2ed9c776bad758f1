"""A run as markdown read at a glance, sized for ``$GITHUB_STEP_SUMMARY`` (design §5.5).

Invariants:
- Every user string goes through ``md``: no markup and no HTML reach the page.
- The document stays under ``budget`` bytes (GitHub refuses a step summary over 1 MiB): the
  cut drops accepted and unchanged rows first, then the matrix, failure rows only when they
  alone exceed it, and says what it left out.
"""

from __future__ import annotations

import re

from lean_eval.outputs.report.run_report import (
    Run,
    detail,
    out_of,
    printable,
    run_report,
    unscored_count,
    why_not_scored,
)
from lean_eval.records import kinds
from lean_eval.records.run_report import PairReport, RunReport
from lean_eval.records.verdict import TALLY, Summary

STEP_SUMMARY_BUDGET = 900_000  # bytes; GitHub refuses a step summary over 1 MiB
NOT_SCORED_ROWS = 1000  # markdown rows listing unscored pairs; the rest are counted
# One symbol per tally kind (and for a pair no run scored, and for a problem not submitted)
SYMBOLS = {"solved": "✅", "rejected": "❌", "invalid": "🚫", "unchanged": "➖",  # noqa: RUF001
           "error": "⚠️", "not scored": "❔", "not submitted": "·"}
FAILING = tuple(o for o, k in kinds.OUTCOMES.items() if k.category in ("fail", "error"))
_RESERVE = 400  # bytes kept for the notes that say what was cut and the closing lines

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def md(text: str) -> str:
    """``text`` as literal markdown inline content (tables included): no markup, no HTML."""
    flat = printable(" ".join(text.split()))
    flat = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", flat)


def _size(lines: list[str]) -> int:
    return sum(len(line.encode()) + 1 for line in lines)


def _not_scored_section(summary: Summary, doc: RunReport) -> list[str]:
    if not doc.not_scored and not doc.missing_shards and not summary.not_scored:
        return []
    lines = ["### Not scored", "",
             f"**Incomplete:** {unscored_count(summary, doc.not_scored)}; no verdict for these.",
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


def matrix_problems(run: Run, doc: RunReport) -> list[str]:
    """The matrix's columns: every problem some pair names, in the catalog's order."""
    named = dict.fromkeys([*(p.problem for p in doc.pairs), *(r.problem for r in doc.not_scored)])
    return [p for p in run.summary.problems if p in named] + \
        [p for p in named if p not in run.summary.problems]


def matrix_cells(doc: RunReport) -> dict[tuple[str, str], str]:
    """(submission, problem) -> tally kind, or "not scored"; absent: not submitted."""
    cells = {(p.submission, p.problem): TALLY[p.verdict] for p in doc.pairs}
    cells.update({(r.submission, r.problem): "not scored" for r in doc.not_scored})
    return cells


def _matrix(run: Run, doc: RunReport) -> list[str]:
    problems = matrix_problems(run, doc)
    cells = matrix_cells(doc)
    total = out_of(doc)
    lines = ["| submission | " + " | ".join(md(p) for p in problems) + " | solved |",
             "|---|" + ":-:|" * len(problems) + "---:|"]
    for s in doc.submissions:
        row = [SYMBOLS[cells.get((s.id, p), "not submitted")] for p in problems]
        lines.append(f"| {md(s.id)} | " + " | ".join(row) + f" | {s.solved}/{total[s.id]} |")
    legend = ", ".join(f"{symbol} {name}" for name, symbol in SYMBOLS.items())
    return [*lines, "", f"Legend: {legend}.", ""]


def _row(p: PairReport) -> str:
    text = detail(p.verdict, p.reason, p.execution)
    if p.verdict not in ("accepted", "unchanged") and p.message:
        text = f"{text}: {p.message[:300]}" if text else p.message[:300]
    time = f"{p.wall_seconds:.1f} s" if p.wall_seconds and p.execution != "not_run" else ""
    return f"| {md(p.submission)} | {md(p.problem)} | {p.verdict} | {md(text)} | {time} |"


_PAIR_HEAD = ["| submission | problem | verdict | detail | time |", "|---|---|---|---|---:|"]


def _without_pairs(doc: RunReport) -> list[str]:
    lines = [f"- {md(s.id)}: rejected as a whole: {md(s.rejection)}"
             for s in doc.submissions if s.rejection and not s.pairs]
    lines += [f"- {md(s.id)}: no problem directory found" + (f": {md(s.hint)}" if s.hint else "")
              for s in doc.submissions if not s.rejection and not s.pairs and s.hint]
    return ["### Submissions without a scored pair", "", *lines, ""] if lines else []


def render_markdown(run: Run, budget: int = STEP_SUMMARY_BUDGET) -> str:
    doc = run_report(run)
    counts = ", ".join(f"{n} {md(name)}" for name, n in doc.counts.items() if n) or "no pairs"
    unscored = unscored_count(run.summary, doc.not_scored)
    total = f"{len(doc.pairs)} pair(s): {counts}{'; ' + unscored if unscored else ''}"
    told = [f"- {md(d)}" for d in doc.disagreements]
    head = ["## lean-eval results", "", f"{total}; exit code {doc.exit_code}.", "",
            *(["### summary.json disagrees with the verdict files (shown as the files say)",
               "", *told, ""] if told else [])]
    # after the matrix, which the page leads with even after a partial merge; the total line
    # above already says how many pairs are unscored
    unscored_lines = _not_scored_section(run.summary, doc)
    failing = [p for p in doc.pairs if p.verdict in FAILING]
    passing = [p for p in doc.pairs if p.verdict not in FAILING]
    others = _without_pairs(doc)
    matrix = _matrix(run, doc) if doc.pairs or doc.not_scored else []
    room = budget - _RESERVE - _size(head) - _size(unscored_lines) - _size(others)
    fail_lines = [f"### Failures and errors ({len(failing)})", ""]
    if failing:
        fail_lines += _PAIR_HEAD
        for i, p in enumerate(failing):
            row = _row(p)
            if _size(fail_lines) + len(row.encode()) + 1 > room:
                fail_lines.append(f"\n{len(failing) - i} more failing pair(s) not shown (size "
                                  "limit); see summary.json.")
                break
            fail_lines.append(row)
        fail_lines.append("")
    else:
        fail_lines += ["None.", ""]
    room -= _size(fail_lines)
    if _size(matrix) > room:
        left_out = f"The matrix ({len(doc.submissions)} submissions) is left out (size limit)"
        matrix = [f"{left_out}; see `report --format html`.", ""]
    room -= _size(matrix)
    tail: list[str] = []
    if passing:
        rows: list[str] = []
        for i, p in enumerate(passing):
            row = _row(p)
            if _size(rows) + len(row.encode()) + 1 > room - _size(_PAIR_HEAD) - 120:
                rows.append(f"\n{len(passing) - i} accepted or unchanged pair(s) not shown "
                            "(size limit); see summary.json.")
                break
            rows.append(row)
        tail = ["<details>", f"<summary>{len(passing)} accepted or unchanged pair(s)</summary>",
                "", *_PAIR_HEAD, *rows, "", "</details>", ""]
    return "\n".join([*head, *matrix, *unscored_lines, *fail_lines, *others, *tail]) + "\n"
