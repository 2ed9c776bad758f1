"""How ``run-eval`` shows a batch as it goes: a progress bar on a terminal, lines otherwise;
strings are escaped as ``report.run_report`` says."""

from __future__ import annotations

from types import TracebackType

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from lean_eval.cli.exits import gate_message
from lean_eval.outputs.report import console as report_console
from lean_eval.probes.preflight import NOTHING_TO_SCORE
from lean_eval.records.kinds import OUTCOMES
from lean_eval.records.verdict import Summary
from lean_eval.scoring import scheduler
from lean_eval.scoring.gate import failures, scored_nothing

_SHORT: dict[str, str] = {name: kind.short for name, kind in OUTCOMES.items()}


class Display:
    """A context manager whose ``update`` is ``run_batch``'s ``on_progress`` callback."""

    def __init__(self, console: Console, quiet: bool) -> None:
        self.console, self.quiet = console, quiet
        self.bar: Progress | None = None
        self.task: TaskID | None = None
        self.started = False

    def __enter__(self) -> Display:
        return self

    def _start(self) -> None:
        # Started by the first event, not on entry: the preflight probes print their lines
        # after the batch is planned, before any pair, and the bar must not overwrite them.
        self.started = True
        if not self.quiet and self.console.is_terminal:
            self.bar = Progress(TextColumn("scoring"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("{task.fields[status]}"), TimeElapsedColumn(),
                                TextColumn("eta"), TimeRemainingColumn(),
                                console=self.console, transient=False)
            self.bar.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.bar is not None:
            self.bar.stop()

    def update(self, event: scheduler.Progress) -> None:
        """One pair finished (or was reused): advance the bar or print its line."""
        if self.quiet:
            return
        if not self.started:
            self._start()
        if self.bar is None:
            if event.verdict is not None:
                line = report_console.verdict_line(event.verdict)
                self.console.print(Text(line + "  (kept: an earlier run's verdict)"
                                        if event.kept else line), highlight=False,
                                   soft_wrap=True)
            return
        status = f"{event.running} running  " + " ".join(
            f"{_SHORT[k]} {n}" for k, n in event.counts.items() if n)
        if self.task is None:
            self.task = self.bar.add_task("scoring", total=event.total, status=status)
        self.bar.update(self.task, completed=event.done, total=event.total, status=status)


def report_end(summary: Summary, console: Console, quiet: bool, listed: bool) -> None:
    """How to resume an interrupted run and what an intake limit hid (both even under -q), kept
    pairs, and each submission without a problem directory unless the table (``listed``)
    names it."""
    if summary.interrupted:
        console.print(f"lean-eval: interrupted: {summary.not_scored} pair(s) not scored; run "
                      "the same command again to resume (verdicts already written are kept)",
                      markup=False, highlight=False)
    for sub in summary.submissions:  # even under -q: a problem may have gone unscored
        for line in sub.hidden:
            console.print(f"[yellow]warning:[/] {escape(sub.id)}: hidden by an intake limit: "
                          f"{escape(line)}", highlight=False, soft_wrap=True)
    for line in summary.not_reused:  # even under -q: a verdict on --out was not what was signed
        console.print(f"[yellow]warning:[/] not kept, scored again: {escape(line)}",
                      highlight=False, soft_wrap=True)
    if quiet:
        return
    if summary.preflight.reason == NOTHING_TO_SCORE:  # an ordinary resume: a note
        console.print(f"note: probes not run: {NOTHING_TO_SCORE}", markup=False,
                      highlight=False, soft_wrap=True)
    if summary.reused:
        console.print(f"{summary.reused} pair(s) kept: their verdicts from an earlier run on "
                      "this --out still apply (--rescore scores them again)",
                      markup=False, highlight=False)
    for sub in () if listed else scored_nothing(summary):
        if sub.rejection is None:
            console.print(f"[yellow]warning:[/] {escape(sub.id)}: no problem directory found"
                          + (f": {escape(sub.hint)}" if sub.hint else ""), highlight=False)


def say_gate(summary: Summary, fail_on: frozenset[str], exit_zero: bool) -> None:
    """What tripped ``--fail-on``, on stderr, with the code the run returns (its summary's:
    ``scoring.gate`` decided it)."""
    found = failures(summary, fail_on)
    if found and not summary.interrupted:
        click.echo(gate_message(fail_on, found, summary.exit_code,
                                " (--exit-zero)" if exit_zero else ""), err=True)
