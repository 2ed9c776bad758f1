"""validate-submission on a fork of the upstream source layout (issue 27 item 8): upstream's own
workspace files beside each Submission.lean are expected (listed under -v only), and a problem
directory the selection leaves out is said to be excluded, not to hold no problem directory."""

from __future__ import annotations

from pathlib import Path

from support import correct, make_submission, validate_submission

GOOD = "two_plus_two"
OTHER = "double_def"


def test_upstreams_own_workspace_files_are_listed_only_under_verbose(
        bench_copy: Path, outside: Path) -> None:
    root = make_submission(outside, "fork", {f"generated/{GOOD}": {
        "Submission.lean": correct(GOOD), "holes.json": "{}", "WorkspaceTest.lean": "-- t\n",
        "notes.md": "x"}})
    quiet = validate_submission(bench_copy, root)
    assert quiet.exit_code == 0, quiet.output
    assert "holes.json" not in quiet.stdout and "WorkspaceTest.lean" not in quiet.stdout
    assert f"ignored: generated/{GOOD}/notes.md: not read" in quiet.stdout  # still news
    verbose = validate_submission(bench_copy, root, "-v")
    assert "not read (the benchmark's own are used): WorkspaceTest.lean, holes.json" in \
        verbose.stdout


def test_a_problem_directory_the_selection_excludes_is_said_to_be_excluded(
        bench_copy: Path, outside: Path) -> None:
    root = make_submission(outside, "alice", {GOOD: {"Submission.lean": correct(GOOD)},
                                              OTHER: {"Submission.lean": correct(OTHER)}})
    result = validate_submission(bench_copy, root, "--problem", GOOD)
    assert result.exit_code == 0, result.output
    assert f"ignored: {OTHER}/: problem {OTHER}, excluded by the selection" in result.stdout
    assert "holds no problem directory" not in result.stdout
