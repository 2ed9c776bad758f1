"""pair.run_pair contains a pair's faults (design §6.10): a job that breaks is that pair's
``harness_error`` verdict, and a verdict that cannot be written is an OutputError, never a
lost batch. The batch-level twins are in tests/e2e/test_hostile_batch.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support import (
    make_identity,
)

from lean_eval.errors import OutputError
from lean_eval.intake import reader
from lean_eval.scoring import pair

# --- item 1: pair-level fault containment -----------------------------------------------------


def _bare_context(base: Path) -> pair.RunContext:
    return pair.RunContext(problems={}, settings=None,  # type: ignore[arg-type]
                           ident=make_identity(),
                           scoring_root=base / "score", out_dir=base / "out")


def _bare_job(problem: str) -> pair.PairJob:
    sub = reader.Intake(submission_id="s", source="/x", digest="d", problems=(), rejection=None,
                        ignored=())
    entry = reader.ProblemEntry(problem_id=problem, location=problem, files=(), rejection=None,
                                ignored=())
    return pair.PairJob(sub, problem, entry)


def test_run_pair_turns_even_a_broken_job_into_a_harness_error_verdict(outside: Path) -> None:
    v = pair.run_pair(_bare_job("no_such_problem"), _bare_context(outside))
    assert (v.verdict, v.execution, v.reason.code) == ("error", "harness_error", "harness_error")
    assert "KeyError" in v.reason.message
    assert (outside / "out" / "s" / "no_such_problem.json").is_file()


def test_run_pair_raises_output_error_when_the_verdict_cannot_be_written(outside: Path) -> None:
    (outside / "out").mkdir()
    (outside / "out" / "s").write_text("a file where the submission's directory goes")
    with pytest.raises(OutputError, match="cannot write the verdict"):
        pair.run_pair(_bare_job("p"), _bare_context(outside))
