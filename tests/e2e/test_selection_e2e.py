"""Sets and selection: --set, --status and --tag on list-problems, run-eval and
validate-submission; frozen sets are refused when a member's statement was revised."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from support import SOURCE, UPDATE_INDEX, RunEval, make_submission, solved

from lean_eval.cli import main

ALL = ["counter_where", "scaled_norm", "widget_facts"]


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def bench(outside: Path) -> Path:
    dest = outside / "bench"
    assert invoke("import-catalog", "-q", str(SOURCE), str(dest)).exit_code == 0
    return dest


def listed(bench: Path, *options: str) -> list[str]:
    result = invoke("list-problems", "--benchmark", str(bench), "--json", *options)
    assert result.exit_code == 0, result.output
    return [p["id"] for p in json.loads(result.stdout)["problems"]]


def _revise(bench: Path, pid: str, revision: int) -> None:
    path = bench / "problems" / f"{pid}.toml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("statement_revision = ", f"statement_revision = {revision}\n"
                                 "# was ", 1), encoding="utf-8")
    assert UPDATE_INDEX.main(["--root", str(bench)]) == 0


def test_a_frozen_set_with_a_revised_member_is_refused_naming_the_member(
        bench: Path, outside: Path, bwrap: str) -> None:
    _revise(bench, "scaled_norm", 3)
    result = invoke("list-problems", "--benchmark", str(bench), "--set", "v1")
    assert result.exit_code == 2
    assert ("sets/v1.toml: frozen set member 'scaled_norm' is at statement revision 2, the "
            "catalog's is 3") in result.output
    validated = invoke("validate-catalog", "--benchmark", str(bench))
    assert validated.exit_code == 1
    assert "sets/v1.toml: frozen set member 'scaled_norm'" in validated.output
    submission = make_submission(outside, "alice", {"scaled_norm": {
        "Submission.lean": solved(SOURCE, "scaled_norm")}})
    run = RunEval(bench, outside)(submission, extra=("--set", "v1"))
    assert run.code == 2
    assert "frozen set member 'scaled_norm'" in run.result.output
    assert not (run.out / "summary.json").exists()
    checked = invoke("validate-submission", str(submission), "--benchmark", str(bench),
                     "--set", "v1")
    assert checked.exit_code == 2
    assert "frozen set member 'scaled_norm'" in checked.output
    # a set that is not frozen may drift; other selections are unaffected
    assert listed(bench, "--tag", "analysis") == ["scaled_norm"]
    _revise(bench, "counter_where", 2)
    assert listed(bench, "--set", "drafts") == ["counter_where"]


def test_set_files_are_covered_by_the_index(bench: Path, outside: Path, bwrap: str) -> None:
    path = bench / "sets" / "v1.toml"
    path.write_text(path.read_text(encoding="utf-8").replace("Fixture v1", "Edited v1"),
                    encoding="utf-8")
    validated = invoke("validate-catalog", "--benchmark", str(bench))
    assert validated.exit_code == 1
    assert "sets/v1.toml: differs from its digest in workspaces/index.json" in validated.output
    submission = make_submission(outside, "alice", {"scaled_norm": {
        "Submission.lean": solved(SOURCE, "scaled_norm")}})
    run = RunEval(bench, outside)(submission)
    assert run.code == 2
    assert "sets/v1.toml does not match workspaces/index.json" in run.result.output


def test_run_eval_and_validate_submission_score_exactly_the_selection(
        bench: Path, outside: Path, bwrap: str) -> None:
    submission = make_submission(outside, "alice", {pid: {"Submission.lean": solved(SOURCE, pid)}
                                                    for pid in ALL})
    run = RunEval(bench, outside)(submission, extra=("--status", "draft"))
    assert run.code == 0, run.result.output
    summary = json.loads((run.out / "summary.json").read_text())
    assert sorted(p.stem for p in (run.out / "alice").glob("*.json")) == [
        "counter_where", "widget_facts"], summary
    assert {run.verdict("alice", p)["verdict"] for p in ("counter_where", "widget_facts")} == {
        "accepted"}
    tagged = RunEval(bench, outside / "t")(submission, extra=("--tag", "analysis"))
    assert tagged.code == 0
    assert sorted(p.stem for p in (tagged.out / "alice").glob("*.json")) == ["scaled_norm"]
    checked = invoke("validate-submission", str(submission), "--benchmark", str(bench),
                     "--set", "v1", "--json")
    assert checked.exit_code == 0, checked.output
    assert sorted(p["problem_id"] for p in json.loads(checked.stdout)["problems"]) == [
        "scaled_norm", "widget_facts"]
