"""Render a run summary for people: a rich table on a terminal."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from lean_eval.verdict import Summary, Verdict

_STYLE = {"accepted": "green", "rejected": "red", "invalid_submission": "magenta",
          "unchanged": "dim", "error": "bold yellow"}


def verdict_line(verdict: Verdict) -> str:
    """One progress line for a finished pair."""
    return (f"{verdict.submission.id}/{verdict.problem.id}: {verdict.verdict} "
            f"({verdict.reason.code}; {verdict.execution}, {verdict.timings.wall_seconds:.1f}s)")


def summary_table(summary: Summary) -> Table:
    """Every pair of the run, then the counts."""
    table = Table(title=f"lean-eval: {len(summary.pairs)} pair(s)")
    for column in ("submission", "problem", "verdict", "reason", "execution"):
        table.add_column(column)
    for pair in summary.pairs:
        style = _STYLE.get(pair.verdict, "")
        table.add_row(pair.submission, pair.problem, f"[{style}]{pair.verdict}[/]",
                      pair.reason, pair.execution)
    return table


def print_summary(summary: Summary, console: Console) -> None:
    """The table, submission-level rejections, the counts and where the files are."""
    console.print(summary_table(summary))
    for sub in summary.submissions:
        if sub.rejection and not sub.problems:
            console.print(f"[magenta]{sub.id}[/]: rejected as a whole: {sub.rejection}")
    counts = ", ".join(f"{n} {name}" for name, n in summary.counts.items()) or "no pairs"
    console.print(f"{counts}; exit {summary.exit_code}")
