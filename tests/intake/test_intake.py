"""Intake of submission directories (design §4.3, §5.2): what is read, rejected and reported."""

from __future__ import annotations

import hashlib
import os
import socket
import stat
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest

from lean_eval.errors import UsageError
from lean_eval.intake.reader import (
    Intake,
    IntakeLimits,
    ProblemEntry,
    read_submission,
    submission_id,
)

IDS = frozenset({"P1", "P2", "Q"})
PROOF = b"theorem t : True := trivial\n"


def problem(intake: Intake, pid: str) -> ProblemEntry:
    (entry,) = [p for p in intake.problems if p.problem_id == pid]
    return entry


def write(path: Path, data: bytes = PROOF) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def good_problem(root: Path, pid: str) -> None:
    write(root / pid / "Submission.lean")
    write(root / pid / "Submission" / "Helpers.lean", b"def h := 1\n")


def assert_other_problem_fine(intake: Intake) -> None:
    assert intake.rejection is None
    p2 = problem(intake, "P2")
    assert p2.rejection is None
    assert [f.relpath for f in p2.files] == ["Submission.lean", "Submission/Helpers.lean"]


# ---------------------------------------------------------------- ids and top-level paths


@pytest.mark.parametrize(
    ("name", "expected"),
    [("alice.tar", "alice"), ("alice.tar.gz", "alice"), ("bob-1.tgz", "bob-1"),
     ("c_2.TAR.GZ", "c_2"), ("x.y.tar", "x.y")],
)
def test_submission_id_strips_archive_suffix(tmp_path: Path, name: str, expected: str) -> None:
    assert submission_id(tmp_path / name) == expected


def test_submission_id_of_directory_is_its_basename(tmp_path: Path) -> None:
    (tmp_path / "team.tar").mkdir()
    assert submission_id(tmp_path / "team.tar") == "team.tar"


@pytest.mark.parametrize("name", [".hidden", "-x", "a b", "é", "x" * 129, ".tar.gz", "a\x01"])
def test_submission_id_rejects_unsafe_ids(tmp_path: Path, name: str) -> None:
    with pytest.raises(UsageError, match="not a valid id"):
        submission_id(tmp_path / name)


def test_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="missing"):
        read_submission(tmp_path / "missing", IDS)


def test_other_file_types_are_usage_errors(tmp_path: Path) -> None:
    write(tmp_path / "sub.zip")
    with pytest.raises(UsageError, match=r"sub\.zip"):
        read_submission(tmp_path / "sub.zip", IDS)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(UsageError, match="symlinks are not followed"):
        read_submission(tmp_path / "link", IDS)


# ---------------------------------------------------------------- what is read


def test_fork_layout_reads_only_the_overlay(tmp_path: Path) -> None:
    root = tmp_path / "alice"
    ws = root / "workspaces" / "P1"
    write(ws / "Submission.lean")
    write(ws / "Submission" / "Helpers.lean", b"def h := 1\n")
    write(ws / "Submission" / "Deep" / "Er.lean", b"def d := 2\n")
    write(ws / "Submission" / "notes.md", b"notes")
    write(ws / "Challenge.lean", b"evil\n")
    write(ws / "lakefile.toml", b"name = 'x'\n")
    write(ws / ".lake" / "build" / "x.olean", b"\0" * 100)
    write(root / ".git" / "HEAD", b"ref: x\n")
    write(root / "problems" / "P1.toml", b"id = 'P1'\n")
    write(root / "README.md", b"hi")
    (root / "workspaces" / "P3").mkdir()

    intake = read_submission(root, IDS)

    assert intake.rejection is None
    assert intake.submission_id == "alice"
    assert intake.source == str(root)
    (p1,) = intake.problems
    assert p1.problem_id == "P1"
    assert p1.location == "workspaces/P1"
    assert p1.rejection is None
    assert [f.relpath for f in p1.files] == [
        "Submission.lean", "Submission/Deep/Er.lean", "Submission/Helpers.lean"]
    assert p1.files[0].data == PROOF
    assert p1.files[0].sha256 == hashlib.sha256(PROOF).hexdigest()
    assert [i.split(":")[0] for i in p1.ignored] == [
        "workspaces/P1/.lake", "workspaces/P1/Challenge.lean",
        "workspaces/P1/Submission/notes.md", "workspaces/P1/lakefile.toml"]
    assert [i.split(":")[0] for i in intake.ignored] == [
        ".git", "README.md", "problems/", "workspaces/P3/"]
    assert list(intake.ignored) == sorted(intake.ignored)


def test_digest_is_deterministic_and_tracks_content(tmp_path: Path) -> None:
    good_problem(tmp_path / "s", "P1")
    first = read_submission(tmp_path / "s", IDS)
    assert read_submission(tmp_path / "s", IDS) == first
    write(tmp_path / "s" / "README.md", b"x")
    second = read_submission(tmp_path / "s", IDS)
    assert second.digest != first.digest
    assert second.problems == first.problems


def test_several_problems_sorted_and_misplaced_files_reported(tmp_path: Path) -> None:
    good_problem(tmp_path, "Q")
    good_problem(tmp_path / "x", "P2")
    write(tmp_path / "Submission.lean")
    write(tmp_path / "other" / "Submission.lean")
    (tmp_path / "P1").mkdir()
    intake = read_submission(tmp_path, IDS)
    assert [p.problem_id for p in intake.problems] == ["P2", "Q"]
    assert "Submission.lean: its directory is not named after a catalog problem id" in (
        intake.ignored)
    assert "other/: holds no problem directory" in intake.ignored
    assert "P1/: named after problem P1, no Submission.lean" in intake.ignored


def test_problem_directories_are_not_searched_for_nested_ones(tmp_path: Path) -> None:
    good_problem(tmp_path, "P1")
    good_problem(tmp_path / "P1" / "nested", "P2")
    intake = read_submission(tmp_path, IDS)
    assert [p.problem_id for p in intake.problems] == ["P1"]
    assert any(i.startswith("P1/nested/: not read") for i in problem(intake, "P1").ignored)


def test_symlink_outside_the_read_set_is_reported_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    good_problem(outside, "P2")
    root = tmp_path / "sub"
    good_problem(root, "P1")
    (root / "elsewhere").symlink_to(outside)
    intake = read_submission(root, IDS)
    assert [p.problem_id for p in intake.problems] == ["P1"]
    assert "elsewhere: symlink, not followed or read" in intake.ignored


def test_submission_that_is_a_file_is_ignored(tmp_path: Path) -> None:
    write(tmp_path / "P1" / "Submission.lean")
    write(tmp_path / "P1" / "Submission", b"x")
    p1 = problem(read_submission(tmp_path, IDS), "P1")
    assert p1.rejection is None
    assert "P1/Submission: not a directory, not read" in p1.ignored


def test_ignored_list_is_capped(tmp_path: Path) -> None:
    good_problem(tmp_path, "P1")
    for i in range(250):
        write(tmp_path / f"f{i:03}", b"")
    intake = read_submission(tmp_path, IDS)
    assert len(intake.ignored) == 201
    assert intake.ignored[-1] == "... and 50 more"


# ---------------------------------------------------------------- per-problem rejections

Breaker = Callable[[Path], None]


def _symlink(rel: str, target: str = "/etc/passwd") -> Breaker:
    def make(p1: Path) -> None:
        (p1 / rel).parent.mkdir(parents=True, exist_ok=True)
        if (p1 / rel).exists():
            (p1 / rel).unlink()
        os.symlink(target, p1 / rel)
    return make


def _hardlink(rel: str) -> Breaker:
    def make(p1: Path) -> None:  # its other name is outside the submission (p1.parent)
        target = write(p1.parent.parent / f"{p1.parent.name}-elsewhere.txt")
        (p1 / rel).parent.mkdir(parents=True, exist_ok=True)
        if (p1 / rel).exists():
            (p1 / rel).unlink()
        os.link(target, p1 / rel)
    return make


def _symlinked_submission_dir(p1: Path) -> None:
    (p1 / "Submission").rename(p1 / "real")
    (p1 / "Submission").symlink_to("real")


def _fifo(p1: Path) -> None:
    os.mkfifo(p1 / "Submission" / "pipe.lean")


def _device(p1: Path) -> None:
    os.mknod(p1 / "Submission" / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))


def _socket(p1: Path) -> None:
    cwd = Path.cwd()
    os.chdir(p1 / "Submission")
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind("sock")
    finally:
        os.chdir(cwd)


def _replace_with_dir(rel: str) -> Breaker:
    def make(p1: Path) -> None:
        if (p1 / rel).exists():
            (p1 / rel).unlink()
        (p1 / rel).mkdir(parents=True)
    return make


def _file(rel: str | bytes, data: bytes = PROOF) -> Breaker:
    def make(p1: Path) -> None:
        if isinstance(rel, bytes):
            os.makedirs(os.fsencode(p1) + b"/Submission", exist_ok=True)
            with open(os.fsencode(p1) + b"/" + rel, "wb") as handle:
                handle.write(data)
        else:
            write(p1 / rel, data)
    return make


def _both(*makers: Breaker) -> Breaker:
    def make(p1: Path) -> None:
        for maker in makers:
            maker(p1)
    return make


NFC = unicodedata.normalize("NFC", "é")
NFD = unicodedata.normalize("NFD", "é")

PROBLEM_REJECTIONS: dict[str, tuple[Breaker, str]] = {
    "symlink Submission.lean": (_symlink("Submission.lean"), "P1/Submission.lean: symlink"),
    "symlink Submission dir": (_symlinked_submission_dir, "P1/Submission: symlink"),
    "symlink helper": (_symlink("Submission/Evil.lean"), "P1/Submission/Evil.lean: symlink"),
    "symlink non-lean": (_symlink("Submission/data.txt"), "P1/Submission/data.txt: symlink"),
    "symlinked .lake": (_symlink("Submission/.lake", "/"), "P1/Submission/.lake: symlink"),
    "hard link Submission.lean": (
        _hardlink("Submission.lean"),
        "P1/Submission.lean: hard link: 1 of its 2 names is outside the submission"),
    "hard link non-lean": (_hardlink("Submission/x.md"), "P1/Submission/x.md: hard link"),
    "fifo": (_fifo, "P1/Submission/pipe.lean: FIFO"),
    "device": (_device, "P1/Submission/null: device"),
    "socket": (_socket, "P1/Submission/sock: socket"),
    "dir named .lean": (_replace_with_dir("Submission/Foo.lean"),
                        "P1/Submission/Foo.lean: a directory named *.lean"),
    "Submission.lean dir": (_replace_with_dir("Submission.lean"),
                            "P1/Submission.lean: a directory named *.lean"),
    "bad dir component": (_file("Submission/my-dir/A.lean"),
                          "P1/Submission/my-dir/A.lean: 'my-dir' is not a valid Lean module"),
    "bad stem digit": (_file("Submission/1A.lean"), "'1A' is not a valid Lean module"),
    "bad stem dot": (_file("Submission/A.b.lean"), "'A.b' is not a valid Lean module"),
    "hidden .lean": (_file("Submission/.lean"), "P1/Submission/.lean: '' is not a valid"),
    "unicode stem": (_file("Submission/Ünï.lean"), "'Ünï' is not a valid Lean module"),
    "non-utf8 name": (_file(b"Submission/\xff.md"),
                      "P1/Submission/\\udcff.md: name is not UTF-8 or holds control"),
    "control char name": (_file("Submission/a\x1b[2J.md"),
                          "P1/Submission/a\\x1b[2J.md: name is not UTF-8 or holds control"),
    "bidi override name": (_file("Submission/a\u202e.md"), "P1/Submission/a\\u202e.md: name"),
    "case collision": (_both(_file("Submission/Foo.lean"), _file("Submission/foo.lean")),
                       "P1/Submission/foo.lean: collides with P1/Submission/Foo.lean"),
    "case collision dirs": (_both(_file("Submission/A/X.lean"), _file("Submission/a/Y.lean")),
                            "P1/Submission/a: collides with P1/Submission/A"),
    "nfc collision": (_both(_file(f"Submission/{NFC}.md"), _file(f"Submission/{NFD}.md")),
                      "collides with"),
    "oversize Submission.lean": (_file("Submission.lean", b"-" * 2000),
                                 "P1/Submission.lean: 2000 bytes, over the limit of 1000"),
    "oversize helper": (_file("Submission/Big.lean", b"-" * 1001),
                        "P1/Submission/Big.lean: 1001 bytes"),
    "empty Submission.lean": (_file("Submission.lean", b""), "P1/Submission.lean: empty"),
    "non-utf8 Submission.lean": (_file("Submission.lean", b"theorem \xff"),
                                 "P1/Submission.lean: not UTF-8 (bad byte at offset 8)"),
    "nul Submission.lean": (_file("Submission.lean", b"a\0b"), "P1/Submission.lean: holds NUL"),
    "nul helper": (_file("Submission/H.lean", b"a\0b"), "P1/Submission/H.lean: holds NUL"),
    "non-utf8 helper": (_file("Submission/H.lean", b"\xc3"), "P1/Submission/H.lean: not UTF-8"),
}


@pytest.mark.parametrize("case", sorted(PROBLEM_REJECTIONS))
def test_problem_rejection_names_the_entry_and_spares_other_problems(
    tmp_path: Path, case: str
) -> None:
    breaker, expected = PROBLEM_REJECTIONS[case]
    root = tmp_path / "sub"
    good_problem(root, "P1")
    good_problem(root, "P2")
    breaker(root / "P1")
    intake = read_submission(root, IDS, IntakeLimits(max_file_bytes=1000))
    p1 = problem(intake, "P1")
    assert p1.rejection is not None
    assert expected in p1.rejection
    assert p1.files == ()
    assert_other_problem_fine(intake)


def test_empty_helper_and_non_lean_big_file_are_fine(tmp_path: Path) -> None:
    good_problem(tmp_path, "P1")
    write(tmp_path / "P1" / "Submission" / "Empty.lean", b"")
    write(tmp_path / "P1" / "Submission" / "data.bin", b"\0\xff" * 2000)
    write(tmp_path / "P1" / "Submission" / "Odd'_name.lean", b"")
    p1 = problem(read_submission(tmp_path, IDS, IntakeLimits(max_file_bytes=1000)), "P1")
    assert p1.rejection is None
    assert [f.relpath for f in p1.files] == [
        "Submission.lean", "Submission/Empty.lean", "Submission/Helpers.lean",
        "Submission/Odd'_name.lean"]
    assert "P1/Submission/data.bin: not a .lean file, not read" in p1.ignored


# ---------------------------------------------------------------- whole-submission rejections


def test_two_directories_for_one_problem_reject_the_submission(tmp_path: Path) -> None:
    good_problem(tmp_path / "a", "P1")
    good_problem(tmp_path / "b" / "c", "P1")
    good_problem(tmp_path, "P2")
    intake = read_submission(tmp_path, IDS)
    assert intake.rejection == "problem P1 has more than one problem directory: a/P1, b/c/P1"
    assert intake.problems == ()


def test_too_many_entries(tmp_path: Path) -> None:
    good_problem(tmp_path, "P1")
    for i in range(10):
        write(tmp_path / "many" / f"f{i}", b"")
    intake = read_submission(tmp_path, IDS, IntakeLimits(max_files=8))
    assert intake.rejection is not None
    assert "many" in intake.rejection
    assert "more than 8 entries" in intake.rejection
    assert intake.problems == ()


def test_too_many_entries_in_one_listing_names_the_directory(tmp_path: Path) -> None:
    for i in range(20):
        write(tmp_path / "d" / f"f{i}", b"")
    intake = read_submission(tmp_path, IDS, IntakeLimits(max_files=5))
    assert intake.rejection == "d/: the submission has more than 5 entries"


def test_too_deep_rejects_only_the_problem_it_is_in(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["d"] * 4)
    good_problem(deep, "P1")
    good_problem(tmp_path, "P2")
    write(tmp_path.joinpath("P2", "Submission", *["x"] * 6, "X.lean"))
    intake = read_submission(tmp_path, IDS, IntakeLimits(max_depth=7))
    assert intake.rejection is None
    assert problem(intake, "P1").rejection is None
    p2 = problem(intake, "P2")
    assert p2.rejection == "P2/Submission/x/x/x/x/x/x: deeper than 7 path components"
    assert p2.rejection_code == "limit_exceeded"
    write(tmp_path.joinpath("e", *["P1"] * 8, "Submission.lean"))
    intake = read_submission(tmp_path, IDS, IntakeLimits(max_depth=7))
    assert "e/: holds no problem directory" in intake.ignored  # not walked past the limit
    # ... but never silently: the entry past the limit is named (P1 has a directory above, so
    # as a line of `hidden`; tests/intake/test_intake_verdicts.py has the rejection of an
    # unfound id).
    assert intake.hidden == ("e/P1/P1/P1/P1/P1/P1/P1: deeper than 7 path components, not read; "
                             "a problem directory in it would not be found",)
    assert problem(intake, "P1").rejection is None


def test_total_bytes(tmp_path: Path) -> None:
    good_problem(tmp_path, "P1")
    write(tmp_path / "zz" / "big.bin", b"x" * 5000)
    intake = read_submission(tmp_path, IDS, IntakeLimits(max_total_bytes=4000))
    assert intake.rejection == "zz/big.bin: the submission holds more than 4000 bytes"
    assert intake.problems == ()
    again = read_submission(tmp_path, IDS, IntakeLimits(max_total_bytes=4000))
    assert again.digest == intake.digest


def test_skipped_directories_are_not_walked_or_counted(tmp_path: Path) -> None:
    good_problem(tmp_path, "P1")
    for i in range(50):
        write(tmp_path / ".lake" / f"f{i}", b"x" * 1000)
    os.symlink("/etc", tmp_path / ".git")  # a symlinked .git is reported, not followed
    intake = read_submission(tmp_path, IDS, IntakeLimits(max_files=10, max_total_bytes=5000))
    assert intake.rejection is None
    assert ".lake: build or version-control data, not read" in intake.ignored
    assert ".git: symlink, not followed or read" in intake.ignored


def test_entry_swapped_during_the_walk_rejects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good_problem(tmp_path, "P1")
    real_open = os.open

    def swapping_open(name: str, flags: int, *args: object, **kwargs: object) -> int:
        if name == "Submission.lean":
            other = write(tmp_path / "P1" / "other", b"swapped")
            other.replace(tmp_path / "P1" / "Submission.lean")
        return real_open(name, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", swapping_open)
    intake = read_submission(tmp_path, IDS)
    assert intake.rejection == "P1/Submission.lean: changed while the submission was read"
