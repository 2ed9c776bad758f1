"""What a newcomer met in round 5 (issue 32 item 3), checked without a sandbox: each test here
failed on the code before its fix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner
from support import (
    PROBLEM,
    SOURCE,
    correct,
    make_submission,
    validate_submission,
)

from lean_eval.cli import main
from lean_eval.intake import reader
from lean_eval.outputs.report.markdown import md


def _started(bench: Path, dest: Path) -> Path:
    """``start-problem`` of PROBLEM into ``dest``: the starters and the read-only copies."""
    done = CliRunner().invoke(main, ["start-problem", PROBLEM, str(dest), "--benchmark",
                                     str(bench), "-q"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return dest / PROBLEM


# --- validate-submission: an edit scoring ignores, an import the benchmark cannot build -------


def test_validate_submission_warns_of_an_edited_read_only_copy(bench_copy: Path,
                                                               tmp_path: Path) -> None:
    problem = _started(bench_copy, tmp_path / "submission")
    (problem / "Submission.lean").write_text(correct(PROBLEM))
    quiet = validate_submission(bench_copy, tmp_path / "submission")
    assert quiet.exit_code == 0 and "warning" not in quiet.output, quiet.output  # control
    challenge = problem / "Challenge.lean"
    challenge.chmod(0o644)
    challenge.write_text(challenge.read_text().replace("2 + 2 = 4", "True"))
    warned = validate_submission(bench_copy, tmp_path / "submission")
    assert warned.exit_code == 0, warned.output  # a warning: nothing would be rejected
    assert ("warning: Challenge.lean differs from the benchmark's: it is a read-only copy that "
            "scoring never reads") in warned.output
    doc = json.loads(validate_submission(bench_copy, tmp_path / "submission", "--json").stdout)
    (item,) = doc["problems"]
    assert [w.split(":")[0] for w in item["warnings"]] == ["Challenge.lean differs from the "
                                                          "benchmark's"]


def test_validate_submission_warns_of_an_unchanged_submission_beside_an_edited_copy(
        bench_copy: Path, tmp_path: Path) -> None:
    """The edit is the whole change: the pair would be skipped as unchanged, and says why."""
    problem = _started(bench_copy, tmp_path / "submission")
    config = problem / "config.json"
    config.chmod(0o644)
    config.write_text(config.read_text() + "\n")
    result = validate_submission(bench_copy, tmp_path / "submission")
    assert "unchanged, every file is the starter" in result.output
    assert "warning: config.json differs from the benchmark's" in result.output


def test_validate_submission_warns_of_mathlib_in_a_benchmark_without_it(
        bench_copy: Path, tmp_path: Path) -> None:
    proof = correct(PROBLEM)
    fine = make_submission(tmp_path, "core", {PROBLEM: {
        "Submission.lean": "import Lean.Data.HashMap\n" + proof}})
    assert "warning" not in validate_submission(bench_copy, fine).output  # core: buildable
    sub = make_submission(tmp_path, "mathlib", {PROBLEM: {
        "Submission.lean": "import Mathlib.Tactic\n" + proof,
        "Submission/Extra.lean": "import Batteries\n"}})
    result = validate_submission(bench_copy, sub)
    assert ("warning: Submission.lean imports Mathlib.Tactic, but this benchmark does not "
            "require Mathlib (its lakefile.toml has no [[require]] mathlib): the build would "
            "fail") in result.output
    assert ("warning: Submission/Extra.lean imports Batteries, but this benchmark has no "
            "dependencies") in result.output


def test_a_miscased_submission_file_is_named_with_the_name_meant(bench_copy: Path,
                                                                 tmp_path: Path) -> None:
    lower = make_submission(tmp_path, "lower", {PROBLEM: {"submission.lean": correct(PROBLEM)}})
    result = validate_submission(bench_copy, lower)
    assert result.exit_code == 1
    assert (f"{PROBLEM}/ has no Submission.lean; it holds submission.lean: names are "
            "case-sensitive, rename it to Submission.lean") in result.output
    helpers = make_submission(tmp_path, "helpers", {PROBLEM: {
        "Submission.lean": correct(PROBLEM), "submission/Helpers.lean": "-- helper\n"}})
    result = validate_submission(bench_copy, helpers)
    assert "names are case-sensitive: did you mean Submission/?" in result.output


# --- config, test --help, import-catalog --------------------------------------------------------


def test_config_takes_config_file_after_the_command_too(tmp_path: Path) -> None:
    settings = tmp_path / "settings.toml"
    settings.write_text("[run-eval]\ntimeout = 77\n")
    before = CliRunner().invoke(main, ["--config", str(settings), "config", "run-eval", "-q"],
                                catch_exceptions=False)
    assert "run-eval --timeout = 77.0" in before.output  # the group's option: the reference
    for args in (["config", "run-eval", "--config", str(settings), "-q"],
                 ["config", f"--config={settings}", "run-eval", "-q"]):
        shown = CliRunner().invoke(main, args, catch_exceptions=False)
        assert shown.exit_code == 0, shown.output
        assert shown.output == before.output, args
    missing = CliRunner().invoke(main, ["config", "run-eval", "--config",
                                        str(tmp_path / "nope.toml")], catch_exceptions=False)
    assert missing.exit_code == 2 and "nope.toml" in missing.output


def test_test_help_says_what_it_runs() -> None:
    shown = CliRunner().invoke(main, ["test", "--help"], catch_exceptions=False).output
    assert "WorkspaceTest" not in shown
    assert "lake comparator" in " ".join(shown.split())


def test_import_catalog_names_its_source_and_check_says_only_whether_dest_is_stale(
        tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(SOURCE, src)  # not a git checkout: the provenance warning names SRC
    dest = tmp_path / "dest"
    done = CliRunner().invoke(main, ["import-catalog", str(src), str(dest)],
                              catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert "warning: .:" not in done.output
    assert f"warning: {src}: the source is no git checkout" in done.output
    assert "changed: " in done.output  # the import's own news
    check = CliRunner().invoke(main, ["import-catalog", str(src), str(dest), "--check"],
                               catch_exceptions=False)
    assert check.exit_code == 0, check.output
    assert "changed: " not in check.output and "dropped: " not in check.output
    assert f"{dest} is up to date" in check.output
    verbose = CliRunner().invoke(main, ["import-catalog", str(src), str(dest), "--check", "-v"],
                                 catch_exceptions=False)
    assert "changed: " in verbose.output


# --- a hostile name is escaped once ----------------------------------------------------------


def test_a_rejected_module_name_is_escaped_once_in_the_message_and_in_markdown(
        tmp_path: Path) -> None:
    sub = make_submission(tmp_path, "evil", {PROBLEM: {
        "Submission.lean": correct(PROBLEM), "Submission/b\u00a0d.lean": "-- x\n"}})
    intake = reader.read_submission(sub, frozenset({PROBLEM}))
    (entry,) = intake.problems
    message = entry.rejection or ""
    # intake shows the no-break space as \xa0 (one backslash), in the path and in the quote
    assert "Submission/b\\xa0d.lean: 'b\\xa0d' is not a valid Lean module name" in message
    # markdown escapes that backslash once, so the page shows \xa0 in both places
    assert md(message).count("\\\\xa0") == 2 and "\\\\\\\\" not in md(message)
