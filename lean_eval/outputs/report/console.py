"""A run and a self-check on the console (rich), and the console table as plain text;
strings are escaped as ``report.run_report`` says."""

from __future__ import annotations

import io
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from lean_eval.outputs.report.run_report import (
    NO_VERDICT,
    Run,
    detail,
    no_problem_directory,
    not_scored,
    printable,
    scored_nothing,
    unscored_count,
    why_not_scored,
)
from lean_eval.records.documents import SelfCheckReport
from lean_eval.records.verdict import Summary, Verdict

_STYLE = {"accepted": "green", "rejected": "red", "invalid_submission": "magenta",
          "unchanged": "dim", "error": "bold yellow"}


def _t(text: str, style: str = "") -> Text:
    return Text(printable(text), style=style)


def verdict_line(verdict: Verdict) -> str:
    """One line for a finished pair, ``good/two_plus_two  accepted  0.7 s``; it holds
    user-controlled names, so print it as ``Text``, never as markup."""
    text = detail(verdict.verdict, verdict.reason.code, verdict.execution)
    parts = [printable(f"{verdict.submission.id}/{verdict.problem.id}"), verdict.verdict]
    if text:
        parts.append(text)
    if verdict.execution != "not_run":
        parts.append(f"{verdict.timings.wall_seconds:.1f} s")
    return "  ".join(parts)


def summary_table(summary: Summary) -> Table:
    """Every pair of the run, then every pair no run scored."""
    every = summary.every_pair()
    table = Table(title=f"lean-eval: {len(every)} pair(s)")
    for column in ("submission", "problem", "verdict", "detail"):
        table.add_column(column, overflow="fold")
    for pair in every:
        table.add_row(_t(pair.submission), _t(pair.problem),
                      _t(pair.verdict, _STYLE.get(pair.verdict, "")),
                      _t(detail(pair.verdict, pair.reason, pair.execution)))
    for ref in not_scored(summary):  # why: said once below the table (``print_summary``)
        why = why_not_scored(summary, ref)
        table.add_row(_t(ref.submission), _t(ref.problem), _t("not scored", "bold yellow"),
                      _t(_SHORT_WHY.get(why, why)))
    return table


# A reason every unscored pair of an interrupted run shares, said once after the table; its
# rows say only this (a missing shard's reason is short and differs per shard: kept per row)
_SHORT_WHY = {NO_VERDICT: "no verdict"}


def print_summary(summary: Summary, console: Console, hints: bool = False,
                  disagreements: Sequence[str] = (), recorded: bool = False) -> None:
    """The table, whole-submission rejections, each submission without a problem directory
    (``hints``: with intake's hint), counts and exit code: every submission that scored
    nothing is named; first each pair whose summary line ``disagreements`` names (shown as its
    verdict file says). ``recorded``: the summary is a finished run's, read by another command
    (``report``), so its code is called "recorded exit", never the reader's own."""
    for line in disagreements:
        console.print(Text.assemble(("warning", "bold yellow"), ": ", printable(line),
                                    " (shown as the verdict file says)"))
    missing = not_scored(summary)
    if summary.pairs or any(s.unchanged for s in summary.submissions) or missing:
        console.print(summary_table(summary))
    for sub in summary.submissions:
        if sub.rejection:
            console.print(Text.assemble((printable(sub.id), "magenta"),
                                        ": rejected as a whole: ", printable(sub.rejection)))
    for sid, hint in no_problem_directory(summary):
        console.print(Text.assemble((printable(sid), "yellow"), ": no problem directory found",
                                    f": {printable(hint)}" if hint and hints else ""))
    unrecorded = sum(why_not_scored(summary, ref) == NO_VERDICT for ref in missing)
    if unrecorded:
        console.print(_t(f"no verdict: no run recorded one for {unrecorded} pair(s) "
                         "(interrupted or stopped); a re-run scores them"))
    for text in summary.missing_shards:
        console.print(_t(f"shard {text} is missing: none of the merged outputs scored it",
                         "bold yellow"))
    counts = ", ".join(f"{n} {name}" for name, n in summary.counts.items() if n) or "no pairs"
    unscored = unscored_count(summary, missing)
    nothing = len(scored_nothing(summary))
    empty = f"; {nothing} submission(s) scored nothing" if nothing else ""
    console.print(_t(f"{counts}{'; ' + unscored if unscored else ''}{empty}; "
                     f"{'recorded ' if recorded else ''}exit {summary.exit_code}"))


def print_selfcheck(result: SelfCheckReport, console: Console) -> None:
    """A self-check: a table on a terminal, else one line per submission (no column cut)."""
    name = result.check
    rows = []
    for f in result.findings:
        expected = "/".join(f.expected_verdicts) + " (" + "|".join(f.expected_reasons) + ")"
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


def render_table(run: Run, width: int = 120, hints: bool = False) -> str:
    """The console table of a run as plain text (for ``--output FILE`` and pipes)."""
    buffer = io.StringIO()
    print_summary(run.summary, Console(file=buffer, width=width, color_system=None,
                                       force_terminal=False), hints=hints,
                  disagreements=run.disagreements, recorded=True)
    return buffer.getvalue()


