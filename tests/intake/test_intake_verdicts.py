"""Every problem a limit touches gets its own answer (issue 12 items 6-7, issue 17 item 2).

- A file over ``max_file_bytes`` is refused from its size (``lstat`` / the tar header), never
  read nor counted toward ``max_total_bytes``, and rejects only its own problem.
- When a whole-submission limit trips during the walk, every problem directory found so far,
  including the one the walk was in, is named (and so gets its ``invalid_submission`` verdict).
- A problem directory a limit hides (past ``max_depth``, unreadable) is named: a problem entry
  when its id can be read, else a line of ``Intake.hidden``.
- An entry the harness cannot read (host permissions, I/O) is the problem's ``fault``
  (scored ``error``), never a rejection.

Unit tests of intake here; the same cases as whole ``run-eval`` batches under real bubblewrap
are in tests/e2e/test_intake_verdicts_cli.py.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from support import sparse, tgz

from lean_eval.intake import reader as intake_module
from lean_eval.intake.reader import Intake, IntakeLimits, ProblemEntry, read_submission

IDS = frozenset({"P1", "P2", "P3"})
PROOF = b"theorem t : 2 + 2 = 4 := rfl\n"
BIG = 64 << 20


def write(path: Path, data: bytes = PROOF) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def problem(intake: Intake, pid: str) -> ProblemEntry:
    return next(e for e in intake.problems if e.problem_id == pid)


def count_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Bytes intake's directory walk reads with os.read, from now on."""
    counter = [0]
    real = os.read

    def read(fd: int, size: int) -> bytes:
        data = real(fd, size)
        counter[0] += len(data)
        return data

    monkeypatch.setattr(intake_module.os, "read", read)
    return counter


# --- a file over --max-file-bytes: refused from its size, its own problem only --------------


def test_an_oversized_file_is_refused_from_its_size_and_rejects_only_its_problem(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "P1" / "Submission.lean")
    write(tmp_path / "P2" / "Submission.lean")
    sparse(tmp_path / "P2" / "Submission" / "Big.lean", BIG)  # 4x the default total limit
    reads = count_reads(monkeypatch)
    intake = read_submission(tmp_path, IDS)
    assert intake.rejection is None, intake.rejection
    assert problem(intake, "P1").rejection is None
    p2 = problem(intake, "P2")
    assert p2.rejection == f"P2/Submission/Big.lean: {BIG} bytes, over the limit of {1 << 20}"
    assert p2.rejection_code == "limit_exceeded" and p2.files == ()
    assert intake.named == ("P1", "P2")
    assert reads[0] == 2 * len(PROOF)  # the big file was never read


def test_an_oversized_file_outside_the_read_set_is_ignored_unread(tmp_path: Path) -> None:
    write(tmp_path / "P1" / "Submission.lean")
    sparse(tmp_path / "P1" / "data.bin", BIG)
    sparse(tmp_path / "junk" / "huge.bin", BIG)
    intake = read_submission(tmp_path, IDS, IntakeLimits(max_total_bytes=4096))
    assert intake.rejection is None and problem(intake, "P1").rejection is None


def test_oversized_files_are_not_counted_toward_the_total(tmp_path: Path) -> None:
    """Ten files each over the per-file limit would be ten times the total if they counted."""
    write(tmp_path / "P1" / "Submission.lean")
    for i in range(10):
        sparse(tmp_path / "P2" / "Submission" / f"B{i}.lean", 2000)
    write(tmp_path / "P2" / "Submission.lean")
    intake = read_submission(tmp_path, IDS, IntakeLimits(max_file_bytes=1000,
                                                         max_total_bytes=4000))
    assert intake.rejection is None
    assert problem(intake, "P2").rejection == (
        "P2/Submission/B0.lean: 2000 bytes, over the limit of 1000")
    assert problem(intake, "P1").rejection is None


def test_the_oversized_digest_depends_on_the_size_not_on_unread_bytes(tmp_path: Path) -> None:
    write(tmp_path / "P1" / "Submission.lean")
    sparse(tmp_path / "P1" / "Submission" / "Big.lean", 5000)
    limits = IntakeLimits(max_file_bytes=1000)
    first = read_submission(tmp_path, IDS, limits).digest
    sparse(tmp_path / "P1" / "Submission" / "Big.lean", 5001)
    assert read_submission(tmp_path, IDS, limits).digest != first


def test_an_oversized_archive_member_is_skipped_and_rejects_only_its_problem(
        tmp_path: Path) -> None:
    path = tgz(tmp_path / "s.tar.gz", [("P2/Submission/Big.lean", BIG),
                                       ("P2/Submission.lean", PROOF),
                                       ("P1/Submission.lean", PROOF)])
    assert path.stat().st_size < 1 << 20
    intake = read_submission(path, IDS)
    assert intake.rejection is None, intake.rejection
    assert problem(intake, "P1").rejection is None
    assert problem(intake, "P2").rejection == (
        f"P2/Submission/Big.lean: {BIG} bytes, over the limit of {1 << 20}")
    assert problem(intake, "P2").rejection_code == "limit_exceeded"


# --- a whole-submission limit names every problem found, the one being walked included -------


@pytest.mark.parametrize("limit", ["total", "files"])
def test_a_whole_submission_limit_names_the_problem_being_walked(tmp_path: Path,
                                                                 limit: str) -> None:
    write(tmp_path / "P1" / "Submission.lean")
    write(tmp_path / "P2" / "Submission.lean")
    for i in range(20):  # "Submission/" is walked before "Submission.lean" (sorted)
        write(tmp_path / "P2" / "Submission" / f"M{i:02}.lean", b"x" * 500)
    write(tmp_path / "P3" / "Submission.lean")  # never reached
    limits = (IntakeLimits(max_total_bytes=4000) if limit == "total"
              else IntakeLimits(max_files=12))
    intake = read_submission(tmp_path, IDS, limits)
    assert intake.rejection_code == "limit_exceeded"
    assert intake.rejection is not None and intake.rejection.startswith("P2/Submission/")
    assert intake.named == ("P1", "P2")


def test_a_whole_submission_limit_in_an_archive_names_the_problem_being_read(
        tmp_path: Path) -> None:
    members: list[tuple[str, bytes | int]] = [("P1/Submission.lean", PROOF)]
    members += [(f"P2/Submission/M{i:02}.lean", b"x" * 500) for i in range(20)]
    members += [("P2/Submission.lean", PROOF), ("P3/Submission.lean", PROOF)]
    intake = read_submission(tgz(tmp_path / "s.tgz", members), IDS,
                             IntakeLimits(max_total_bytes=4000))
    assert intake.rejection_code == "limit_exceeded"
    assert intake.named == ("P1", "P2")


def test_a_limit_outside_every_problem_names_only_those_found(tmp_path: Path) -> None:
    write(tmp_path / "P1" / "Submission.lean")
    for i in range(20):
        write(tmp_path / "docs" / "P2" / f"n{i}.txt", b"x" * 500)  # P2 named, not a problem dir
    intake = read_submission(tmp_path, IDS, IntakeLimits(max_total_bytes=4000))
    assert intake.rejection_code == "limit_exceeded"
    assert "P1" in intake.named


# --- a problem directory a limit hides is named -------------------------------------------------


def test_a_problem_directory_past_max_depth_is_a_rejection_of_that_problem(
        tmp_path: Path) -> None:
    write(tmp_path / "P1" / "Submission.lean")
    write(tmp_path.joinpath("a", "b", "c", "d", "P2", "Submission.lean"))
    intake = read_submission(tmp_path, IDS, IntakeLimits(max_depth=4))
    assert intake.rejection is None
    assert problem(intake, "P1").rejection is None
    p2 = problem(intake, "P2")
    assert p2.rejection == ("a/b/c/d/P2: deeper than 4 path components, not read; a problem "
                            "directory there is never found")
    assert p2.rejection_code == "limit_exceeded" and p2.location == "a/b/c/d/P2"
    assert intake.named == ("P1", "P2") and intake.hidden == ()


def test_a_hidden_entry_without_a_problem_id_is_a_line_of_hidden(tmp_path: Path) -> None:
    write(tmp_path / "P1" / "Submission.lean")
    write(tmp_path.joinpath("a", "b", "c", "d", "e", "P2", "Submission.lean"))
    write(tmp_path.joinpath("x", "y", "z", "w", "P1", "Submission.lean"))  # P1 is found above
    intake = read_submission(tmp_path, IDS, IntakeLimits(max_depth=4))
    assert [e.problem_id for e in intake.problems] == ["P1"]
    assert intake.hidden == (
        "a/b/c/d/e: deeper than 4 path components, not read; a problem directory in it would "
        "not be found",
        "x/y/z/w/P1: deeper than 4 path components, not read; a problem directory in it would "
        "not be found")


def test_a_fork_workspace_past_max_depth_is_named(tmp_path: Path) -> None:
    write(tmp_path / "workspaces" / "P1" / "Submission.lean")
    intake = read_submission(tmp_path, IDS, IntakeLimits(max_depth=1))
    assert problem(intake, "P1").rejection_code == "limit_exceeded"


# --- an entry the harness cannot read is a host fault, not the submitter's ---------------------


def deny(monkeypatch: pytest.MonkeyPatch, name: str, code: int = errno.EACCES) -> None:
    """Fault injection: opening `name` fails as it would for a file the harness may not read."""
    real = os.open

    def fake_open(path: str, flags: int, mode: int = 0o777, *, dir_fd: int | None = None
                  ) -> int:
        if path == name:
            raise OSError(code, os.strerror(code), path)
        return real(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(intake_module.os, "open", fake_open)


@pytest.mark.parametrize("code", [errno.EACCES, errno.EIO])
def test_an_unreadable_file_is_a_fault_of_its_problem(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      code: int) -> None:
    write(tmp_path / "P1" / "Submission.lean")
    write(tmp_path / "P2" / "Submission.lean")
    write(tmp_path / "P2" / "Submission" / "Secret.lean")
    deny(monkeypatch, "Secret.lean", code)
    intake = read_submission(tmp_path, IDS)
    assert intake.rejection is None
    assert problem(intake, "P1").fault is None and problem(intake, "P1").rejection is None
    p2 = problem(intake, "P2")
    assert p2.rejection is None and p2.files == ()
    assert p2.fault == (f"P2/Submission/Secret.lean: cannot be read by the harness "
                        f"({os.strerror(code)})")


def test_an_unreadable_problem_directory_is_a_fault_of_that_problem(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "P1" / "Submission.lean")
    write(tmp_path / "P2" / "Submission.lean")
    write(tmp_path / "other" / "Submission.lean")
    deny(monkeypatch, "P2")
    intake = read_submission(tmp_path, IDS)
    assert intake.rejection is None
    assert problem(intake, "P2").fault == (
        "P2: cannot be read by the harness (Permission denied); a problem directory there is "
        "never found")
    deny(monkeypatch, "other")
    assert read_submission(tmp_path, IDS).hidden == (
        "other: cannot be read by the harness (Permission denied); a problem directory in it "
        "would not be found",)


def test_an_unreadable_file_outside_the_read_set_is_only_ignored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "P1" / "Submission.lean")
    write(tmp_path / "P1" / "notes.md")
    deny(monkeypatch, "notes.md")
    intake = read_submission(tmp_path, IDS)
    assert problem(intake, "P1").fault is None and problem(intake, "P1").rejection is None


def test_other_read_errors_still_reject(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ELOOP (the entry became a symlink between lstat and open) is the submission's doing."""
    write(tmp_path / "P1" / "Submission.lean")
    deny(monkeypatch, "Submission.lean", errno.ELOOP)
    intake = read_submission(tmp_path, IDS)
    assert intake.rejection is not None and "cannot be read" in intake.rejection


def test_an_unreadable_archive_is_a_usage_error_not_a_rejection(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lean_eval.errors import UsageError
    from lean_eval.intake import archive_stream

    path = tgz(tmp_path / "s.tgz", [("P1/Submission.lean", PROOF)])

    def fail(fd: int, size: int) -> bytes:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(archive_stream.os, "read", fail)
    with pytest.raises(UsageError, match="cannot be read: Input/output error"):
        read_submission(path, IDS)


def test_an_oversized_member_under_lake_is_skipped_not_counted(tmp_path: Path) -> None:
    """Build data in an archive is decoded to be skipped; a big file there costs no total."""
    path = tgz(tmp_path / "s.tgz", [(".lake/build/big.olean", 8 << 20),
                                    ("P1/Submission.lean", PROOF)])
    intake = read_submission(path, IDS, IntakeLimits(max_total_bytes=1 << 20))
    assert intake.rejection is None and problem(intake, "P1").rejection is None
