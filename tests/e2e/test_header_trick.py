"""The `/-/-` comment trick of issue 12 through every command that reads a header.

After `/-` Lean consumes the next character before it scans the comment body, so `/-/- -/` is a
whole comment and the line after it is code: an import there is an import. The submission check
(`run-eval`, `validate-submission`) and the trusted-file check (`validate-catalog`, catalog
loading in `run-eval`) must see it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from support import (
    RunEval,
    batch_ok,
    changed_benchmark,
    correct,
    good,
    make_submission,
)

P = "two_plus_two"
TRICK = "/-/- -/\nimport «..».«..».etc.passwd\n-- -/\n"
HIDDEN_POOL = "/-/- -/\nimport LeanPool\n-- -/\n"


def trick(subs: Path) -> Path:
    return make_submission(subs, "trick", {P: {"Submission.lean": TRICK + correct(P)}})


def test_the_trick_is_import_rejected_and_the_correct_pair_accepted(
        run_eval: RunEval, outside: Path) -> None:
    subs = outside / "subs"
    good(subs)
    trick(subs)
    run = run_eval(subs / "good", subs / "trick")
    batch_ok(run, outside)
    verdict = run.verdict("trick", P)
    assert (verdict["verdict"], verdict["execution"]) == ("invalid_submission", "not_run")
    assert verdict["reason"]["code"] == "import_rejected", verdict["reason"]
    assert (f"{P}/Submission.lean: import header, line 2: module name "
            "'«..».«..».etc.passwd'") in verdict["reason"]["message"]
    assert run.code == 0, run.result.output


def _hide_pool_import(problem: str) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        path = root / "workspaces" / problem / "Challenge.lean"
        path.write_text(HIDDEN_POOL + path.read_text(encoding="utf-8"), encoding="utf-8")
    return change


def test_run_eval_refuses_a_catalog_hiding_a_solution_only_import(outside: Path,
                                                                  bwrap: str) -> None:
    del bwrap
    submission = make_submission(outside, "alice", {P: {"Submission.lean": correct(P)}})
    run = RunEval(changed_benchmark(outside, _hide_pool_import(P)), outside)(submission)
    assert run.code == 2, run.result.output
    assert f"workspaces/{P}/Challenge.lean imports LeanPool" in run.result.stderr
    assert "Traceback" not in run.result.output
    assert not (run.out / "summary.json").exists()
