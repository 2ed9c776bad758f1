"""The submission shapes the public pipeline documents (issue 27 item 5): a directory whose
``lakefile.toml`` ``name`` is a problem id with a ``Submission.lean`` beside it is that
problem's, the submission root included (a gist); a directory whose name and lakefile disagree
is a rejection naming both; a problem whose other directories are its unchanged starter keeps
the changed one."""

from __future__ import annotations

from pathlib import Path

from lean_eval.intake.reader import Intake, read_submission

IDS = frozenset({"P1", "P2"})
STARTER = b"theorem P1.goal : True := sorry\n"
PROOF = b"theorem P1.goal : True := trivial\n"
STARTERS = {"P1": {"Submission.lean": STARTER}, "P2": {"Submission.lean": b"-- P2 starter\n"}}


def lakefile(name: str) -> bytes:
    return (f'name = "{name}"\ndefaultTargets = ["Challenge"]\n\n'
            '[[lean_lib]]\nname = "Submission"\n').encode()


def tree(base: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_bytes(data)
    return base


def read(base: Path) -> Intake:
    return read_submission(base, IDS, starters=STARTERS)


def test_a_gist_is_the_problem_directory_of_its_lakefile_name(tmp_path: Path) -> None:
    sub = tree(tmp_path / "gist", {"lakefile.toml": lakefile("P1"), "Submission.lean": PROOF,
                                   "Submission/Helpers.lean": b"-- helper\n"})
    intake = read(sub)
    assert intake.rejection is None
    assert [(p.problem_id, p.location) for p in intake.problems] == [("P1", ".")]
    assert [f.relpath for f in intake.problems[0].files] == ["Submission.lean",
                                                             "Submission/Helpers.lean"]


def test_a_renamed_directory_with_a_matching_lakefile_is_the_problems(tmp_path: Path) -> None:
    sub = tree(tmp_path / "repo", {"my-attempt/lakefile.toml": lakefile("P2"),
                                   "my-attempt/Submission.lean": PROOF, "README.md": b"hi\n"})
    intake = read(sub)
    assert [(p.problem_id, p.location) for p in intake.problems] == [("P2", "my-attempt")]


def test_a_lakefile_naming_no_problem_does_not_make_a_problem_directory(tmp_path: Path) -> None:
    sub = tree(tmp_path / "gist", {"lakefile.toml": lakefile("nope"), "Submission.lean": PROOF})
    intake = read(sub)
    assert intake.problems == () and intake.hint is not None
    assert "top level" in intake.hint


def test_a_name_and_a_lakefile_that_disagree_reject_naming_both(tmp_path: Path) -> None:
    sub = tree(tmp_path / "sub", {"P1/lakefile.toml": lakefile("P2"), "P1/Submission.lean": PROOF})
    intake = read(sub)
    assert intake.rejection is not None
    assert "problem P1" in intake.rejection and "problem P2" in intake.rejection


def test_a_pristine_duplicate_does_not_reject_the_changed_directory(tmp_path: Path) -> None:
    sub = tree(tmp_path / "sub", {"P1/Submission.lean": STARTER,
                                  "work/lakefile.toml": lakefile("P1"),
                                  "work/Submission.lean": PROOF})
    intake = read(sub)
    assert intake.rejection is None
    assert [(p.problem_id, p.location) for p in intake.problems] == [("P1", "work")]
    assert any(line.startswith("P1/: an unchanged copy of the starter of P1")
               for line in intake.ignored), intake.ignored


def test_two_changed_directories_for_one_problem_still_reject(tmp_path: Path) -> None:
    sub = tree(tmp_path / "sub", {"P1/Submission.lean": PROOF + b"-- one\n",
                                  "work/lakefile.toml": lakefile("P1"),
                                  "work/Submission.lean": PROOF})
    intake = read(sub)
    assert intake.rejection is not None and "more than one problem directory" in intake.rejection


def test_without_starters_every_duplicate_rejects(tmp_path: Path) -> None:
    sub = tree(tmp_path / "sub", {"P1/Submission.lean": STARTER,
                                  "work/lakefile.toml": lakefile("P1"),
                                  "work/Submission.lean": PROOF})
    assert read_submission(sub, IDS).rejection is not None
