"""A report of a partial merge (issue 32 item 1): the pairs no shard scored fail ``--fail-on``,
whatever its kinds, and a matrix counts a submission's solved pairs out of all of them, so a
submission of 5 problems with 2 unscored never reads "3/3". Lake launches are replayed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from fake_runner import FakeRunEval, FakeRunner
from support import correct, make_submission

from lean_eval.cli import main

PROBLEMS = ("two_plus_two", "double_def", "add_comm_explicit", "multi_hole", "widget_instance")


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def partial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, int, int]:
    """alice's 5 correct proofs scored as shards 1/2 and 2/2, merged without the shard holding
    fewer of them; (merged output, pairs merged, pairs no shard scored)."""
    run_eval = FakeRunEval(FakeRunner(), tmp_path, monkeypatch)
    alice = make_submission(tmp_path / "subs", "alice", {
        pid: {"Submission.lean": correct(pid) + "\n-- transcript: accepted\n"}
        for pid in PROBLEMS})
    shards = []
    for k in (1, 2):
        run = run_eval(alice, out=tmp_path / f"shard{k}", extra=("--shard", f"{k}/2"))
        assert run.code == 0, run.result.output
        shards.append((len(run.summary()["pairs"]), run.out))
    kept, out = max(shards)
    assert 0 < kept < len(PROBLEMS), shards  # the hash splits five pairs over both shards
    merged = _cli("merge", str(out), "--out", str(tmp_path / "merged"))
    assert merged.exit_code == 1, merged.output  # a shard is missing
    return tmp_path / "merged", kept, len(PROBLEMS) - kept


@pytest.mark.parametrize("kinds", ["rejected,invalid,error", "rejected", "unchanged"])
def test_pairs_no_shard_scored_fail_every_gate(partial: tuple[Path, int, int],
                                               kinds: str) -> None:
    merged, _, missing = partial
    result = _cli("report", str(merged), "--fail-on", kinds)
    assert result.exit_code == 1, result.output
    assert f"{missing} pair(s) failed the gate" in result.stderr
    assert "(not scored)" in result.stderr
    assert result.stderr.rstrip().endswith("exit 1")


def test_without_a_gate_report_exits_0_and_calls_the_merge_s_code_recorded(
        partial: tuple[Path, int, int]) -> None:
    """The table's last line is the merge's record ("recorded exit 1"), never a code report
    would seem to return."""
    merged, _, _ = partial
    result = _cli("report", str(merged))
    assert result.exit_code == 0
    assert result.stdout.rstrip().splitlines()[-1].endswith("; recorded exit 1"), result.stdout


def test_the_matrix_counts_solved_out_of_every_pair(partial: tuple[Path, int, int]) -> None:
    merged, kept, missing = partial
    markdown = _cli("report", str(merged), "--format", "markdown").stdout
    row = next(line for line in markdown.splitlines() if line.startswith("| alice |"))
    assert row.endswith(f"| {kept}/{kept + missing} |"), row
    html = _cli("report", str(merged), "--format", "html").stdout
    assert f"<td>{kept}/{kept + missing}</td>" in html
    document = json.loads(_cli("report", str(merged), "--format", "json").stdout)
    assert len(document["not_scored"]) == missing
