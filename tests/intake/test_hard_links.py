"""Hard links (lean_eval/intake/links.py): a link whose every name is inside the submission is
read as a copy, in a directory and as an archive's hard-link member; a link to anything
outside, a name intake does not walk, a file owned by someone else, a member not yet seen, a
path out of the archive or a member that is no .lean file stays refused, naming why; every
name's bytes count toward the byte budget."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lean_eval.intake.reader import Intake, IntakeLimits, ProblemEntry, read_submission

IDS = frozenset({"P1", "P2", "Q"})
PROOF = b"theorem t : True := trivial\n"
HELPER = b"def h := 1\n"
OUTSIDE = "1 of its 2 names is outside the submission"


def problem(intake: Intake, pid: str) -> ProblemEntry:
    (entry,) = [p for p in intake.problems if p.problem_id == pid]
    return entry


def write(path: Path, data: bytes = PROOF) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def good_problem(root: Path, pid: str) -> None:
    write(root / pid / "Submission.lean")
    write(root / pid / "Submission" / "Helpers.lean", HELPER)


def files_of(entry: ProblemEntry) -> list[tuple[str, bytes]]:
    return [(f.relpath, f.data) for f in entry.files]


GOOD_FILES = [("Submission.lean", PROOF), ("Submission/Helpers.lean", HELPER)]


# ---------------------------------------------------------------- directories


def test_a_cp_al_copy_of_a_problem_inside_the_submission_is_read_as_copies(
        tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    good_problem(sub, "P1")
    shutil.copytree(sub / "P1", sub / "drafts" / "P2", copy_function=os.link)  # cp -al
    assert (sub / "P1" / "Submission.lean").stat().st_nlink == 2
    intake = read_submission(sub, IDS)
    assert intake.rejection is None
    for pid in ("P1", "P2"):
        assert problem(intake, pid).rejection is None
        assert files_of(problem(intake, pid)) == GOOD_FILES


def test_links_inside_one_problem_and_to_a_non_read_file_are_copies(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    good_problem(sub, "P1")
    os.link(sub / "P1" / "Submission" / "Helpers.lean", sub / "P1" / "Submission" / "Again.lean")
    os.link(sub / "P1" / "Submission.lean", sub / "notes.txt")  # a name intake does not read
    entry = problem(read_submission(sub, IDS), "P1")
    assert entry.rejection is None
    assert files_of(entry) == [("Submission.lean", PROOF), ("Submission/Again.lean", HELPER),
                               ("Submission/Helpers.lean", HELPER)]


def test_a_link_copy_has_the_digest_of_a_real_copy(tmp_path: Path) -> None:
    linked, copied = tmp_path / "linked", tmp_path / "copied"
    for sub in (linked, copied):
        good_problem(sub, "P1")
    shutil.copytree(linked / "P1", linked / "P2", copy_function=os.link)
    shutil.copytree(copied / "P1", copied / "P2")
    assert read_submission(linked, IDS).digest == read_submission(copied, IDS).digest


def test_a_cp_al_fork_whose_other_names_are_in_another_submission_is_refused(
        tmp_path: Path) -> None:
    """The scope is one submission: the fork's names in its original are outside it."""
    original = tmp_path / "original"
    good_problem(original, "P1")
    fork = tmp_path / "fork"
    shutil.copytree(original, fork, copy_function=os.link)
    entry = problem(read_submission(fork, IDS), "P1")
    assert entry.rejection is not None
    assert entry.rejection.startswith(f"P1/Submission.lean: hard link: {OUTSIDE}")
    assert entry.files == ()


@pytest.mark.parametrize("where", ["outside", "lake", "git", "too deep"])
def test_a_link_with_a_name_intake_does_not_walk_is_refused(tmp_path: Path, where: str) -> None:
    sub = tmp_path / "sub"
    good_problem(sub, "P1")
    good_problem(sub, "P2")
    other = {"outside": tmp_path / "secret", "lake": sub / ".lake" / "secret",
             "git": sub / "P1" / ".git" / "secret",
             "too deep": sub.joinpath(*["d"] * 40, "secret")}[where]
    target = write(other, b"-- a secret\n")
    (sub / "P1" / "Submission" / "Helpers.lean").unlink()
    os.link(target, sub / "P1" / "Submission" / "Helpers.lean")
    intake = read_submission(sub, IDS, IntakeLimits(max_depth=32))
    entry = problem(intake, "P1")
    assert entry.rejection is not None
    assert entry.rejection.startswith(f"P1/Submission/Helpers.lean: hard link: {OUTSIDE}")
    assert entry.rejection_code == "path_rejected"
    assert b"secret" not in b"".join(f.data for f in entry.files)
    assert files_of(problem(intake, "P2")) == GOOD_FILES


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_a_link_owned_by_another_user_is_refused_even_with_every_name_inside(
        tmp_path: Path) -> None:
    """What the count cannot tell (a name renamed during the walk is met twice): a local
    user's link to a file they do not own."""
    sub = tmp_path / "sub"
    good_problem(sub, "P1")
    os.link(sub / "P1" / "Submission.lean", sub / "copy.lean")
    os.chown(sub / "copy.lean", 4242, 4242)
    entry = problem(read_submission(sub, IDS), "P1")
    assert entry.rejection == (f"P1/Submission.lean: hard link owned by uid 4242, not by uid "
                               f"{os.stat(sub).st_uid} who owns the submission")


def test_every_name_of_a_link_counts_toward_the_byte_budget(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    write(sub / "P1" / "Submission.lean")
    big = write(sub / "P1" / "Submission" / "Big.lean", b"-- " + b"x" * 4000 + b"\n")
    for i in range(5):
        os.link(big, sub / "P1" / "Submission" / f"Big{i}.lean")
    limits = IntakeLimits(max_file_bytes=8192, max_total_bytes=16384)
    intake = read_submission(sub, IDS, limits)
    assert intake.rejection_code == "limit_exceeded"
    assert "the submission holds more than 16384 bytes" in (intake.rejection or "")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups=st.lists(st.tuples(st.lists(st.sampled_from(["P1/Submission.lean",
                                                           "P1/Submission/A.lean",
                                                           "P1/Submission/B/C.lean",
                                                           "P2/Submission.lean",
                                                           "P2/Submission/D.lean",
                                                           "docs/x.lean"]),
                                          min_size=1, max_size=4, unique=True),
                                 st.booleans()),
                       min_size=1, max_size=3))
def test_each_problem_is_refused_exactly_when_a_link_in_its_read_set_leaves(
        groups: list[tuple[list[str], bool]]) -> None:
    """Groups of names linked together, each maybe with one more name outside: a problem is
    refused exactly when one of its read-set files belongs to a group with an outside name."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        sub = base / "sub"
        for pid in ("P1", "P2"):
            write(sub / pid / "Submission.lean")
        placed: dict[str, bool] = {}  # name -> whether its group has a name outside
        for i, (group, leaves) in enumerate(groups):
            names = [n for n in group if n not in placed]
            if not names:
                continue
            first = write(base / f"outside{i}" if leaves else sub / names[0], PROOF)
            for name in names:
                placed[name] = leaves
                if sub / name == first:
                    continue
                (sub / name).unlink(missing_ok=True)
                (sub / name).parent.mkdir(parents=True, exist_ok=True)
                os.link(first, sub / name)
        intake = read_submission(sub, IDS)
        assert intake.rejection is None
        for pid in ("P1", "P2"):
            entry = problem(intake, pid)
            leaving = sorted(n for n, out in placed.items() if out and n.startswith(pid + "/"))
            if leaving:
                assert entry.rejection is not None
                assert "hard link:" in entry.rejection
                assert entry.rejection.split(":")[0] in leaving
            else:
                assert entry.rejection is None, entry.rejection
                assert all(f.data == PROOF for f in entry.files)


# ---------------------------------------------------------------- archives

Member = tuple[tarfile.TarInfo, bytes | None]


def file(name: str, data: bytes = PROOF) -> Member:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def link(name: str, target: str) -> Member:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.LNKTYPE, target
    return info, None


def build(path: Path, members: list[Member], fmt: int = tarfile.GNU_FORMAT) -> Path:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=fmt) as archive:
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    path.write_bytes(buffer.getvalue())
    return path


def test_a_tar_made_from_a_directory_with_hard_links_reads_them_as_copies(
        tmp_path: Path) -> None:
    """What `tar` writes for a tree with links (a hard-link member naming the first name)."""
    sub = tmp_path / "sub"
    good_problem(sub, "P1")
    shutil.copytree(sub / "P1", sub / "P2", copy_function=os.link)
    with tarfile.open(tmp_path / "sub.tar.gz", "w:gz") as archive:
        archive.add(sub, arcname="sub")
    with tarfile.open(tmp_path / "sub.tar.gz") as archive:
        assert any(m.islnk() for m in archive.getmembers())
    intake = read_submission(tmp_path / "sub.tar.gz", IDS)
    for pid in ("P1", "P2"):
        assert problem(intake, pid).rejection is None
        assert files_of(problem(intake, pid)) == GOOD_FILES


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT])
def test_a_long_link_name_is_read_from_its_extension(tmp_path: Path, fmt: int) -> None:
    deep = "P1/Submission/" + "/".join(["Abcdefghij"] * 12) + "/X.lean"
    path = build(tmp_path / "s.tar", [file("P1/Submission.lean"), file(deep, HELPER),
                                      link("P2/Submission.lean", "P1/Submission.lean"),
                                      link("P2/Submission/Y.lean", deep)], fmt)
    entry = problem(read_submission(path, IDS), "P2")
    assert entry.rejection is None
    assert files_of(entry) == [("Submission.lean", PROOF), ("Submission/Y.lean", HELPER)]


REFUSED = {  # link name -> the reason the P2 link member is refused with
    "../P1/Submission.lean": "a '..' path, which may leave the archive",
    "/etc/shadow": "an absolute path, outside the archive",
    "P1/Later.lean": "no earlier member of the archive (a link names one before it)",
    "P1/README.md": "not a .lean file (intake reads only .lean files)",
    "P1/Submission": "a dir, not a regular file",
    "P1/Submission/.lake/x.lean": "a member in .lake or .git, which intake does not read",
    "P2/Submission/Evil.lean": "names itself",
    "P1/sym.lean": "a symlink, not a regular file",
    "P1/Bad.lean": "a hard link, not a regular file",
}


@pytest.mark.parametrize("target", sorted(REFUSED))
def test_a_hard_link_member_to_anything_but_an_earlier_lean_file_is_refused(
        tmp_path: Path, target: str) -> None:
    sym = tarfile.TarInfo("P1/sym.lean")
    sym.type, sym.linkname = tarfile.SYMTYPE, "/etc/shadow"
    members = [file("P1/Submission.lean"), file("P1/README.md", b"# notes\n"),
               file("P1/Submission/.lake/x.lean"), (sym, None), link("P1/Bad.lean", "/x"),
               file("P2/Submission.lean"), link("P2/Submission/Evil.lean", target),
               file("P1/Later.lean")]
    intake = read_submission(build(tmp_path / "s.tar", members), IDS)
    entry = problem(intake, "P2")
    assert entry.rejection == (f"P2/Submission/Evil.lean: hard link to {target!r}: "
                               f"{REFUSED[target]}")
    assert entry.files == ()
    assert problem(intake, "P1").rejection is None


def test_every_hard_link_member_counts_toward_the_byte_budget(tmp_path: Path) -> None:
    big = b"-- " + b"x" * 4000 + b"\n"
    members = [file("P1/Submission.lean"), file("P1/Submission/Big.lean", big),
               *(link(f"P1/Submission/Big{i}.lean", "P1/Submission/Big.lean")
                 for i in range(5))]
    path = build(tmp_path / "s.tar", members)
    intake = read_submission(path, IDS, IntakeLimits(max_file_bytes=8192,
                                                     max_total_bytes=16384))
    assert intake.rejection_code == "limit_exceeded"
    assert "the submission holds more than 16384 bytes" in (intake.rejection or "")
    fits = read_submission(path, IDS, IntakeLimits(max_total_bytes=64 * 1024))
    assert len(problem(fits, "P1").files) == 7


def test_a_link_to_a_member_over_the_file_limit_is_refused_from_its_size(
        tmp_path: Path) -> None:
    members = [file("P1/Submission.lean"), file("P2/Submission.lean", b"-- " + b"x" * 9000),
               link("P1/Submission/Big.lean", "P2/Submission.lean")]
    intake = read_submission(build(tmp_path / "s.tar", members), IDS,
                             IntakeLimits(max_file_bytes=4096))
    entry = problem(intake, "P1")
    assert entry.rejection_code == "limit_exceeded"
    assert entry.rejection == "P1/Submission/Big.lean: 9003 bytes, over the limit of 4096"


_NAMES = ["P1/Submission.lean", "P1/Submission/A.lean", "P1/notes.txt", "P2/Submission.lean",
          "P2/Submission/B.lean"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=st.lists(st.tuples(st.sampled_from(_NAMES),
                               st.one_of(st.none(), st.sampled_from(
                                   [*_NAMES, "../P1/Submission.lean", "/etc/shadow",
                                    "P3/missing.lean"]))),
                     min_size=1, max_size=6, unique_by=lambda m: m[0]))
def test_archive_links_are_copies_exactly_of_earlier_lean_files(
        plan: list[tuple[str, str | None]]) -> None:
    """Each member a file (None) or a link: a problem keeps its files exactly when each of its
    read-set links names an earlier .lean file (not itself a refused link), with its bytes."""
    members: list[Member] = []
    content: dict[str, bytes | None] = {}  # name -> bytes read, None: a refused link
    for name, target in plan:
        if target is None:
            data = name.encode() + b"\n"
            members.append(file(name, data))
            content[name] = data
        else:
            members.append(link(name, target))
            ok = target.endswith(".lean") and content.get(target) is not None
            content[name] = content[target] if ok else None
    with tempfile.TemporaryDirectory() as tmp:
        intake = read_submission(build(Path(tmp) / "s.tar", members), IDS)
    assert intake.rejection is None
    for pid in ("P1", "P2"):
        mine = {n[len(pid) + 1:]: c for n, c in content.items()
                if n.startswith(pid + "/") and n.endswith(".lean")}
        if pid + "/Submission.lean" not in content:
            continue
        entry = problem(intake, pid)
        if any(c is None for c in mine.values()):
            assert entry.rejection is not None and "hard link to" in entry.rejection
        elif entry.rejection is None:
            assert dict(files_of(entry)) == mine
        else:  # the bytes themselves are no Lean (a name, not a proof): never a link's doing
            assert "hard link" not in entry.rejection
