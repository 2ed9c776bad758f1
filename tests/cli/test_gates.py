"""run-eval's gate and exit line (design §4.5, §5.5 "CI gating"): the last console line and
summary.json state the exit code the process returns, and a submission that scored nothing is
named on the console and fails ``--fail-on invalid``. Lake launches are replayed (no sandbox)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_runner import FakeRunEval, FakeRunner, by_pair
from support import REPO, correct, make_submission

EXAMPLES = REPO / "examples" / "submissions"
INCORRECT = {("incorrect", "two_plus_two"): "rejected_sorry",
             ("incorrect", "add_comm_explicit"): "rejected_statement"}


@pytest.fixture
def fake_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeRunEval:
    return FakeRunEval(FakeRunner(pick=by_pair(INCORRECT)), tmp_path, monkeypatch)


def _last_line(text: str) -> str:
    return text.rstrip("\n").splitlines()[-1]


def test_the_exit_line_and_summary_say_the_code_fail_on_returns(fake_run: FakeRunEval,
                                                                tmp_path: Path) -> None:
    batch = (EXAMPLES / "correct", EXAMPLES / "incorrect")
    gated = fake_run(*batch, out=tmp_path / "gated", extra=("--fail-on", "rejected"),
                     quiet=False)
    assert gated.code == 1, gated.result.output
    assert gated.summary()["exit_code"] == 1
    assert _last_line(gated.result.stdout).endswith("; exit 1"), gated.result.stdout
    assert "failed the gate" in gated.result.stderr and "; exit 1" in gated.result.stderr
    plain = fake_run(*batch, out=tmp_path / "plain", quiet=False)
    assert plain.code == 0 and plain.summary()["exit_code"] == 0
    assert _last_line(plain.result.stdout).endswith("; exit 0")


def test_fail_on_invalid_covers_a_submission_without_a_problem_directory(
        fake_run: FakeRunEval, tmp_path: Path) -> None:
    """An empty submission and the top-level Submission.lean mistake score nothing: red under
    ``--fail-on rejected,invalid,error``, and named by run-eval's own console."""
    subs = tmp_path / "subs"
    good = make_submission(subs, "good", {"two_plus_two": {
        "Submission.lean": correct("two_plus_two")}})
    (subs / "empty").mkdir()
    flat = subs / "flat"
    flat.mkdir()
    (flat / "Submission.lean").write_text(correct("two_plus_two"))
    run = fake_run(good, subs / "empty", flat, out=tmp_path / "o",
                   extra=("--fail-on", "rejected,invalid,error"), quiet=False)
    assert run.code == 1, run.result.output
    assert run.summary()["exit_code"] == 1
    assert run.verdict("good", "two_plus_two")["verdict"] == "accepted"
    # counted as what they are: submissions, not pairs (issue 32)
    assert ("2 submission(s) that scored nothing failed the gate: empty, flat; exit 1"
            in run.result.stderr)
    out = run.result.stdout
    assert "empty: no problem directory found" in out
    assert "flat: no problem directory found" in out
    assert _last_line(out) == "1 accepted; 2 submission(s) scored nothing; exit 1"
    assert "no problem directory found" not in run.result.stderr  # said once, in the listing
    plain = fake_run(good, subs / "empty", out=tmp_path / "p", extra=("--fail-on", "rejected"))
    assert plain.code == 0 and plain.summary()["exit_code"] == 0
