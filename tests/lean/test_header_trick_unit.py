"""The `/-/-` comment trick of issue 12 through the commands that read a header without a
sandbox: ``validate-submission`` and ``validate-catalog``. After `/-` Lean consumes the next
character before it scans the comment body, so `/-/- -/` is a whole comment and the line after
it is code: an import there is an import. The run-eval twins are in
tests/e2e/test_header_trick.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from support import (
    changed_benchmark,
    correct,
    make_submission,
    validate_catalog,
    validate_submission,
)

P = "two_plus_two"
TRICK = "/-/- -/\nimport «..».«..».etc.passwd\n-- -/\n"
HIDDEN_POOL = "/-/- -/\nimport LeanPool\n-- -/\n"


def trick(subs: Path) -> Path:
    return make_submission(subs, "trick", {P: {"Submission.lean": TRICK + correct(P)}})


def test_validate_submission_reports_the_trick_rejected(bench_copy: Path, outside: Path) -> None:
    result = validate_submission(bench_copy, trick(outside))
    assert result.exit_code == 1, result.output
    assert f"{P} ({P}): invalid_submission (import_rejected)" in result.stderr
    assert "would be scored" not in result.stdout
    assert "Traceback" not in result.output


def _hide_pool_import(problem: str) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        path = root / "workspaces" / problem / "Challenge.lean"
        path.write_text(HIDDEN_POOL + path.read_text(encoding="utf-8"), encoding="utf-8")
    return change


def test_validate_catalog_sees_a_solution_only_import_behind_the_trick(outside: Path) -> None:
    result = validate_catalog(changed_benchmark(outside, _hide_pool_import("widget_instance")))
    assert result.exit_code == 1, result.output
    assert ("workspaces/widget_instance/Challenge.lean: imports LeanPool, which benchmark.toml "
            "declares solution-only") in result.output
