"""``lean-eval validate-submission``: intake and the header check without Lean (issue: what a
submitter can check before scoring). Exit 0 clean, 1 when anything would be rejected."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from support import correct, make_submission, starter, validate_submission

from lean_eval.cli import main

GOOD = "two_plus_two"
OTHER = "double_def"


def document(result: Result) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_clean_submission_says_what_would_be_scored(bench_copy: Path, outside: Path) -> None:
    root = make_submission(outside, "alice", {
        GOOD: {"Submission.lean": correct(GOOD),
               "Submission/Helpers.lean": starter(GOOD, "Submission/Helpers.lean"),
               "notes.md": "x"},
        OTHER: {"Submission.lean": starter(OTHER),
                "Submission/Helpers.lean": starter(OTHER, "Submission/Helpers.lean")}})
    result = validate_submission(bench_copy, root)
    assert result.exit_code == 0, result.output
    assert (f"{GOOD} ({GOOD}): would be scored: Submission.lean (changed), "
            "Submission/Helpers.lean") in result.stdout
    assert f"{OTHER} ({OTHER}): unchanged, every file is the starter" in result.stdout
    assert f"  ignored: {GOOD}/notes.md: not read" in result.stdout
    assert result.stderr == ""
    quiet = validate_submission(bench_copy, root, "-q")
    assert (quiet.exit_code, quiet.output) == (0, "")
    assert "sha256" not in result.stdout
    verbose = validate_submission(bench_copy, root, "-v")
    assert verbose.exit_code == 0, verbose.output
    assert f"alice: {root} (sha256 " in verbose.stdout
    assert "  Submission.lean: differs from the starter" in verbose.stdout
    assert "  Submission/Helpers.lean: the starter's bytes" in verbose.stdout


def test_json_document(bench_copy: Path, outside: Path) -> None:
    root = make_submission(outside, "bob", {
        GOOD: {"Submission.lean": correct(GOOD)},
        OTHER: {"Submission.lean": "import «Evil»\n" + correct(OTHER)}})
    result = validate_submission(bench_copy, root, "--json")
    assert result.exit_code == 1
    doc = document(result)
    assert next(iter(doc)) == "schema_version" and doc["schema_version"] == 1
    assert doc["ok"] is False and doc["named"] == [OTHER, GOOD]
    outcomes = {p["problem_id"]: (p["outcome"], p["rejection_code"]) for p in doc["problems"]}
    assert outcomes == {GOOD: ("scored", None), OTHER: ("invalid_submission", "import_rejected")}


def test_every_rejection_names_its_entry(bench_copy: Path, outside: Path) -> None:
    root = make_submission(outside, "carol", {
        GOOD: {"Submission.lean": correct(GOOD)},
        OTHER: {"Submission.lean": correct(OTHER)}})
    (root / OTHER / "Submission").mkdir(exist_ok=True)
    os.symlink("/etc/passwd", root / OTHER / "Submission" / "Evil.lean")
    result = validate_submission(bench_copy, root)
    assert result.exit_code == 1
    assert (f"{OTHER} ({OTHER}): invalid_submission (path_rejected): "
            f"{OTHER}/Submission/Evil.lean: symlink") in result.stderr
    assert f"{GOOD} ({GOOD}): would be scored" in result.stdout


def test_whole_submission_rejection_lists_the_problems_named(bench_copy: Path,
                                                             outside: Path) -> None:
    root = make_submission(outside, "dup", {
        f"a/{GOOD}": {"Submission.lean": correct(GOOD)},
        f"b/{GOOD}": {"Submission.lean": correct(GOOD)},
        OTHER: {"Submission.lean": correct(OTHER)}})
    result = validate_submission(bench_copy, root)
    assert result.exit_code == 1
    assert f"problem {GOOD} has more than one problem directory: a/{GOOD}, b/{GOOD}" in (
        result.stderr)
    assert f"  {GOOD}: would get invalid_submission" in result.stderr
    assert f"  {OTHER}: would get invalid_submission" in result.stderr


def test_no_problem_directory_gives_the_hint(bench_copy: Path, outside: Path) -> None:
    top = make_submission(outside, "top", {".": {"Submission.lean": correct(GOOD)}})
    result = validate_submission(bench_copy, top)
    assert result.exit_code == 1
    assert "top: no problem directory found: Submission.lean is at the top level" in (
        result.stderr)
    dashed = make_submission(outside, "dashed", {"two-plus-two": {
        "Submission.lean": correct(GOOD)}})
    result = validate_submission(bench_copy, dashed)
    assert result.exit_code == 1
    assert "two-plus-two/ is not a problem id; did you mean two_plus_two?" in result.stderr


def test_problem_option_limits_the_ids(bench_copy: Path, outside: Path) -> None:
    root = make_submission(outside, "dave", {
        GOOD: {"Submission.lean": correct(GOOD)},
        OTHER: {"Submission.lean": "import «Evil»\n"}})
    result = validate_submission(bench_copy, root, "--problem", GOOD, "--json")
    assert result.exit_code == 0, result.output
    assert [p["problem_id"] for p in document(result)["problems"]] == [GOOD]


def test_unusable_path_or_problem_is_a_usage_error(bench_copy: Path, outside: Path) -> None:
    result = validate_submission(bench_copy, outside / "missing")
    assert result.exit_code == 2
    assert "missing does not exist" in result.stderr
    (outside / "s.zip").write_bytes(b"PK")
    result = validate_submission(bench_copy, outside / "s.zip")
    assert result.exit_code == 2 and ".zip archives are not supported" in result.stderr
    root = make_submission(outside, "eve", {GOOD: {"Submission.lean": correct(GOOD)}})
    result = validate_submission(bench_copy, root, "--problem", "two_plus_tw")
    assert result.exit_code == 2 and "did you mean two_plus_two?" in result.stderr


def _limit_options(command: str) -> dict[str, tuple[object, ...]]:
    """Every intake-limit option of `command`: (type, default, help, envvar, show_envvar)."""
    params = main.commands[command].params  # type: ignore[attr-defined]
    return {p.name: (type(p.type), p.type, p.default, getattr(p, "help", None), p.envvar,
                     getattr(p, "show_envvar", None))
            for p in params if p.name in LIMIT_OPTIONS}


LIMIT_OPTIONS = ("max_file_bytes", "max_total_bytes", "max_files", "max_depth",
                 "max_archive_bytes", "intake_timeout")


def test_validate_submission_takes_run_evals_intake_limits() -> None:
    ours, theirs = _limit_options("validate-submission"), _limit_options("run-eval")
    assert sorted(ours) == sorted(LIMIT_OPTIONS)
    assert ours.keys() == theirs.keys()
    for name in LIMIT_OPTIONS:  # the same declaration: type, default, help and environment
        assert ours[name][0] is theirs[name][0] and ours[name][2:] == theirs[name][2:], name
        assert ours[name][1].__dict__ == theirs[name][1].__dict__, name


@pytest.mark.parametrize(("option", "value", "code"), [
    ("--max-file-bytes", "100", "limit_exceeded"),
    ("--max-depth", "2", "limit_exceeded"),
])
def test_a_limit_given_to_validate_submission_changes_its_answer(
        bench_copy: Path, outside: Path, option: str, value: str, code: str) -> None:
    root = make_submission(outside, "dave", {
        GOOD: {"Submission.lean": correct(GOOD),
               "Submission/Helpers.lean": starter(GOOD, "Submission/Helpers.lean")},
        OTHER: {"Submission.lean": starter(OTHER)}})
    default = validate_submission(bench_copy, root, "--json")
    assert default.exit_code == 0, default.output
    limited = validate_submission(bench_copy, root, "--json", option, value)
    assert limited.exit_code == 1, limited.output
    outcomes = {p["problem_id"]: (p["outcome"], p["rejection_code"])
                for p in document(limited)["problems"]}
    assert outcomes[GOOD] == ("invalid_submission", code)
    total = validate_submission(bench_copy, root, "--max-total-bytes", "64")
    assert total.exit_code == 1
    assert "dave: whole submission rejected (limit_exceeded)" in total.stderr


def test_a_problem_hidden_by_max_depth_is_named(bench_copy: Path, outside: Path) -> None:
    root = make_submission(outside, "erin", {OTHER: {"Submission.lean": correct(OTHER)}})
    deep = root / "a" / "b" / "c" / "d"
    (deep / GOOD).mkdir(parents=True)
    (deep / GOOD / "Submission.lean").write_text(correct(GOOD))
    (deep / "e" / GOOD).mkdir(parents=True)
    (deep / "e" / GOOD / "Submission.lean").write_text(correct(GOOD))
    result = validate_submission(bench_copy, root, "--max-depth", "4")
    assert result.exit_code == 1
    assert (f"{GOOD} (a/b/c/d/{GOOD}): invalid_submission (limit_exceeded): a/b/c/d/{GOOD}: "
            "deeper than 4 path components") in result.stderr
    assert ("hidden by a limit: a/b/c/d/e: deeper than 4 path components, not read; a problem "
            "directory in it would not be found") in result.stderr
    assert f"{OTHER} ({OTHER}): would be scored" in result.stdout
    hidden = document(validate_submission(bench_copy, root, "--max-depth", "4", "--json"))
    assert hidden["hidden"] == [
        "a/b/c/d/e: deeper than 4 path components, not read; a problem directory in it would "
        "not be found"]


def test_a_file_the_harness_cannot_read_is_error_not_invalid(
        bench_copy: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lean_eval.intake import reader

    root = make_submission(outside, "fred", {GOOD: {"Submission.lean": correct(GOOD)}})
    real = reader._open_same

    def denied(name: str, dfd: int, flags: int, st: os.stat_result, shown: str) -> int:
        if name == "Submission.lean":  # as for a file the harness's user may not read
            raise PermissionError(13, "Permission denied", name)
        return real(name, dfd, flags, st, shown)

    monkeypatch.setattr(reader, "_open_same", denied)
    result = validate_submission(bench_copy, root)
    assert result.exit_code == 1
    assert (f"{GOOD} ({GOOD}): error (the harness, not the submission): {GOOD}/Submission.lean: "
            "cannot be read by the harness (Permission denied)") in result.stderr
    (item,) = document(validate_submission(bench_copy, root, "--json"))["problems"]
    assert (item["outcome"], item["rejection"]) == ("error", None)


def test_a_fresh_start_problem_directory_is_quiet_about_the_files_start_problem_wrote(
        bench_copy: Path, outside: Path) -> None:
    """The read-only copies start-problem writes beside the starters are expected: no `ignored`
    line for them (listed once under -v); anything else beside them is still named."""
    dest = outside / "mine"
    started = CliRunner().invoke(main, ["start-problem", GOOD, str(dest), "--benchmark",
                                        str(bench_copy), "-q"], catch_exceptions=False)
    assert started.exit_code == 0, started.output
    (dest / GOOD / "notes.md").write_text("mine\n", encoding="utf-8")
    result = validate_submission(bench_copy, dest)
    assert result.exit_code == 0, result.output
    ignored = [line for line in result.output.splitlines() if "ignored:" in line]
    assert ignored == [f"  ignored: {GOOD}/notes.md: not read (only Submission.lean and "
                       "Submission/**/*.lean are)"], result.output
    verbose = validate_submission(bench_copy, dest, "-v")
    assert "Challenge.lean" in verbose.output and "config.json" in verbose.output
    check = document(validate_submission(bench_copy, dest, "--json"))["problems"][0]
    assert "Challenge.lean" in check["reference"] and "lean-toolchain" in check["reference"]
    assert not any("Challenge.lean" in line for line in check["ignored"])
