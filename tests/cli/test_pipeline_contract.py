"""run-eval's contract with a pipeline (issue 31 item 1, docs/pipeline.md): the public
pipeline's counts in ``--json``, consistent with ``problems``; under ``--json`` a setup or
argument failure prints a JSON error document on stdout and exits 2; ``--exit-zero`` exits 0
for every finished run and only for one. Lake launches are replayed (no sandbox)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_runner import PROBLEM, FakeRunEval, FakeRunner, submission
from hypothesis import given, settings
from hypothesis import strategies as st
from support import BATCH_PROBLEMS, make_identity, make_summary, make_verdict, pair_line
from support.profiles import examples

from lean_eval.cli import main
from lean_eval.records.run_report import ErrorDocument, ProblemInfo, run_eval_document
from lean_eval.records.verdict import SubmissionSummary

OUTCOMES = ("accepted", "rejected", "invalid_submission", "unchanged", "error")


@pytest.fixture
def fake_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeRunEval:
    return FakeRunEval(FakeRunner(), tmp_path, monkeypatch)


def _batch(base: Path) -> tuple[Path, ...]:
    return (submission(base / "subs", "good", "accepted"),
            submission(base / "subs", "wrong", "rejected_sorry"),
            submission(base / "subs", "slow", "timeout"))


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.tuples(st.sampled_from(("alice", "bob")), st.sampled_from(BATCH_PROBLEMS),
                          st.sampled_from(OUTCOMES)), max_size=8,
                unique_by=lambda t: (t[0], t[1])),
       st.dictionaries(st.sampled_from(BATCH_PROBLEMS), st.booleans()))
def test_the_pipeline_counts_are_those_of_problems(pairs: list[tuple[str, str, str]],
                                                   visible: dict[str, bool]) -> None:
    """Whatever the verdicts and visibilities (unknown ones included), the top-level counts are
    the entries' own, hidden and visible ones sum up, and succeeded implies attempted."""
    lines = [pair_line(make_verdict(s, p, o)) for s, p, o in pairs]
    subs = [SubmissionSummary(id=s, source=f"/in/{s}", digest="d" * 64,
                              problems=tuple(p for s2, p, o in pairs
                                             if s2 == s and o != "unchanged"))
            for s in ("alice", "bob")]
    summary = make_summary(lines, subs, problems=BATCH_PROBLEMS, identity=make_identity())
    info = {pid: ProblemInfo(pid.upper(), v) for pid, v in visible.items()}
    doc = json.loads(run_eval_document(summary, info).model_dump_json())
    problems = doc["problems"]
    assert doc["total_problems"] == len(problems) == len(BATCH_PROBLEMS)
    for key in ("attempted", "succeeded"):
        assert doc[f"{key}_problems"] == sum(1 for p in problems if p[key])
        for side, flag in (("hidden", False), ("visible", True)):
            assert doc[f"{key}_{side}_problems"] == sum(
                1 for p in problems if p[key] and p["visible"] is flag)
    assert all(p["attempted"] for p in problems if p["succeeded"])
    assert {p["id"]: p["visible"] for p in problems} == {
        pid: visible.get(pid) for pid in BATCH_PROBLEMS}
    accepted = {p for _, p, o in pairs if o == "accepted"}
    assert {p["id"] for p in problems if p["succeeded"] is True} == accepted


def test_run_eval_json_prints_the_counts_and_visible(fake_run: FakeRunEval,
                                                     tmp_path: Path) -> None:
    run = fake_run(*_batch(tmp_path), extra=("--json", "--exit-zero"))
    document = json.loads(run.result.stdout)
    assert document["schema_version"] == 4
    assert (document["total_problems"], document["attempted_problems"],
            document["succeeded_problems"]) == (5, 1, 1)
    entry = next(p for p in document["problems"] if p["id"] == PROBLEM)
    assert entry["visible"] is True and entry["succeeded"] is True
    assert document["attempted_visible_problems"] == 1


def test_exit_zero_exits_0_with_an_error_pair_and_records_it(fake_run: FakeRunEval,
                                                              tmp_path: Path) -> None:
    batch = _batch(tmp_path)
    plain = fake_run(*batch, out=tmp_path / "plain")
    assert plain.code == plain.summary()["exit_code"] == 1
    zero = fake_run(*batch, out=tmp_path / "zero",
                    extra=("--exit-zero", "--fail-on", "rejected"), quiet=False)
    assert zero.code == zero.summary()["exit_code"] == 0, zero.result.output
    assert zero.verdict("slow", PROBLEM)["verdict"] == "error"
    assert "1 pair(s) failed the gate: wrong/two_plus_two; exit 0 (--exit-zero)" in \
        zero.result.stderr
    assert zero.result.stdout.rstrip().splitlines()[-1].endswith("; exit 0")


@pytest.mark.parametrize("exit_zero", [False, True])
def test_under_json_a_setup_failure_prints_an_error_document(
        fake_run: FakeRunEval, tmp_path: Path, exit_zero: bool) -> None:
    missing = tmp_path / "no-such-submission"
    run = fake_run(missing, extra=("--json", *(["--exit-zero"] if exit_zero else [])))
    assert run.code == 2
    document = ErrorDocument.model_validate_json(run.result.stdout)
    assert document.status == "error" and document.exit_code == 2
    assert document.error == "usage"
    assert str(missing) in document.message
    assert f"lean-eval: error: {document.message}" in run.result.stderr
    assert json.loads(run.result.stdout)["status"] == "error"  # the pipeline's reading
    quiet = fake_run(missing)
    assert quiet.code == 2 and quiet.result.stdout == ""  # no --json: stderr only


@pytest.mark.parametrize("where", ["before", "after"])
def test_under_json_an_argument_error_prints_an_error_document(tmp_path: Path,
                                                               where: str) -> None:
    """--json is read before the other options, so its place on the line does not matter."""
    args = ["run-eval", str(tmp_path), "--out", str(tmp_path / "o"), "--timeout", "0"]
    args = ["run-eval", "--json", *args[1:]] if where == "before" else [*args, "--json"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 2
    document = ErrorDocument.model_validate_json(result.stdout)
    assert document.error == "usage" and "--timeout" in document.message


def test_under_json_a_config_file_error_prints_an_error_document(tmp_path: Path) -> None:
    """The --config file is read before run-eval parses its options: --json is seen anyway."""
    config = tmp_path / "lean-eval.toml"
    config.write_text('[run-eval]\ntimeout = "x"\n')
    args = ["--config", str(config), "run-eval", str(tmp_path), "--out", str(tmp_path / "o")]
    result = CliRunner().invoke(main, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 2
    document = ErrorDocument.model_validate_json(result.stdout)
    assert document.error == "config" and "timeout" in document.message
    plain = CliRunner().invoke(main, args, catch_exceptions=False)
    assert plain.exit_code == 2 and plain.stdout == ""
    after = CliRunner().invoke(main, [*args, "--", "--json"], catch_exceptions=False)
    assert after.exit_code == 2 and after.stdout == ""  # after "--", a submission's name
