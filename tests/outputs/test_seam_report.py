"""Reports of finished runs whose Lake launches were replayed (no bubblewrap): every format of a
run holding every kind of verdict, JUnit and markdown of the example batch, run-eval --fail-on."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_runner import FakeRunEval, FakeRunner, by_pair, load_transcripts, submission
from support import REPO, correct, make_submission

from lean_eval.cli import main
from lean_eval.outputs.report import run_report
from lean_eval.records.run_report import RunReport

EXAMPLES = REPO / "examples" / "submissions"
# What the example `incorrect` submission's pairs are (tests/e2e/test_run_eval.py checks the live
# run)
INCORRECT = {("incorrect", "two_plus_two"): "rejected_sorry",
             ("incorrect", "add_comm_explicit"): "rejected_statement"}


def _report(out: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["report", str(out), *args], catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture
def every_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A finished run: one pair per transcript, an unchanged pair and an invalid submission."""
    run_eval = FakeRunEval(FakeRunner(default=None), tmp_path, monkeypatch)
    subs = [submission(tmp_path / "subs", case.replace("_", "-"), case)
            for case in load_transcripts()]
    starter = (REPO / "workspaces" / "two_plus_two" / "Submission.lean").read_text()
    subs.append(make_submission(tmp_path / "subs", "lazy",
                                {"two_plus_two": {"Submission.lean": starter}}))
    subs.append(make_submission(tmp_path / "subs", "dup", {  # one problem twice: invalid
        f"{d}/two_plus_two": {"Submission.lean": correct("two_plus_two")} for d in "ab"}))
    run = run_eval(*subs, extra=("-j", "2"))
    assert run.code == 1, run.result.output  # timeout and resource_exhausted are errors
    return run.out


@pytest.mark.parametrize("fmt", run_report.FORMATS)
def test_every_format_of_a_finished_run_names_every_pair(every_kind: Path, fmt: str) -> None:
    summary = json.loads((every_kind / "summary.json").read_text())
    code, text = _report(every_kind, "--format", fmt)
    assert code == 0, text
    names = {p["submission"] for p in summary["pairs"]} | {
        s["id"] for s in summary["submissions"]}
    assert {"lazy", "dup"} <= names
    for name in names:
        assert name in text, (fmt, name)


def test_junit_csv_and_json_count_what_the_summary_counts(every_kind: Path) -> None:
    summary = json.loads((every_kind / "summary.json").read_text())
    pairs = summary["pairs"]
    verdicts = {(p["submission"], p["problem"]): p["verdict"] for p in pairs}
    assert set(verdicts.values()) == {"accepted", "rejected", "error", "invalid_submission"}
    assert summary["counts"]["unchanged"] == 1
    _, junit = _report(every_kind, "--format", "junit")
    root = ET.fromstring(junit.encode())  # noqa: S314 - our own output
    failures = [p for p in pairs if p["verdict"] in ("rejected", "invalid_submission")]
    assert len(root.findall("./testsuite/testcase/failure")) == len(failures)
    assert int(root.get("errors") or 0) == summary["counts"]["error"]
    _, text = _report(every_kind, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {(r["submission"], r["problem"]) for r in rows} >= set(verdicts)
    _, text = _report(every_kind, "--format", "json")
    doc = RunReport.model_validate_json(text)
    assert {(p.submission, p.problem, p.verdict) for p in doc.pairs} >= {
        (s, p, v) for (s, p), v in verdicts.items()}


def test_junit_of_a_run_has_a_testcase_per_pair(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    run_eval = FakeRunEval(FakeRunner(pick=by_pair(INCORRECT)), tmp_path, monkeypatch)
    good = make_submission(tmp_path / "in", "good", {"two_plus_two": {
        "Submission.lean": correct("two_plus_two")}})
    run = run_eval(good, EXAMPLES / "incorrect")
    assert (run.out / "summary.json").is_file(), run.result.output
    pairs = run.summary()["pairs"]
    result = CliRunner().invoke(main, ["report", str(run.out), "--format", "junit"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    root = ET.fromstring(result.output.encode())  # noqa: S314 - our own output
    cases = root.findall("./testsuite/testcase")
    assert sorted((c.get("classname"), c.get("name")) for c in cases) == \
        sorted((p["submission"], p["problem"]) for p in pairs)
    failing = [p for p in pairs if p["verdict"] in ("rejected", "invalid_submission")]
    assert failing and len(root.findall("./testsuite/testcase/failure")) == len(failing)
    assert {p["verdict"] for p in pairs if p["submission"] == "good"} == {"accepted"}
    markdown = CliRunner().invoke(main, ["report", str(run.out), "--format", "markdown"],
                                  catch_exceptions=False)
    assert "| good | · | ✅ | 1/1 |" in markdown.output


def test_run_eval_fail_on_rejected_on_the_example_batch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_eval = FakeRunEval(FakeRunner(pick=by_pair(INCORRECT)), tmp_path, monkeypatch)
    batch = (EXAMPLES / "correct", EXAMPLES / "incorrect")
    plain = run_eval(*batch, out=tmp_path / "plain")
    assert plain.result.exit_code == 0, plain.result.output
    verdicts = {p["verdict"] for p in plain.summary()["pairs"]}
    assert verdicts == {"accepted", "rejected"}
    gated = run_eval(*batch, out=tmp_path / "gated", extra=("--fail-on", "rejected"))
    assert gated.result.exit_code == 1, gated.result.output
    assert (tmp_path / "gated" / "summary.json").is_file()
    assert "failed the gate" in gated.result.output
    assert run_eval(*batch, out=tmp_path / "other",
                    extra=("--fail-on", "invalid,error")).result.exit_code == 0
