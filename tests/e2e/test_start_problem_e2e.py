"""`lean-eval start-problem`: the submitter's starting point, and the path from it to a score."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from support import CORRECT, RunEval

from lean_eval.cli import main


def start(benchmark: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["start-problem", *args, "--benchmark", str(benchmark)],
                                catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.sandbox
def test_start_edit_validate_score(run_eval: RunEval, outside: Path) -> None:
    """The submitter's whole path: start-problem, replace the sorry, validate, run-eval."""
    dest = outside / "alice"
    code, _, err = start(run_eval.benchmark, "two_plus_two", str(dest))
    assert code == 0, err
    submission = dest / "two_plus_two" / "Submission.lean"
    starter = submission.read_text(encoding="utf-8")
    assert "sorry" in starter
    # the edit: the placeholder proof becomes the known-good one, nothing else changes, so
    # `import Submission.Helpers` stays and the starter Helpers module must be there to build
    proof = (CORRECT / "two_plus_two" / "Submission.lean").read_text().split(":= ", 1)[1]
    proof = proof.split("\n", 1)[0]
    assert starter.count(":= by sorry") == 1
    submission.write_text(starter.replace(":= by sorry", f":= {proof}"))
    assert "import Submission.Helpers" in submission.read_text()
    assert "sorry" not in submission.read_text()

    result = CliRunner().invoke(main, ["validate-submission", str(dest), "--benchmark",
                                       str(run_eval.benchmark)], catch_exceptions=False)
    assert result.exit_code == 0, result.output

    run = run_eval(dest)
    assert run.code == 0, run.result.output
    assert run.verdict("alice", "two_plus_two")["verdict"] == "accepted"
    assert (run.out / "summary.json").is_file()
    assert "Traceback" not in run.result.output
