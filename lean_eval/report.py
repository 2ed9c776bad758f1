"""Render runs, probes and self-checks for people: rich tables on a terminal."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from lean_eval.verdict import Summary, Verdict

if TYPE_CHECKING:
    from lean_eval.probe import ProbeResult
    from lean_eval.selfcheck import SelfCheck

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


def probe_table(results: Sequence[ProbeResult]) -> Table:
    """One row per probe check, grouped by probe."""
    table = Table(title="lean-eval probes")
    for column in ("probe", "status", "check", "evidence"):
        table.add_column(column)
    colour = {"pass": "green", "fail": "red", "error": "bold yellow"}
    for result in results:
        table.add_row(result.name, f"[{colour[result.status]}]{result.status}[/]", "",
                      result.message)
        for check in result.checks:
            table.add_row("", "ok" if check.ok else "[red]FAILED[/]", check.name, check.evidence)
    return table


def selfcheck_data(result: SelfCheck) -> dict[str, object]:
    """A self-check as plain data for ``--json``."""
    return {
        "ok": result.ok,
        "counts": result.counts,
        "expected_counts": result.expected_counts,
        "where": str(result.where),
        "findings": [{"submission": f.submission, "ok": f.ok, "verdict": f.verdict,
                      "reason": f.reason, "message": f.message,
                      "expected_verdicts": sorted(f.expected.verdicts),
                      "expected_reasons": sorted(f.expected.reasons)} for f in result.findings],
    }


def print_selfcheck(name: str, result: SelfCheck, console: Console) -> None:
    """Each generated submission, then a diff of what differed, then the verdict on the install."""
    table = Table(title=name)
    for column in ("submission", "expected", "got", "message"):
        table.add_column(column)
    for f in result.findings:
        expected = "/".join(sorted(f.expected.verdicts)) + " (" + \
            "|".join(sorted(f.expected.reasons)) + ")"
        got = f"{f.verdict} ({f.reason})"
        table.add_row(f.submission, expected, got if f.ok else f"[red]{got}[/]", f.message)
    console.print(table)
    if result.counts != result.expected_counts:
        console.print(f"[red]counts differ[/]: expected {result.expected_counts}, "
                      f"got {result.counts}")
    if result.ok:
        console.print(f"[green]{name}: OK[/]")
    else:
        console.print(f"[red]{name}: FAILED[/]: the installation (toolchain, bubblewrap or "
                      f"harness) does not score as expected; files kept in {result.where}")
