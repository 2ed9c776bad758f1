"""Intake of tar submissions (design §5.2): members, links, bombs, corrupt archives, properties."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import re
import stat
import tarfile
import tempfile
import unicodedata
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import examples

from lean_eval.errors import UsageError
from lean_eval.intake import archive_stream
from lean_eval.intake.bounds import SKIPPED_NAMES
from lean_eval.intake.bounds import show as _show
from lean_eval.intake.reader import Intake, IntakeLimits, ProblemEntry, read_submission

IDS = frozenset({"P1", "P2", "Q"})
PROOF = b"theorem t : True := trivial\n"
IDENT = r"[A-Za-z_][A-Za-z0-9_']*"
RELPATH = re.compile(rf"Submission\.lean|Submission/({IDENT}/)*{IDENT}\.lean")

Member = tuple[tarfile.TarInfo, bytes | None]


def file(name: str, data: bytes = PROOF) -> Member:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def special(name: str, kind: bytes, linkname: str = "") -> Member:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    if kind == tarfile.DIRTYPE:
        info.mode = 0o755
    return info, None


def good(pid: str, prefix: str = "") -> list[Member]:
    return [file(f"{prefix}{pid}/Submission.lean"),
            file(f"{prefix}{pid}/Submission/Helpers.lean", b"def h := 1\n")]


def build(path: Path, members: list[Member], *, compress: bool = False) -> Path:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT,
                      encoding="utf-8", errors="surrogateescape") as archive:
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    raw = buffer.getvalue()
    path.write_bytes(gzip.compress(raw) if compress else raw)
    return path


def problem(intake: Intake, pid: str) -> ProblemEntry:
    (entry,) = [p for p in intake.problems if p.problem_id == pid]
    return entry


def test_archive_reads_like_a_directory(tmp_path: Path) -> None:
    members = [special("./", tarfile.DIRTYPE), special("./ws/", tarfile.DIRTYPE),
               *good("P1", "./ws/"), *good("P2"), file("ws/P1/Challenge.lean"),
               file("ws/P1/.lake/build/x.olean"), file("README.md")]
    for name in ("sub.tar", "sub.tar.gz", "sub.tgz"):
        path = build(tmp_path / name, members, compress=name != "sub.tar")
        intake = read_submission(path, IDS)
        assert intake.rejection is None
        assert intake.submission_id == "sub"
        assert intake.digest == hashlib.sha256(path.read_bytes()).hexdigest()
        assert [(p.problem_id, p.location) for p in intake.problems] == [
            ("P1", "ws/P1"), ("P2", "P2")]
        assert [f.relpath for f in problem(intake, "P1").files] == [
            "Submission.lean", "Submission/Helpers.lean"]
        assert problem(intake, "P1").files[0].data == PROOF
        assert [i.split(":")[0] for i in problem(intake, "P1").ignored] == [
            "ws/P1/.lake", "ws/P1/Challenge.lean"]
        assert intake.ignored == ("README.md: outside every problem directory",)


def test_not_an_archive_name_is_a_usage_error(tmp_path: Path) -> None:
    build(tmp_path / "sub.tar.xz", good("P1"))
    with pytest.raises(UsageError, match=r"sub\.tar\.xz"):
        read_submission(tmp_path / "sub.tar.xz", IDS)


# ---------------------------------------------------------------- whole-submission rejections

WHOLE_REJECTIONS: dict[str, tuple[list[Member], str]] = {
    "absolute": ([file("/P1/Submission.lean")], "/P1/Submission.lean: absolute member name"),
    "absolute link": ([special("/P1/Submission.lean", tarfile.SYMTYPE, "x")],
                      "/P1/Submission.lean: absolute member name"),
    "dotdot": ([file("P1/../../etc/cron.d/x")], "P1/../../etc/cron.d/x: member name has a '..'"),
    "dotdot in Submission": ([file("P1/Submission/../../../x.lean")], "has a '..' component"),
    "dotdot link": ([special("P1/../x", tarfile.LNKTYPE, "P2/Submission.lean")],
                    "P1/../x: member name has a '..' component"),
    "duplicate": ([file("P1/Submission.lean"), file("P1/Submission.lean", b"x")],
                  "P1/Submission.lean: duplicate member"),
    "file after symlink": ([special("P1/Submission.lean", tarfile.SYMTYPE, "/etc/passwd"),
                            file("P1/Submission.lean")], "P1/Submission.lean: duplicate member"),
    "file after hard link": ([special("P1/Submission/H.lean", tarfile.LNKTYPE, "P2/x"),
                              file("P1/Submission/H.lean")], "P1/Submission/H.lean: duplicate"),
    "symlink after file": ([file("P1/Submission.lean"),
                            special("P1/Submission.lean", tarfile.SYMTYPE, "x")],
                           "P1/Submission.lean: duplicate member"),
    "symlink after symlink": ([special("docs/l", tarfile.SYMTYPE, "a"),
                               special("docs/l", tarfile.SYMTYPE, "b")], "docs/l: duplicate"),
    "symlink over a directory": ([file("P1/Submission/A.lean"),
                                  special("P1/Submission", tarfile.SYMTYPE, "/etc")],
                                 "P1/Submission: duplicate member"),
    "under a symlink": ([special("P1/Submission", tarfile.SYMTYPE, "/etc"),
                         file("P1/Submission/A.lean")],
                        "P1/Submission/A.lean: member lies under a member that is not a directory"),
    "under a symlinked .lake": ([special("P1/.lake", tarfile.SYMTYPE, "/"), file("P1/.lake/x")],
                                "P1/.lake/x: member lies under a member that is not a directory"),
    "symlinked .git after .git": ([file(".git/HEAD"), special(".git", tarfile.SYMTYPE, "/")],
                                  ".git: duplicate member"),
    "under a file": ([file("P1/Submission"), file("P1/Submission/A.lean")],
                     "P1/Submission/A.lean: member lies under a member that is not a directory"),
    "root file": ([file("./")], "./: names the archive root but is not a directory"),
    "root symlink": ([special(".", tarfile.SYMTYPE, "/")],
                     ".: names the archive root but is not a directory"),
}


@pytest.mark.parametrize("case", sorted(WHOLE_REJECTIONS))
def test_whole_submission_rejections_name_the_member(tmp_path: Path, case: str) -> None:
    members, expected = WHOLE_REJECTIONS[case]
    intake = read_submission(build(tmp_path / "s.tar", [*good("P2"), *members]), IDS)
    assert intake.rejection is not None
    assert expected in intake.rejection
    assert intake.problems == ()


def test_too_many_members(tmp_path: Path) -> None:
    members = [*good("P1"), *(file(f"junk/{i}") for i in range(20))]
    intake = read_submission(build(tmp_path / "s.tar", members), IDS, IntakeLimits(max_files=10))
    assert intake.rejection == "junk/8: the submission has more than 10 entries"


def test_too_deep_member(tmp_path: Path) -> None:
    members = [*good("P2"), file("a/" * 40 + "x"), file("a/" * 40 + "y"), *good("P1"),
               file("P1/Submission/" + "b/" * 31 + "X.lean")]
    intake = read_submission(build(tmp_path / "s.tar", members), IDS)
    assert intake.rejection is None
    assert intake.ignored == ("a/: holds no problem directory",)
    assert problem(intake, "P1").rejection == (
        "P1/Submission/" + "b/" * 30 + "b: deeper than 32 path components")
    assert problem(intake, "P2").rejection is None


def test_total_bytes_counts_every_member(tmp_path: Path) -> None:
    members = [*good("P1"), file("a.bin", b"x" * 3000), file("b.bin", b"x" * 3000)]
    limits = IntakeLimits(max_total_bytes=4000)
    intake = read_submission(build(tmp_path / "s.tgz", members, compress=True), IDS, limits)
    assert intake.rejection == "b.bin: the submission holds more than 4000 bytes"


def _count_decoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    counter = [0]
    real = archive_stream.Stream._more

    def more(self: archive_stream.Stream) -> bytes:
        data = real(self)
        counter[0] += len(data)
        return data

    monkeypatch.setattr(archive_stream.Stream, "_more", more)
    return counter


def test_gzip_bomb_is_not_decompressed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    size = 64 * 1024 * 1024
    info = tarfile.TarInfo("P1/Submission/Bomb.lean")
    info.size = size
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip container
    parts = [compressor.compress(info.tobuf(tarfile.GNU_FORMAT))]
    zeros = bytes(1024 * 1024)
    parts.extend(compressor.compress(zeros) for _ in range(size // len(zeros)))
    parts.append(compressor.compress(bytes(1024)) + compressor.flush())
    path = tmp_path / "bomb.tar.gz"
    path.write_bytes(b"".join(parts))
    assert path.stat().st_size < 200_000
    decoded = _count_decoded(monkeypatch)
    # Within the file size limit, the member's declared size counts toward the total first.
    intake = read_submission(path, IDS, IntakeLimits(max_total_bytes=100_000,
                                                     max_file_bytes=size))
    assert intake.rejection == (
        "P1/Submission/Bomb.lean: the submission holds more than 100000 bytes")
    assert decoded[0] < 1024 * 1024
    # Over it, the member is refused from its size; skipping its data is bounded before any
    # of it is decoded (SKIP_FACTOR x the archive limit).
    decoded[0] = 0
    intake = read_submission(path, IDS, IntakeLimits(max_total_bytes=100_000,
                                                     max_archive_bytes=1 << 20))
    assert intake.rejection == (
        "P1/Submission/Bomb.lean: the archive holds more than 4194304 bytes in files over the "
        "size limit of 1048576")
    assert decoded[0] < 1024 * 1024


def test_many_member_bomb_stops_at_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    members = [file(f"z{i}", bytes(1024 * 1024)) for i in range(40)]
    path = build(tmp_path / "s.tgz", members, compress=True)
    decoded = _count_decoded(monkeypatch)
    intake = read_submission(path, IDS, IntakeLimits(max_total_bytes=2 * 1024 * 1024))
    assert intake.rejection == "z2: the submission holds more than 2097152 bytes"
    assert decoded[0] < 4 * 1024 * 1024


def test_pax_header_over_the_record_limit_is_not_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = tarfile.TarInfo("P1/Submission.lean")
    info.size = len(PROOF)
    info.pax_headers = {"comment": "x" * (8 * 1024 * 1024)}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        archive.addfile(file("a")[0], io.BytesIO(PROOF))
        archive.addfile(info, io.BytesIO(PROOF))
    path = tmp_path / "pax.tar.gz"
    path.write_bytes(gzip.compress(buffer.getvalue()))
    decoded = _count_decoded(monkeypatch)
    intake = read_submission(path, IDS, IntakeLimits(max_header_bytes=4096))
    assert intake.rejection_code == "limit_exceeded"
    assert intake.rejection is not None
    assert re.fullmatch(r"archive: a 'x' header record of \d+ bytes after member a, over the "
                        r"limit of 4096", intake.rejection), intake.rejection
    assert decoded[0] < 200_000


def test_oversized_archive_file_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "big.tar"
    path.write_bytes(bytes(range(256)) * 1000)
    intake = read_submission(path, IDS, IntakeLimits(max_archive_bytes=1000))
    assert intake.rejection == "archive: more than 1000 bytes (--max-archive-bytes)"
    assert intake.rejection_code == "limit_exceeded"
    assert read_submission(path, IDS, IntakeLimits(max_archive_bytes=1000)) == intake
    path.write_bytes(bytes(range(256)) * 1001)
    assert read_submission(path, IDS, IntakeLimits(max_archive_bytes=1000)).digest != (
        intake.digest)


@pytest.mark.parametrize(
    ("name", "mangle"),
    [("truncated.tar.gz", lambda raw: gzip.compress(raw)[: len(gzip.compress(raw)) // 2]),
     ("truncated.tar", lambda raw: raw[:700]),
     ("garbage.tar", lambda _raw: b"\x01" * 4096),
     ("badcrc.tgz", lambda raw: gzip.compress(raw)[:-8] + b"\0" * 8),
     ("empty.tar", lambda _raw: b"")],
)
def test_corrupt_archives_are_rejected(
    tmp_path: Path, name: str, mangle: Callable[[bytes], bytes]
) -> None:
    raw = build(tmp_path / "ok.tar", [*good("P1"), file("x", b"y" * 5000)]).read_bytes()
    (tmp_path / name).write_bytes(mangle(raw))
    intake = read_submission(tmp_path / name, IDS)
    assert intake.rejection is not None
    assert intake.rejection.startswith("archive: corrupt ")
    assert intake.problems == ()


# ---------------------------------------------------------------- per-problem rejections

NFC = unicodedata.normalize("NFC", "é")
NFD = unicodedata.normalize("NFD", "é")

PROBLEM_REJECTIONS: dict[str, tuple[list[Member], str]] = {
    "case collision": ([file("P1/Submission/Foo.lean"), file("P1/Submission/FOO.lean")],
                       "P1/Submission/Foo.lean: collides with P1/Submission/FOO.lean"),
    "nfc collision": ([file(f"P1/Submission/{NFC}.txt"), file(f"P1/Submission/{NFD}.txt")],
                      "collides with"),
    "bad component": ([file("P1/Submission/a-b/C.lean")], "'a-b' is not a valid Lean module"),
    "dir named .lean": ([special("P1/Submission/D.lean", tarfile.DIRTYPE)],
                        "P1/Submission/D.lean: a directory named *.lean"),
    "non-utf8 name": ([file("P1/Submission/\udcfe.lean")],
                      "P1/Submission/\\udcfe.lean: name is not UTF-8"),
    "control char": ([file("P1/Submission/x\ny.lean")], "P1/Submission/x\\ny.lean: name is not"),
    "oversize": ([file("P1/Submission/Big.lean", b"-" * 1001)], "Big.lean: 1001 bytes, over"),
    "nul": ([file("P1/Submission/N.lean", b"\0")], "P1/Submission/N.lean: holds NUL bytes"),
    "not utf8": ([file("P1/Submission/U.lean", b"\xfe")], "P1/Submission/U.lean: not UTF-8"),
}


@pytest.mark.parametrize("case", sorted(PROBLEM_REJECTIONS))
def test_problem_rejections_in_archives(tmp_path: Path, case: str) -> None:
    members, expected = PROBLEM_REJECTIONS[case]
    path = build(tmp_path / "s.tgz", [*good("P1"), *members, *good("P2")], compress=True)
    intake = read_submission(path, IDS, IntakeLimits(max_file_bytes=1000))
    assert intake.rejection is None
    p1 = problem(intake, "P1")
    assert p1.rejection is not None
    assert expected in p1.rejection
    assert p1.files == ()
    assert [f.relpath for f in problem(intake, "P2").files] == [
        "Submission.lean", "Submission/Helpers.lean"]


def test_empty_submission_member(tmp_path: Path) -> None:
    path = build(tmp_path / "s.tar", [file("x/P1/Submission.lean", b""), *good("P2")])
    intake = read_submission(path, IDS)
    assert problem(intake, "P1").rejection == "x/P1/Submission.lean: empty"
    assert problem(intake, "P2").rejection is None


def test_two_problem_directories_in_an_archive(tmp_path: Path) -> None:
    path = build(tmp_path / "s.tar", [*good("P1", "a/"), *good("P1", "./b/")])
    intake = read_submission(path, IDS)
    assert intake.rejection == "problem P1 has more than one problem directory: a/P1, b/P1"


# ---------------------------------------------------------------- link and special members

LINK_KINDS: dict[str, tuple[bytes, str, str]] = {  # case: tar type, link name, kind shown
    "symlink": (tarfile.SYMTYPE, "/etc/passwd", "symlink"),
    "symlink up": (tarfile.SYMTYPE, "../../P2/Submission.lean", "symlink"),
    "hard link up": (tarfile.LNKTYPE, "../P2/Submission.lean", "hard link to "
                     "'../P2/Submission.lean': a '..' path, which may leave the archive"),
    "hard link absolute": (tarfile.LNKTYPE, "/etc/shadow",
                           "hard link to '/etc/shadow': an absolute path, outside the archive"),
    "hard link later": (tarfile.LNKTYPE, "P2/Submission.lean", "hard link to "
                        "'P2/Submission.lean': no earlier member of the archive (a link names "
                        "one before it)"),
    "char device": (tarfile.CHRTYPE, "", "device"),
    "block device": (tarfile.BLKTYPE, "", "device"),
    "fifo": (tarfile.FIFOTYPE, "", "FIFO"),
    "unknown type": (b"Z", "", "special file (tar type b'Z')"),
}
READ_SET = ["Submission.lean", "Submission", "Submission/Evil.lean", "Submission/data.txt",
            "Submission/Deep/Evil.lean", "Submission/.lake"]
ELSEWHERE: dict[str, tuple[str, str]] = {  # member: whose ignored list, the line
    "link": ("", "link: {kind}, not followed or read"),
    "Submission.lean": ("", "Submission.lean: {kind}, not followed or read"),
    "docs/link": ("", "docs/: holds no problem directory"),
    "P3/Submission.lean": ("", "P3/: holds no problem directory"),
    "P1/Challenge.lean": ("P1", "P1/Challenge.lean: not read (only Submission.lean and"),
    "P1/.lake": ("P1", "P1/.lake: not read (only Submission.lean and"),
    "P1/Submission/.lake/x": ("P1", "P1/Submission/.lake: build or version-control data"),
}


def with_good(member: Member, loc: str = "P1") -> list[Member]:
    """Good problems P1 (at `loc`) and P2 plus `member`, and no other member at its path."""
    name = member[0].name
    rel = name[len(loc) + 1:] if name.startswith(f"{loc}/") else ""
    base = {"Submission.lean": [file(f"{loc}/Submission/Helpers.lean", b"def h := 1\n")],
            "Submission": [file(f"{loc}/Submission.lean")]}
    return [*base.get(rel, good("P1", loc[: -len("P1")])), member, *good("P2")]


def assert_p2_fine(intake: Intake) -> None:
    p2 = problem(intake, "P2")
    assert p2.rejection is None
    assert [(f.relpath, f.data) for f in p2.files] == [
        ("Submission.lean", PROOF), ("Submission/Helpers.lean", b"def h := 1\n")]


@pytest.mark.parametrize("loc", ["P1", "ws/P1"])
@pytest.mark.parametrize("rel", READ_SET)
@pytest.mark.parametrize("case", sorted(LINK_KINDS))
def test_link_and_special_members_in_the_read_set_reject_only_their_problem(
    tmp_path: Path, case: str, rel: str, loc: str
) -> None:
    kind, target, shown = LINK_KINDS[case]
    members = with_good(special(f"{loc}/{rel}", kind, target), loc)
    intake = read_submission(build(tmp_path / "s.tgz", members, compress=True), IDS)
    assert intake.rejection is None
    p1 = problem(intake, "P1")
    assert p1.location == loc
    assert p1.rejection == f"{loc}/{rel}: {shown}"
    assert p1.files == ()
    assert_p2_fine(intake)


@pytest.mark.parametrize("where", sorted(ELSEWHERE))
@pytest.mark.parametrize("case", sorted(LINK_KINDS))
def test_link_and_special_members_elsewhere_are_reported(
    tmp_path: Path, case: str, where: str
) -> None:
    kind, target, shown = LINK_KINDS[case]
    intake = read_submission(build(tmp_path / "s.tar", with_good(special(where, kind, target))),
                             IDS)
    assert intake.rejection is None
    assert [(f.relpath, f.data) for f in problem(intake, "P1").files] == [
        ("Submission.lean", PROOF), ("Submission/Helpers.lean", b"def h := 1\n")]
    assert_p2_fine(intake)
    scope, line = ELSEWHERE[where]
    ignored = problem(intake, scope).ignored if scope else intake.ignored
    kind_word = shown.split(" to '")[0]  # a refused hard link is listed by its kind alone
    assert any(i.startswith(line.format(kind=kind_word)) for i in ignored), ignored


def test_link_members_are_never_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = archive_stream.Stream.exact
    seen: list[str] = []

    def exact(self: archive_stream.Stream, size: int, what: str) -> bytes:
        if "member data" in what:
            seen.append(what)
        return real(self, size, what)

    monkeypatch.setattr(archive_stream.Stream, "exact", exact)
    members = [*good("P2"), file("P1/Submission.lean"),
               *(special(f"{where}{i}", kind, target)
                 for i, (kind, target, _) in enumerate(LINK_KINDS.values())
                 for where in ("P1/Submission/L", "elsewhere/L"))]
    intake = read_submission(build(tmp_path / "s.tar", members), IDS)
    assert problem(intake, "P1").rejection == "P1/Submission/L0: symlink"
    assert_p2_fine(intake)
    assert sorted(seen) == ["P1/Submission.lean: member data", "P2/Submission.lean: member data",
                            "P2/Submission/Helpers.lean: member data"]


def test_unknown_member_data_counts_toward_the_total(tmp_path: Path) -> None:
    info = tarfile.TarInfo("odd")
    info.type, info.size = b"Z", 5000
    path = build(tmp_path / "s.tar", [*good("P1"), (info, bytes(5000))])
    intake = read_submission(path, IDS, IntakeLimits(max_total_bytes=4000))
    assert intake.rejection == "odd: the submission holds more than 4000 bytes"
    intake = read_submission(path, IDS)
    assert intake.ignored == ("odd: special file (tar type b'Z'), not followed or read",)
    assert problem(intake, "P1").rejection is None


def _make_special(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "symlink":
        path.symlink_to("/etc/passwd")
    elif kind == "FIFO":
        os.mkfifo(path)
    else:
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))


@pytest.mark.parametrize("rel", [*(f"P1/{r}" for r in READ_SET), *ELSEWHERE])
@pytest.mark.parametrize(("kind", "tar_type"), [
    ("symlink", tarfile.SYMTYPE), ("FIFO", tarfile.FIFOTYPE),
    pytest.param("device", tarfile.CHRTYPE, marks=pytest.mark.skipif(
        os.geteuid() != 0, reason="mknod of a device needs root"))])
def test_directory_and_archive_agree_on_special_entries(
    tmp_path: Path, rel: str, kind: str, tar_type: bytes
) -> None:
    members = with_good(special(rel, tar_type, "/etc/passwd"))
    root = tmp_path / "sub"
    root.mkdir()
    for info, data in members:
        if data is None:
            _make_special(root / info.name, kind)
        else:
            (root / info.name).parent.mkdir(parents=True, exist_ok=True)
            (root / info.name).write_bytes(data)
    from_dir = read_submission(root, IDS)
    from_tar = read_submission(build(tmp_path / "sub.tar", members), IDS)
    assert from_tar.rejection is None
    assert from_dir.rejection == from_tar.rejection
    assert from_dir.problems == from_tar.problems
    assert from_dir.ignored == from_tar.ignored
    assert_p2_fine(from_tar)


# ---------------------------------------------------------------- properties

GOOD_PARTS = ["P1", "P2", "Submission", "Submission.lean", "A.lean", "a.lean", "B", "b", "x.md"]
BAD_PARTS = ["..", ".", "", NFC, NFD, "x\x01", "\udcff", "Évil.lean", ".lake", "b-c.lean",
             "C:", "..\\x.lean", "\u202e.lean", "B.lean"]
COMPONENTS = st.one_of(st.sampled_from(GOOD_PARTS * 4 + BAD_PARTS), st.text(max_size=6))
LEADS = st.sampled_from([""] * 12 + ["./", "/", "../", ".//"])
NAMES = st.one_of(
    st.builds(lambda lead, parts: lead + "/".join(parts), LEADS,
              st.lists(COMPONENTS, min_size=1, max_size=6)),
    st.builds(lambda lead, pid, parts: f"{lead}{pid}/Submission/" + "/".join(parts),
              LEADS, st.sampled_from(["P1", "P2"]), st.lists(COMPONENTS, min_size=1, max_size=4)),
    st.builds(lambda pid, parts: f"{pid}/Submission/" + "/".join(parts) + ".lean",
              st.sampled_from(["P1", "P2"]),
              st.lists(st.sampled_from(["A", "a", "Foo", "x_1", "C'", "é"]), min_size=1,
                       max_size=3)),
)
KINDS = st.sampled_from([tarfile.REGTYPE] * 30 + [tarfile.DIRTYPE] * 6 + [
    tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.FIFOTYPE, tarfile.CHRTYPE, b"Z"])
TARGETS = st.sampled_from(["x", "Q/Submission.lean", "../Q/Submission.lean", "/etc/passwd"])
DATA = st.one_of(st.just(PROOF), st.binary(max_size=24))


def check_intake(intake: Intake) -> None:
    intake.model_dump_json()  # every message and location is printable, serialisable text
    for entry in intake.problems:
        assert entry.problem_id in IDS
        assert ".." not in entry.location.split("/")
        assert not entry.location.startswith("/")
        for sub in entry.files:
            assert RELPATH.fullmatch(sub.relpath), sub.relpath
            assert b"\0" not in sub.data
            sub.data.decode("utf-8")
        if entry.rejection is None:
            assert entry.files[0].relpath == "Submission.lean"


def _key(name: str) -> str:
    """A member's path as intake sees it, escaped as in messages and locations."""
    return _show("/".join(p for p in name.split("/") if p not in ("", ".")))


@settings(max_examples=examples(250), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(NAMES, KINDS, DATA, TARGETS), max_size=10), st.booleans(),
       st.booleans())
def test_generated_archives_never_escape(
    members: list[tuple[str, bytes, bytes, str]], compress: bool, with_p1: bool
) -> None:
    built: list[Member] = [*good("Q"), *good("P1")] if with_p1 else [*good("Q")]
    for name, kind, data, target in members:
        built.append(file(name, data) if kind == tarfile.REGTYPE else special(name, kind, target))
    with tempfile.TemporaryDirectory() as tmp:
        path = build(Path(tmp) / "s.tar", built, compress=compress)
        intake = read_submission(path, IDS)
        check_intake(intake)
        assert read_submission(path, IDS) == intake
    regular: dict[str, set[bytes]] = {}
    for info, data in built:
        if info.type == tarfile.REGTYPE and data is not None:
            regular.setdefault(_key(info.name), set()).add(data)
    specials = [_key(info.name) for info, data in built if data is None and not info.isdir()]
    for entry in intake.problems:
        for sub in entry.files:  # read from the regular member at that path, never via a link
            assert sub.data in regular[f"{entry.location}/{sub.relpath}"]
        if entry.rejection is None:  # no link or special member in an accepted read set
            read = f"{entry.location}/Submission"
            for key in specials:
                assert key not in (read, f"{read}.lean")
                inner = key[len(read) + 1:].split("/")[:-1]
                assert not key.startswith(f"{read}/") or SKIPPED_NAMES.intersection(inner)
    if intake.rejection is None and not any(_key(m[0]).startswith("Q/") for m in members):
        assert problem(intake, "Q").files  # a member elsewhere never rejects Q


FIRST = st.sampled_from(["P1", "P2", "ws", "x.md", ".lake", "Submission.lean"])
LATER = st.sampled_from(["Submission", "Submission", "A.lean", "x.md", ".lake", ".git", "B",
                         "Submission.lean"])
SPECIAL_KINDS = st.sampled_from([tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.FIFOTYPE,
                                 tarfile.CHRTYPE, tarfile.BLKTYPE, b"Z"])


def _in_read_set(key: tuple[str, ...], pid: str) -> bool:
    """Whether a member at `key` is, or implies a directory, that problem `pid` must read."""
    if key[:2] != (pid, "Submission") or len(key) < 3:
        return False
    for part in key[2:-1]:
        if part in SKIPPED_NAMES:
            return False
        if part.endswith(".lean"):  # an implied directory named *.lean
            return True
    return True


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(FIRST, st.lists(LATER, max_size=4), SPECIAL_KINDS, TARGETS),
                max_size=6), st.booleans())
def test_link_members_reject_at_most_their_problem(
    specs: list[tuple[str, list[str], bytes, str]], compress: bool
) -> None:
    members = [*good("P1"), *good("P2")]
    taken = [tuple(info.name.split("/")) for info, _ in members]
    specials: list[tuple[str, ...]] = []
    for first, later, kind, target in specs:
        key = (first, *later)
        if not any(key[: len(k)] == k or k[: len(key)] == key for k in taken):
            taken.append(key)
            specials.append(key)
            members.append(special("/".join(key), kind, target))
    with tempfile.TemporaryDirectory() as tmp:
        intake = read_submission(build(Path(tmp) / "s.tar", members, compress=compress), IDS)
    check_intake(intake)
    assert intake.rejection is None
    for pid in ("P1", "P2"):
        entry = problem(intake, pid)
        bad = [k for k in specials if _in_read_set(k, pid)]
        if bad:
            assert entry.files == ()
            assert entry.rejection is not None
            named = {"/".join(k[:i]) for k in bad for i in range(3, len(k) + 1)}
            assert entry.rejection.split(": ")[0] in named, entry.rejection
        else:
            assert entry.rejection is None
            assert [(f.relpath, f.data) for f in entry.files] == [
                ("Submission.lean", PROOF), ("Submission/Helpers.lean", b"def h := 1\n")]


TREE_PARTS = st.sampled_from(["P1", "P2", "Q", "Submission", "Submission", "Submission.lean",
                              "Submission.lean", "A.lean", "a.lean", "B", NFC, NFD, "x\x01",
                              "my-dir", ".lake", "notes.md", "\udcff.lean"])


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.lists(TREE_PARTS, min_size=1, max_size=5), DATA), max_size=10))
def test_directory_and_archive_of_one_tree_agree(files: list[tuple[list[str], bytes]]) -> None:
    tree: dict[tuple[str, ...], bytes] = {}
    for parts, data in files:
        key = tuple(parts)
        clash = any(key[: len(k)] == k or k[: len(key)] == key for k in tree)
        if not clash:
            tree[key] = data
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "sub"
        root.mkdir()
        dirs: set[tuple[str, ...]] = set()
        for key, data in tree.items():
            dirs.update(key[:i] for i in range(1, len(key)))
            target = root.joinpath(*key)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        members = [special("/".join(d), tarfile.DIRTYPE) for d in sorted(dirs)]
        members += [file("/".join(k), data) for k, data in sorted(tree.items())]
        from_dir = read_submission(root, IDS)
        from_tar = read_submission(build(Path(tmp) / "sub.tar", members), IDS)
    check_intake(from_dir)
    check_intake(from_tar)
    assert from_dir.rejection == from_tar.rejection
    assert from_dir.problems == from_tar.problems
    assert from_dir.ignored == from_tar.ignored


def _pax_base() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for info, data in [*good("P1"), file("P2/Submission/" + "é" * 60 + ".lean"),
                           special("d", tarfile.DIRTYPE)]:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


PAX_BASE = _pax_base()


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4095), st.integers(0, 255)), min_size=1, max_size=6),
       st.sampled_from(["plain", "gzip then mutate", "mutate then gzip"]))
def test_mutated_archives_never_raise(flips: list[tuple[int, int]], mode: str) -> None:
    raw = bytearray(gzip.compress(PAX_BASE) if mode == "gzip then mutate" else PAX_BASE)
    for position, value in flips:
        raw[position % len(raw)] = value
    data = gzip.compress(bytes(raw)) if mode == "mutate then gzip" else bytes(raw)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.tgz"
        path.write_bytes(data)
        check_intake(read_submission(path, IDS))
