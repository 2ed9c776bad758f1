"""``replay.json``: reading it, and how ``report`` shows it (models: ``records.replay``; the
statuses: ``outputs.replay.compare``). Strings are escaped as ``report.run_report`` says."""

from __future__ import annotations

import io
from pathlib import Path

from pydantic import ValidationError
from rich.console import Console
from rich.table import Table
from rich.text import Text

from lean_eval.errors import UsageError
from lean_eval.outputs.report.markdown import STEP_SUMMARY_BUDGET, md
from lean_eval.outputs.report.run_report import printable
from lean_eval.records import out_layout
from lean_eval.records.replay import STATUSES, Judgement, ReplayReport

_STYLE = {"reproduced": "green", "changed": "red", "kernel_disagreement": "bold red",
          "not_scored": "bold yellow"}


def load(out_dir: Path) -> ReplayReport:
    """``out_dir/replay.json``; unreadable or invalid is a usage error naming it."""
    path = out_dir / out_layout.REPLAY
    try:
        return ReplayReport.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise UsageError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    except ValidationError as exc:
        raise UsageError(f"{path}: not a replay report this lean-eval can read "
                         f"({exc.error_count()} problem(s), first: "
                         f"{exc.errors()[0]['msg']})") from exc


def _t(text: str, style: str = "") -> Text:
    return Text(printable(text), style=style)


def _judged(j: Judgement | None) -> str:
    if j is None:
        return "-"
    if j.reason.code in (j.verdict, "accepted"):
        return j.verdict
    return f"{j.verdict} ({j.reason.code})"


def print_replay(report: ReplayReport, console: Console) -> None:
    """Drift, one row per pair, every checker line of each disagreement, the counts."""
    for drift in report.drift:
        console.print(Text.assemble(("drift ", "yellow"), printable(drift.describe())),
                      soft_wrap=True)
    mode = " --paranoid" if report.paranoid else ""
    table = Table(title=f"lean-eval replay{mode}: {len(report.pairs)} pair(s) of "
                        f"{printable(report.record)}")
    for column in ("submission", "problem", "recorded", "replayed", "status"):
        table.add_column(column, overflow="fold")
    for p in report.pairs:
        table.add_row(_t(p.submission), _t(p.problem), _t(_judged(p.recorded)),
                      _t(_judged(p.new)), _t(p.status, _STYLE[p.status]))
    if report.pairs:
        console.print(table)
    for p in report.pairs:
        if p.status == "kernel_disagreement" and p.new is not None:
            console.print(Text.assemble(("kernel_disagreement ", "bold red"),
                                        printable(f"{p.submission}/{p.problem}:")),
                          soft_wrap=True)
            for line in p.new.checker_lines:
                style = "red" if line in p.disagreement else ""
                console.print(Text.assemble("    ", (printable(line), style)), soft_wrap=True)
    counts = ", ".join(f"{report.counts.get(s, 0)} {s}" for s in STATUSES
                       if report.counts.get(s, 0)) or "no pairs"
    console.print(Text(f"{counts}; exit {report.exit_code}"))


def render_markdown(report: ReplayReport, budget: int = STEP_SUMMARY_BUDGET) -> str:
    """The replay for ``$GITHUB_STEP_SUMMARY``, cut (with a note) to ``budget`` bytes."""
    counts = ", ".join(f"{report.counts.get(s, 0)} {s}" for s in STATUSES)
    mode = " (`--paranoid` audit)" if report.paranoid else ""
    lines = [f"## lean-eval replay{mode}", "",
             f"{len(report.pairs)} pair(s): {counts}; exit code {report.exit_code}.", ""]
    if report.drift:
        lines += ["Replayed despite drift (`--allow-drift`):", ""]
        lines += [f"- {md(d.describe())}" for d in report.drift] + [""]
    disagreeing = [p for p in report.pairs if p.status == "kernel_disagreement" and p.new]
    blocks = [[f"**kernel_disagreement** {md(p.submission)}/{md(p.problem)}:", "",
               *(f"- {md(line)}" for line in (p.new.checker_lines if p.new else ())), ""]
              for p in disagreeing]  # first: they are what an audit is for
    header = ["| submission | problem | recorded | replayed | status |", "|---|---|---|---|---|"]
    rows = [[(f"| {md(p.submission)} | {md(p.problem)} | {md(_judged(p.recorded))} | "
             f"{md(_judged(p.new))} | {p.status} |")] for p in report.pairs]
    used = sum(len(line.encode()) + 1 for line in lines)
    for what, items, before in (("disagreement", blocks, []), ("pair", rows, header)):
        lines += before
        used += sum(len(line.encode()) + 1 for line in before)
        for i, block in enumerate(items):
            size = sum(len(line.encode()) + 1 for line in block)
            if used + size + 200 > budget:
                lines += ["", (f"{len(items) - i} more {what}(s) not shown (size limit); see "
                          f"{out_layout.REPLAY}."), ""]
                used += 120
                break
            lines += block
            used += size
    return "\n".join(lines) + "\n"


def render(report: ReplayReport, fmt: str, width: int = 120) -> str:
    """The replay as ``table``, ``markdown`` or ``json`` text (``junit`` is for runs)."""
    if fmt == "json":
        return report.model_dump_json(indent=2) + "\n"
    if fmt == "markdown":
        return render_markdown(report)
    if fmt != "table":
        raise UsageError(f"--format {fmt} is not available for a replay report; use table, "
                         "markdown or json")
    buffer = io.StringIO()
    print_replay(report, Console(file=buffer, width=width, color_system=None,
                                 force_terminal=False))
    return buffer.getvalue()
