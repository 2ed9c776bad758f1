"""Each verdict outcome and execution kind is defined once, in lean_eval/records/kinds.py (issue
30 item 7): what every other place derives from it is checked here, in the inner loop, so a
kind added there and forgotten in a report format, the tally, ``--fail-on`` or the design
fails at once."""

from __future__ import annotations

import re
from typing import get_args

from support import REPO

from lean_eval.cli import options, progress
from lean_eval.outputs.report import console, html_page, markdown, run_report
from lean_eval.records import kinds, verdict
from lean_eval.records.registry import schemas
from lean_eval.scoring import scheduler


def test_the_models_and_the_schemas_use_the_kinds_of_the_table() -> None:
    assert verdict.Outcome is kinds.Outcome and verdict.Execution is kinds.Execution
    assert tuple(kinds.OUTCOMES) == get_args(kinds.Outcome)
    assert tuple(kinds.EXECUTIONS) == get_args(kinds.Execution)
    found = schemas()["verdict.schema.json"]
    assert found["properties"]["verdict"]["enum"] == list(kinds.OUTCOMES)
    assert found["properties"]["execution"]["enum"] == list(kinds.EXECUTIONS)


def test_the_tally_and_the_counts_follow_the_table() -> None:
    assert tuple(verdict.Tally.model_fields) == tuple(kinds.TALLY.values())
    assert tuple(kinds.OUTCOMES) == scheduler.OUTCOMES
    infrastructure = {"timed_out", "resource_exhausted", "crashed", "sandbox_error",
                      "harness_error", "infrastructure_error"}
    assert infrastructure == verdict.INFRASTRUCTURE_FAILURES
    assert {"timed_out", "resource_exhausted"} == kinds.LIMIT_REACHED


def test_fail_on_is_the_table_s() -> None:
    assert run_report.FAIL_ON is kinds.FAIL_ON
    assert options.FAIL_ON_KINDS == "rejected, invalid, unchanged, error"
    assert set(kinds.FAIL_ON.values()) == set(kinds.TALLY.values()) - {"solved"}
    assert kinds.FAIL_ON["invalid_submission"] == "invalid"


def test_every_format_s_presentation_covers_exactly_the_kinds() -> None:
    assert set(console._STYLE) == set(kinds.OUTCOMES)
    assert set(progress._SHORT) == set(kinds.OUTCOMES)
    extra = {"not scored", "not submitted"}
    assert set(markdown.SYMBOLS) == set(kinds.TALLY.values()) | extra
    assert set(html_page.SYMBOLS) == set(kinds.TALLY.values()) | extra
    styled = set(re.findall(r"\.v-([a-z-]+) \{", html_page.CSS))
    assert set(kinds.TALLY.values()) <= styled
    assert set(markdown.FAILING) == {"rejected", "invalid_submission", "error"}


def test_the_design_names_every_kind() -> None:
    design = " ".join((REPO / "docs" / "design.md").read_text().split())
    named = re.search(r"`execution` \(`([^`]*)`", design)
    assert named is not None
    assert set(named.group(1).replace(" ", "").split("|")) == set(kinds.EXECUTIONS)
    outcomes = re.search(r"`verdict` \(`([^`]*)`\)", design)
    assert outcomes is not None
    assert set(outcomes.group(1).replace(" ", "").split("|")) == set(kinds.OUTCOMES)
