"""The one place that picks a renderer for ``lean-eval report``; above every format module."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lean_eval.outputs.report.console import render_table
from lean_eval.outputs.report.csv_table import render_csv
from lean_eval.outputs.report.html_page import render_html
from lean_eval.outputs.report.junit import render_junit
from lean_eval.outputs.report.markdown import render_markdown
from lean_eval.outputs.report.names import Format
from lean_eval.outputs.report.run_report import Run, render_json

# Every name of ``names.FORMATS`` and its renderer (tests/outputs/test_report_formats.py checks
# the keys are exactly those names).
RENDERERS: dict[Format, Callable[[Run, Path | None], str]] = {
    "table": lambda run, _: render_table(run, hints=True),
    "markdown": lambda run, _: render_markdown(run),
    "junit": lambda run, _: render_junit(run),
    "json": lambda run, _: render_json(run),
    "csv": lambda run, _: render_csv(run),
    "html": render_html,
}


def render(run: Run, fmt: Format, page_dir: Path | None = None) -> str:
    """``run`` in ``fmt``; ``page_dir``: where the document goes (the HTML page links files
    relative to it)."""
    return RENDERERS[fmt](run, page_dir)
