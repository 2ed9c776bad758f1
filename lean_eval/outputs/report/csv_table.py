"""A run as CSV: a row per pair, per pair no run scored, per submission that scored no pair.

Invariants:
- The ``csv`` module quotes (RFC 4180): no message adds a column or a row; cells are printable.
- A cell a spreadsheet would read as a formula gets a leading ``'`` (the CSV injection guard):
  ``=HYPERLINK(...)`` is shown, never evaluated.
"""

from __future__ import annotations

import csv
import io

from lean_eval.outputs.report.run_report import Run, printable, run_report, why_not_scored
from lean_eval.records.verdict import TALLY

COLUMNS = ("submission", "problem", "verdict", "tally", "execution", "reason", "message",
           "wall_seconds", "verdict_path", "log_path")
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def cell(value: object) -> str:
    if value is None:
        return ""
    text = printable(str(value))
    return f"'{text}" if text.startswith(_FORMULA) else text


def render_csv(run: Run) -> str:
    doc = run_report(run)
    rows: list[tuple[object, ...]] = [
        (p.submission, p.problem, p.verdict, TALLY[p.verdict], p.execution, p.reason,
         p.message, p.wall_seconds, p.verdict_path, p.log_path) for p in doc.pairs]
    rows += [(r.submission, r.problem, "not_scored", "", "not_run", "not_scored",
              why_not_scored(run.summary, r), None, None, None) for r in doc.not_scored]
    for s in doc.submissions:
        if s.pairs or any(r.submission == s.id for r in doc.not_scored):
            continue
        if s.rejection:
            rows.append((s.id, "", "rejected_submission", "invalid", "not_run",
                         "rejected_submission", s.rejection, None, None, None))
        elif s.hint:
            rows.append((s.id, "", "no_problem_directory", "", "not_run",
                         "no_problem_directory", s.hint, None, None, None))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(tuple(cell(v) for v in row) for row in rows)
    return buffer.getvalue()
