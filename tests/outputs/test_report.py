"""report: table, markdown, JUnit XML and JSON of an output directory; console escaping.

Outputs are built from the models (every verdict kind, hostile names and control characters);
the CLI-level run-eval showing that hostile names reach the console as text, not markup, is in
tests/e2e/test_report_e2e.py.
"""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console
from rich.text import Text
from support import (
    HOSTILE,
    REPORT_IDENTITY,
    REPORT_PAIRS,
    make_summary,
    pair_line,
    report_run,
    report_verdict,
)

from lean_eval.cli import main
from lean_eval.outputs.report import (
    console as report_console,
)
from lean_eval.outputs.report import (
    markdown as report_markdown,
)
from lean_eval.outputs.report import (
    run_report,
)
from lean_eval.records.documents import SelfCheckFinding, SelfCheckReport
from lean_eval.records.run_report import RunReport
from lean_eval.records.verdict import SubmissionSummary, Summary


def test_junit_parses_with_one_testcase_per_pair_and_one_failure_per_rejection(
        tmp_path: Path) -> None:
    out = report_run(tmp_path / "out")
    result = CliRunner().invoke(main, ["report", str(out), "--format", "junit"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    root = ET.fromstring(result.output.encode())  # noqa: S314 - our own output
    cases = root.findall("./testsuite/testcase")
    pair_cases = [c for c in cases if c.get("name") != "(submission)"]
    assert sorted((c.get("classname"), c.get("name")) for c in pair_cases) == \
        sorted((r[0], r[1]) for r in REPORT_PAIRS)
    rejections = [r for r in REPORT_PAIRS if r[2] in ("rejected", "invalid_submission")]
    assert len(root.findall("./testsuite/testcase/failure")) == len(rejections) + 1
    assert len(root.findall("./testsuite/testcase/error")) == 1
    assert len(root.findall("./testsuite/testcase/skipped")) == 1
    assert root.get("tests") == str(len(REPORT_PAIRS) + 1)
    assert root.get("failures") == str(len(rejections) + 1)
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"good", "bad", "hostile", "dotted.name_1-x", "gone"}
    assert suites["good"].get("failures") == "1" and suites["bad"].get("errors") == "1"
    error = root.find("./testsuite[@name='bad']/testcase[@name='multi_hole']/error")
    assert error is not None and "reached" in (error.text or "")  # control chars replaced


def test_markdown_has_a_matrix_and_pairs_and_escapes_names(tmp_path: Path) -> None:
    out = report_run(tmp_path / "out")
    text = report_markdown.render_markdown(run_report.load_run(out))
    assert "| submission | double\\_def | multi\\_hole | two\\_plus\\_two | solved |" in text
    assert "| good | ❌ | · | ✅ | 1/2 |" in text
    assert "| bad | ➖ | ⚠️ | 🚫 | 0/3 |" in text  # noqa: RUF001 - the unchanged symbol
    assert r"pipe\|star\*\_\[b\]" in text  # a message cannot add a column or markup
    assert "| good | two\\_plus\\_two | accepted |  | 0.7 s |" in text
    assert "statement\\_mismatch: x differs" in text
    assert "\x1b" not in text and "\x00" not in text
    pair_rows = [line for line in text.splitlines()
                 if line.startswith("| ") and "two\\_plus\\_two |" in line
                 and not line.startswith("| submission")]
    assert pair_rows
    for line in pair_rows:
        assert line.count(" | ") == 4, line


def test_markdown_stays_within_the_step_summary_budget(tmp_path: Path) -> None:
    rows = [(f"s{i}", "two_plus_two", "rejected", "completed", "kernel_rejected", "m" * 200)
            for i in range(300)]
    out = report_run(tmp_path / "out", rows, rejected_whole=None)
    text = report_markdown.render_markdown(run_report.load_run(out), budget=20_000)
    assert len(text.encode()) <= 20_000
    assert "more failing pair(s) not shown (size limit)" in text


def test_json_document(tmp_path: Path) -> None:
    out = report_run(tmp_path / "out")
    (out / "good" / "two_plus_two.log").write_text("log\n")
    result = CliRunner().invoke(main, ["report", str(out), "--format", "json"],
                                catch_exceptions=False)
    assert result.exit_code == 0
    doc = RunReport.model_validate_json(result.output)
    assert doc.schema_version == 2
    assert [(p.submission, p.problem) for p in doc.pairs] == [(r[0], r[1]) for r in REPORT_PAIRS]
    assert {s.id: s.solved for s in doc.submissions}["good"] == 1
    assert json.loads(result.output)["pairs"][0]["wall_seconds"] == 0.7
    assert [p.log_path for p in doc.pairs[:2]] == ["good/two_plus_two.log", None]


def test_output_file_is_written_whole(tmp_path: Path) -> None:
    out = report_run(tmp_path / "out")
    target = tmp_path / "reports" / "junit.xml"
    target.parent.mkdir()  # report creates no directory (tests/cli/test_messages.py)
    result = CliRunner().invoke(main, ["report", str(out), "--format", "junit", "--output",
                                       str(target)], catch_exceptions=False)
    assert result.exit_code == 0 and result.output == ""
    ET.parse(target)  # noqa: S314 - our own output
    assert [p.name for p in target.parent.iterdir()] == ["junit.xml"]
    table = tmp_path / "table.txt"
    assert CliRunner().invoke(main, ["report", str(out), "--output", str(table)],
                              catch_exceptions=False).exit_code == 0
    assert "[bold red]x" in table.read_text()


def test_report_on_a_directory_without_summary_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", str(tmp_path)], catch_exceptions=False)
    assert result.exit_code == 2
    assert "no readable summary.json" in result.output


def test_table_prints_hostile_names_literally(tmp_path: Path) -> None:
    out = report_run(tmp_path / "out")
    result = CliRunner().invoke(main, ["report", str(out)], catch_exceptions=False)
    assert result.exit_code == 0
    flat = result.output.replace("\n", "").replace("│", "").replace(" ", "")
    for name in (HOSTILE[0], HOSTILE[3], "corrupt[blink]archive"):
        assert name.replace(" ", "") in flat


@pytest.mark.parametrize("name", HOSTILE)
def test_console_never_reads_names_as_markup(name: str) -> None:
    verdict = report_verdict(name, "two_plus_two", "rejected", "completed", "kernel_rejected",
                           name)
    summary = console_summary(name)
    console = Console(record=True, force_terminal=True, color_system="truecolor", width=200,
                      file=io.StringIO())
    report_console.print_summary(summary, console)
    console.print(Text(report_console.verdict_line(verdict)))
    plain = console.export_text(styles=False)
    # markup would have been consumed (or raised MarkupError): the name shows as typed
    assert plain.count(name) >= 3, plain


def console_summary(name: str) -> Summary:
    """A run whose one submission is ``name`` (its id, source and rejection), with one pair."""
    pair = pair_line(report_verdict(name, "two_plus_two", "rejected", "completed",
                                    "kernel_rejected", name)).model_copy(update={"path": "p"})
    return make_summary([pair], [SubmissionSummary(id=name, source=name, digest="d",
                                                   problems=(), rejection=name)],
                        problems=("two_plus_two",), identity=REPORT_IDENTITY, compact=False)


def test_verdict_line_reads_like_a_sentence() -> None:
    ok = report_verdict("good", "two_plus_two", "accepted", "completed", "accepted", "")
    assert report_console.verdict_line(ok) == "good/two_plus_two  accepted  0.7 s"
    bad = report_verdict("good", "double_def", "rejected", "completed", "statement_mismatch", "")
    assert report_console.verdict_line(bad) == \
        "good/double_def  rejected  statement_mismatch  0.7 s"
    same = report_verdict("s", "p", "unchanged", "not_run", "unchanged", "")
    assert report_console.verdict_line(same) == "s/p  unchanged"
    slow = report_verdict("s", "p", "error", "timed_out", "timeout", "")
    assert report_console.verdict_line(slow) == "s/p  error  timeout, timed_out  0.7 s"


def test_piped_selfcheck_never_cuts_expected_or_got() -> None:
    long = "statement_mismatch|kernel_rejected|illegal_axiom|definition_mismatch"
    finding = SelfCheckFinding(submission="wrong_statement[/x]", ok=False, verdict="rejected",
                               reason="some_very_long_reason_code_" * 3, message="[bold]message",
                               expected_verdicts=("rejected",),
                               expected_reasons=tuple(sorted(long.split("|"))))
    result = SelfCheckReport(check="check-eval-workflow", ok=False, counts={"rejected": 1},
                             expected_counts={"rejected": 2}, where="/w", findings=(finding,))
    expected = "|".join(sorted(long.split("|")))
    for terminal in (False, True):
        buffer = io.StringIO()
        report_console.print_selfcheck(result, Console(file=buffer, width=60,
                                                       force_terminal=terminal, color_system=None))
        text = buffer.getvalue()
        assert "…" not in text  # a terminal table folds long cells instead of cutting them
        assert "FAILED" in text and "counts differ" in text
        if terminal:
            continue
        flat = "".join(text.split())
        assert expected in flat and "some_very_long_reason_code_" * 3 in flat
        assert "wrong_statement[/x]" in flat and "[bold]message" in flat


def test_console_shows_control_characters_escaped() -> None:
    summary = console_summary("s")
    summary = summary.model_copy(update={"submissions": (summary.submissions[0].model_copy(
        update={"rejection": "bad\x1b[2J\x1b]0;title\x07 name\nfake line"}),)})
    buffer = io.StringIO()
    report_console.print_summary(summary, Console(file=buffer, width=200, force_terminal=True))
    text = buffer.getvalue()
    assert "\x1b[2J" not in text and "\x07" not in text
    assert "bad\\x1b[2J\\x1b]0;title\\x07 name\\x0afake line" in text


INVISIBLE = ("\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068",
             "\u2069", "\u200e", "\u200f", "\u061c", "\u200b", "\u200c", "\u200d", "\u2060",
             "\ufeff")


@pytest.mark.parametrize("fmt", run_report.FORMATS)
def test_bidi_and_zero_width_controls_are_escaped_in_every_format(tmp_path: Path,
                                                                  fmt: str) -> None:
    trick = "accepted " + "".join(INVISIBLE) + " rejected"
    rows = [("good", "two_plus_two", "rejected", "completed", "kernel_rejected", trick),
            ("bad", "two_plus_two", "error", "timed_out", "timeout", trick)]
    out = report_run(tmp_path / "out", rows, rejected_whole="gone")
    data = json.loads((out / "summary.json").read_text())
    data["submissions"][-1]["rejection"] = trick
    (out / "summary.json").write_text(json.dumps(data))
    verdict = json.loads((out / "good" / "two_plus_two.json").read_text())
    verdict["log"]["tail"] = [trick]
    (out / "good" / "two_plus_two.json").write_text(json.dumps(verdict))
    result = CliRunner().invoke(main, ["report", str(out), "--format", fmt],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    text = result.output
    if fmt == "json":  # escaped in the values, not only in the JSON text
        text = json.dumps(json.loads(text), ensure_ascii=False)
    found = [f"U+{ord(c):04X}" for c in INVISIBLE if c in text]
    assert not found, found
    assert "\\u202e" in text.replace("\\\\", "\\")  # shown, not silently dropped
