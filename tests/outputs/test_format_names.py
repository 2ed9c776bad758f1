"""The report formats are named once (outputs.report.names): the command line offers that very
list, and every name has its renderer (issue 32: no copy checked only end to end)."""

from __future__ import annotations

import click
from click.testing import CliRunner

from lean_eval.cli import main, options
from lean_eval.outputs.report import formats, names, run_report


def test_the_cli_offers_the_outputs_own_list_of_formats() -> None:
    assert options.REPORT_FORMATS is names.FORMATS is run_report.FORMATS
    report = main.commands["report"]
    (choice,) = [p.type for p in report.params if p.name == "fmt"]
    assert isinstance(choice, click.Choice) and tuple(choice.choices) == names.FORMATS
    shown = CliRunner().invoke(main, ["report", "--help"], catch_exceptions=False).output
    assert "|".join(names.FORMATS) in "".join(shown.split())


def test_every_format_named_has_a_renderer() -> None:
    assert tuple(formats.RENDERERS) == names.FORMATS
