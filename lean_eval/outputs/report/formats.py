"""The one place that picks a renderer for ``lean-eval report``; above every format module."""

from __future__ import annotations

from pathlib import Path

from lean_eval.outputs.report.console import render_table
from lean_eval.outputs.report.csv_table import render_csv
from lean_eval.outputs.report.html_page import render_html
from lean_eval.outputs.report.junit import render_junit
from lean_eval.outputs.report.markdown import render_markdown
from lean_eval.outputs.report.run_report import Format, Run, render_json


def render(run: Run, fmt: Format, page_dir: Path | None = None) -> str:
    """``run`` in ``fmt``; ``page_dir``: where the document goes (the HTML page links files
    relative to it)."""
    if fmt == "markdown":
        return render_markdown(run)
    if fmt == "junit":
        return render_junit(run)
    if fmt == "csv":
        return render_csv(run)
    if fmt == "html":
        return render_html(run, page_dir)
    if fmt == "json":
        return render_json(run)
    return render_table(run, hints=True)
