"""Messages a newcomer meets (issue 26, "Messages"): every problem in one message, each said
once, naming what was found and the option that applies."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import REPO, make_submission

from lean_eval.errors import UsageError
from lean_eval.scoring import arguments


def test_every_argument_problem_of_run_eval_is_in_one_message(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        arguments.check_run([tmp_path / "missing1", tmp_path / "missing2"], tmp_path / "o",
                            None, None, REPO)
    assert "missing1 does not exist" in str(caught.value)
    assert "missing2 does not exist" in str(caught.value)
    with pytest.raises(UsageError) as caught:
        arguments.check_run([tmp_path / "missing1"], tmp_path / "o", None, {"nope"}, REPO)
    assert "missing1 does not exist" in str(caught.value)
    assert "'nope'" in str(caught.value)
    sub = make_submission(tmp_path, "sub", {"two_plus_two": {"Submission.lean": "x"}})
    arguments.check_run([sub], tmp_path / "o", None, {"two_plus_two"}, REPO)  # all fine
