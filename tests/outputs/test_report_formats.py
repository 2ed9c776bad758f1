"""report at a glance: the markdown matrix and its failure-first order, the size cut, hints in
every format, CSV, and --fail-on on report and run-eval.

Built from the models (test_report.build) except the --fail-on run, which scores the example
batch with the stand-in toolchain.
"""

from __future__ import annotations

import csv
import html
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner
from support import REPORT_PAIRS, report_run

from lean_eval.cli import main
from lean_eval.cli.results import FAIL_ON_KINDS
from lean_eval.outputs.report import markdown, run_report
from lean_eval.records.run_report import RunReport

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "submissions"
HINT = "put each proof in <problem>/Submission.lean, e.g. two_plus_two/ <b>|*x*|</b> =1+1"


def with_empty_submission(out: Path, hint: str = HINT) -> Path:
    """Add a submission in which intake found no problem directory (with its hint)."""
    data = json.loads((out / "summary.json").read_text())
    data["submissions"].append({"id": "empty", "source": "/in", "digest": "d" * 64,
                                "problems": [], "hint": hint})
    (out / "summary.json").write_text(json.dumps(data))
    return out


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_markdown_leads_with_the_matrix_then_failures_then_accepted_in_details(
        tmp_path: Path) -> None:
    # failures last in input order: the report must still show them first
    rows = [(f"s{i}", p, "accepted", "completed", "accepted", "ok")
            for i in range(4) for p in ("two_plus_two", "double_def")]
    rows += [("s4", "two_plus_two", "rejected", "completed", "kernel_rejected", "late no"),
             ("s4", "double_def", "error", "timed_out", "timeout", "late timeout")]
    text = markdown.render_markdown(run_report.load_run(report_run(tmp_path / "o", rows,
                                                                  rejected_whole=None)))
    lines = text.splitlines()
    matrix = lines.index("| submission | double\\_def | two\\_plus\\_two | solved |")
    failures = lines.index("### Failures and errors (2)")
    details = lines.index("<details>")
    assert matrix < failures < details
    assert lines[matrix + 2:matrix + 7] == [
        "| s0 | ✅ | ✅ | 2/2 |", "| s1 | ✅ | ✅ | 2/2 |", "| s2 | ✅ | ✅ | 2/2 |",
        "| s3 | ✅ | ✅ | 2/2 |", "| s4 | ⚠️ | ❌ | 0/2 |"]
    assert any(line.startswith("Legend: ✅ solved, ❌ rejected") for line in lines)
    failing = [i for i, line in enumerate(lines) if "late" in line]
    assert len(failing) == 2 and all(failures < i < details for i in failing)
    assert "timeout, timed\\_out: late timeout" in text
    assert lines[details + 1] == "<summary>8 accepted or unchanged pair(s)</summary>"
    accepted = [i for i, line in enumerate(lines) if "| accepted |" in line]
    assert len(accepted) == 8 and min(accepted) > details
    assert lines.index("</details>") > max(accepted)


def test_markdown_size_cut_keeps_every_failure_and_drops_accepted_rows_first(
        tmp_path: Path) -> None:
    rows = [(f"sub{i:04d}", "two_plus_two", "accepted", "completed", "accepted", "ok")
            for i in range(1500)]
    rows += [(f"late{i}", "two_plus_two", "rejected", "completed", "kernel_rejected",
              f"failure number {i}") for i in range(30)]
    run = run_report.load_run(report_run(tmp_path / "o", rows, rejected_whole=None))
    for budget in (60_000, 20_000):  # the matrix (about 37 kB) fits the first, not the second
        text = markdown.render_markdown(run, budget=budget)
        assert len(text.encode()) <= budget
        for i in range(30):  # the failures came last and are all kept
            assert f"failure number {i} |" in text
        assert "more failing" not in text
        shown = text.count("| accepted |")
        assert 0 < shown < 1500
        assert f"{1500 - shown} accepted or unchanged pair(s) not shown (size limit)" in text
        assert "<summary>1500 accepted or unchanged pair(s)</summary>" in text
        # accepted rows go first; the matrix only when even it does not fit, saying so
        dropped = "The matrix (1530 submissions) is left out (size limit)" in text
        assert dropped == (budget == 20_000)
        assert ("| sub0000 | ✅ | 1/1 |" in text) == (not dropped)


@pytest.mark.parametrize("fmt", run_report.FORMATS)
def test_no_problem_directory_hint_appears_in_every_format(tmp_path: Path, fmt: str) -> None:
    out = with_empty_submission(report_run(tmp_path / "o"))
    code, text = invoke("report", str(out), "--format", fmt)
    assert code == 0, text
    expected = {"markdown": markdown.md(HINT), "html": html.escape(HINT),
                "table": "put each proof in"}.get(fmt, HINT)
    if fmt == "junit":
        root = ET.fromstring(text.encode())  # noqa: S314 - our own output
        skipped = root.find("./testsuite[@name='empty']/testcase/skipped")
        assert skipped is not None
        text = skipped.get("message") or ""
    if fmt == "table":
        text = " ".join(text.split())
    if fmt not in ("junit", "json"):  # there the id is the suite's name, the key "hint"
        assert "empty" in text and "no problem directory" in text.replace("_", " ")
    assert expected in text, text
    if fmt == "json":
        doc = RunReport.model_validate_json(text)
        assert {s.id: s.hint for s in doc.submissions}["empty"] == HINT


def test_csv_has_a_row_per_pair_and_never_a_formula(tmp_path: Path) -> None:
    rows = [*REPORT_PAIRS, ("formula", "two_plus_two", "rejected", "completed", "kernel_rejected",
                     '=HYPERLINK("http://x","y"), and\na second "line"')]
    out = with_empty_submission(report_run(tmp_path / "o", rows))
    code, text = invoke("report", str(out), "--format", "csv")
    assert code == 0
    table = list(csv.DictReader(io.StringIO(text)))
    pairs = [(r["submission"], r["problem"]) for r in table if r["problem"]]
    assert pairs == [(r[0], r[1]) for r in rows]
    by_id = {(r["submission"], r["problem"]): r for r in table}
    assert by_id[("good", "two_plus_two")]["tally"] == "solved"
    assert by_id[("gone", "")]["verdict"] == "rejected_submission"
    assert by_id[("empty", "")]["message"] == HINT
    message = by_id[("formula", "two_plus_two")]["message"]
    assert message.startswith("'=HYPERLINK(") and "\\x0a" in message
    assert all(not v.startswith(("=", "+", "-", "@")) for r in table for v in r.values())


def test_report_fail_on_exits_1_only_for_the_named_kinds(tmp_path: Path) -> None:
    out = report_run(tmp_path / "o")
    assert invoke("report", str(out), "--format", "json")[0] == 0
    code, text = invoke("report", str(out), "--format", "markdown", "--fail-on", "rejected")
    assert code == 1 and "## lean-eval results" in text  # rendered, then failed the gate
    assert "--fail-on rejected: 2 pair(s) failed the gate: good/double_def" in text
    assert invoke("report", str(out), "--fail-on", "error")[0] == 1
    assert invoke("report", str(out), "--fail-on", "invalid_submission")[0] == 1
    only_good = report_run(tmp_path / "g", [REPORT_PAIRS[0], REPORT_PAIRS[3]], rejected_whole=None)
    assert invoke("report", str(only_good), "--fail-on", "rejected,invalid,error")[0] == 0
    assert invoke("report", str(only_good), "--fail-on", "unchanged")[0] == 1
    whole = report_run(tmp_path / "w", [REPORT_PAIRS[0]], rejected_whole="gone")
    assert invoke("report", str(whole), "--fail-on", "invalid")[0] == 1  # rejected as a whole
    assert invoke("report", str(whole), "--fail-on", "rejected")[0] == 0


def test_fail_on_refuses_an_unknown_kind_naming_the_choices(tmp_path: Path) -> None:
    code, text = invoke("report", str(report_run(tmp_path / "o")), "--fail-on", "rejected,oops")
    assert code == 2
    assert "'oops'" in text and "rejected, invalid, unchanged, error" in text
    # --help spells the kinds without importing the report module: the same list
    kinds = ", ".join(k for k in run_report.FAIL_ON if k in run_report.TALLY.values())
    assert kinds == FAIL_ON_KINDS
    assert set(run_report.FAIL_ON.values()) == set(run_report.TALLY.values()) - {"solved"}


