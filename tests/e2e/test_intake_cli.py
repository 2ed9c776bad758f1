"""Every design §5.2 rejection through ``run-eval``: the message names the entry, and the other
pairs of the same submission are still scored."""

from __future__ import annotations

import gzip
import io
import os
import socket
import stat
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from support import PROBLEMS, Run, RunEval, correct, fork_archive, make_submission, no_survivor

GOOD = "two_plus_two"
BAD = "add_comm_explicit"


def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _socket(p: Path) -> None:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(p))
    s.close()


def _device(p: Path) -> None:
    os.mknod(p, 0o600 | stat.S_IFCHR, os.makedev(1, 3))


def _write(rel: str, data: bytes) -> Callable[[Path], None]:
    def make(problem_dir: Path) -> None:
        target = problem_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return make


def _special(rel: str, maker: Callable[[Path], None]) -> Callable[[Path], None]:
    def make(problem_dir: Path) -> None:
        target = problem_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        maker(target)
    return make


def _symlink(rel: str) -> Callable[[Path], None]:
    def make(problem_dir: Path) -> None:
        (problem_dir / "real.lean").write_text(correct(BAD))
        target = problem_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        target.symlink_to(problem_dir / "real.lean")
    return make


def _hardlink(problem_dir: Path) -> None:  # its other name is outside the submission
    sub = problem_dir.parent
    os.link(problem_dir / "Submission.lean", sub.parent / f"{sub.name}-elsewhere.lean")


def _dir_named_lean(problem_dir: Path) -> None:
    (problem_dir / "Submission" / "Dir.lean").mkdir(parents=True)


def _collision(a: str, b: str) -> Callable[[Path], None]:
    def make(problem_dir: Path) -> None:
        for rel in (a, b):
            target = problem_dir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("namespace Submission\nend Submission\n")
    return make


def _bytes_name(problem_dir: Path) -> None:
    sub = problem_dir / "Submission"
    sub.mkdir()
    with open(os.path.join(os.fsencode(sub), b"\xff.lean"), "wb") as handle:
        handle.write(b"-- x\n")


# name -> (defect maker, fragment of the entry the message must name)
DIR_CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "symlink_submission": (_symlink("Submission.lean"), "Submission.lean"),
    "symlink_in_tree": (_symlink("Submission/Link.lean"), "Submission/Link.lean"),
    "hard_link": (_hardlink, "Submission.lean"),
    "fifo": (_special("Submission/Pipe.lean", _fifo), "Submission/Pipe.lean"),
    "socket": (_special("Submission/Sock.lean", _socket), "Submission/Sock.lean"),
    "device": (_special("Submission/Dev.lean", _device), "Submission/Dev.lean"),
    "dir_named_lean": (_dir_named_lean, "Submission/Dir.lean"),
    "bad_component": (_write("Submission/my-file.lean", b"-- x\n"), "Submission/my-file.lean"),
    "non_utf8_name": (_bytes_name, "Submission/"),
    "control_char": (_write("Submission/a\x07b.lean", b"-- x\n"), "Submission/a"),
    "case_collision": (_collision("Submission/Foo.lean", "Submission/foo.lean"),
                       "Submission/"),
    "nfc_collision": (_collision("Submission/Caf\u00e9/A.lean", "Submission/Cafe\u0301/A.lean"),
                      "Submission/Caf"),
    "too_big": (_write("Submission/Big.lean", b"-- " + b"x" * 9000 + b"\n"),
                "Submission/Big.lean"),
    "empty": (_write("Submission.lean", b""), "Submission.lean"),
    "not_utf8": (_write("Submission.lean", b"theorem \xff\xfe"), "Submission.lean"),
    "nul_bytes": (_write("Submission.lean", b"theorem x\x00"), "Submission.lean"),
    "too_deep": (_write("Submission/" + "d/" * 32 + "X.lean", b"-- x\n"), "Submission/d/d/d"),
    "escaped_import": (_write("Submission/Evil.lean", "import «Evil»\n".encode()),
                       "Submission/Evil.lean: import header"),
}
CODES = {"too_big": "limit_exceeded", "too_deep": "limit_exceeded",
         "escaped_import": "import_rejected"}


def _check_pair_rejected(run: Run, sub: str, fragment: str,
                         code: str = "path_rejected") -> None:
    bad = run.verdict(sub, BAD)
    assert bad["verdict"] == "invalid_submission", (sub, bad["reason"])
    assert bad["reason"]["code"] == code
    assert bad["execution"] == "not_run"
    assert f"{BAD}/{fragment}" in bad["reason"]["message"], (sub, bad["reason"]["message"])
    good = run.verdict(sub, GOOD)
    assert good["verdict"] == "accepted", (sub, good["reason"], run.log(sub, GOOD))


@pytest.mark.slow
def test_each_directory_rejection_names_the_entry_and_spares_other_pairs(
        run_eval: RunEval, outside: Path) -> None:
    if os.geteuid() != 0:
        DIR_CASES.pop("device")
    subs = []
    for name, (defect, _) in DIR_CASES.items():
        root = make_submission(outside / "subs", name, {
            GOOD: {"Submission.lean": correct(GOOD)}, BAD: {"Submission.lean": correct(BAD)}})
        defect(root / BAD)
        subs.append(root)
    run = run_eval(*subs, extra=("--max-file-bytes", "4096"))
    assert run.code == 0, run.result.output
    for name, (_, fragment) in DIR_CASES.items():
        _check_pair_rejected(run, name, fragment, CODES.get(name, "path_rejected"))


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]],
         compress: bool = False) -> Path:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    raw = buffer.getvalue()
    path.write_bytes(gzip.compress(raw) if compress else raw)
    return path


def _file(name: str, data: str | bytes) -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data.encode() if isinstance(data, str) else data


def _link(name: str, kind: bytes, target: str = "/etc/passwd") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    if kind == tarfile.CHRTYPE:
        info.devmajor, info.devminor = 1, 3
    return info, None


ARCHIVE_PAIR_CASES = {
    "a_symlink": _link(f"{BAD}/Submission/Evil.lean", tarfile.SYMTYPE),
    "a_hardlink": _link(f"{BAD}/Submission/Evil.lean", tarfile.LNKTYPE,
                        f"../{GOOD}/Submission.lean"),
    "a_device": _link(f"{BAD}/Submission/Evil.lean", tarfile.CHRTYPE),
    "a_fifo": _link(f"{BAD}/Submission/Evil.lean", tarfile.FIFOTYPE),
}


def test_archive_link_and_device_members_reject_their_pair(run_eval: RunEval,
                                                          outside: Path) -> None:
    subs = []
    for name, member in ARCHIVE_PAIR_CASES.items():
        subs.append(_tar(outside / f"{name}.tgz", [
            _file(f"{GOOD}/Submission.lean", correct(GOOD)),
            _file(f"{BAD}/Submission.lean", correct(BAD)), member], compress=True))
    run = run_eval(*subs)
    assert run.code == 0, run.result.output
    for name in ARCHIVE_PAIR_CASES:
        _check_pair_rejected(run, name, "Submission/Evil.lean")


ARCHIVE_WHOLE_CASES: dict[str, tuple[list[tuple[tarfile.TarInfo, bytes]], str]] = {
    "absolute": ([_file("/etc/cron.d/x", "x")], "/etc/cron.d/x"),
    "dotdot": ([_file(f"{GOOD}/../../x.lean", "x")], f"{GOOD}/../../x.lean"),
    # Each under --max-file-bytes (a bigger one is refused from its size, problem only).
    "bomb": ([_file(f"{GOOD}/Submission/Zeros{i}.lean", b"\0" * (512 << 10)) for i in range(16)],
             f"{GOOD}/Submission/Zeros"),
}


@pytest.mark.parametrize("case", sorted(ARCHIVE_WHOLE_CASES))
def test_archive_escapes_and_bombs_reject_the_submission(run_eval: RunEval, outside: Path,
                                                         case: str) -> None:
    members, fragment = ARCHIVE_WHOLE_CASES[case]
    archive = _tar(outside / f"{case}.tar.gz",
                   [_file(f"{GOOD}/Submission.lean", correct(GOOD)), *members], compress=True)
    run = run_eval(archive, extra=("--max-total-bytes", str(1 << 20)))
    assert run.code == 0, run.result.output
    summary = run.summary()
    (sub,) = summary["submissions"]
    assert sub["id"] == case and fragment in sub["rejection"]
    assert sub["rejection_code"] == ("limit_exceeded" if case == "bomb" else "path_rejected")
    assert summary["pairs"] == [] or all(
        p["verdict"] == "invalid_submission" for p in summary["pairs"])
    assert not (outside / "etc").exists() and not Path("/etc/cron.d/x").exists()


@pytest.mark.parametrize(("option", "value", "files", "fragment"), [
    ("--max-files", "6", {f"{GOOD}/notes/n{i}.txt": "n" for i in range(10)}, "entries"),
    ("--max-total-bytes", "2048", {f"{GOOD}/blob.bin": "x" * 4096}, "blob.bin"),
], ids=["max-files", "max-total-bytes"])
def test_directory_limits_reject_the_submission(run_eval: RunEval, outside: Path, option: str,
                                                value: str, files: dict[str, str],
                                                fragment: str) -> None:
    root = make_submission(outside / "subs", "big", {GOOD: {"Submission.lean": correct(GOOD)}})
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    run = run_eval(root, extra=(option, value))
    (sub,) = run.summary()["submissions"]
    assert sub["rejection"] is not None and fragment in sub["rejection"], sub
    assert sub["rejection_code"] == "limit_exceeded"
    assert run.code == 0


def test_duplicate_problem_directories_reject_the_whole_submission(
        run_eval: RunEval, outside: Path) -> None:
    root = make_submission(outside / "subs", "dup", {
        f"a/{GOOD}": {"Submission.lean": correct(GOOD)},
        f"b/{GOOD}": {"Submission.lean": correct(GOOD)},
        BAD: {"Submission.lean": correct(BAD)}})
    other = make_submission(outside / "subs", "other", {GOOD: {"Submission.lean": correct(GOOD)}})
    run = run_eval(root, other)
    assert "Traceback" not in run.result.output, run.result.output
    sub = next(s for s in run.summary()["submissions"] if s["id"] == "dup")
    assert f"a/{GOOD}" in sub["rejection"] and f"b/{GOOD}" in sub["rejection"]
    for problem in (GOOD, BAD):  # every problem the rejected submission names has a verdict
        verdict = run.verdict("dup", problem)
        assert verdict["verdict"] == "invalid_submission"
        assert verdict["reason"]["message"] == sub["rejection"]
    assert run.verdict("other", GOOD)["verdict"] == "accepted"
    assert run.code == 0
    no_survivor(outside)


def test_submission_without_problem_directories_gets_a_hint(run_eval: RunEval,
                                                          outside: Path) -> None:
    top = make_submission(outside / "subs", "top", {".": {"Submission.lean": correct(GOOD)}})
    dashed = make_submission(outside / "subs", "dashed", {
        "two-plus-two": {"Submission.lean": correct(GOOD)}})
    other = make_submission(outside / "subs", "other", {GOOD: {"Submission.lean": correct(GOOD)}})
    run = run_eval(top, dashed, other)
    assert "Traceback" not in run.result.output, run.result.output
    hints = {s["id"]: s["hint"] for s in run.summary()["submissions"]}
    assert "Submission.lean is at the top level" in hints["top"]
    assert "did you mean two_plus_two?" in hints["dashed"]
    assert hints["other"] is None
    assert run.verdict("other", GOOD)["verdict"] == "accepted"
    no_survivor(outside)


def test_fork_layout_is_found(run_eval: RunEval, outside: Path) -> None:
    root = make_submission(outside / "subs", "fork", {
        f"workspaces/{GOOD}": {"Submission.lean": correct(GOOD), "Challenge.lean": "evil"}})
    run = run_eval(root)
    v = run.verdict("fork", GOOD)
    assert v["verdict"] == "accepted"
    assert any("Challenge.lean" in item for item in v["ignored"])


def test_path_too_long_under_the_scoring_root_rejects_only_its_pair(
        run_eval: RunEval, outside: Path) -> None:
    long_dir = "/".join(["A" * 250] * 17)  # every component and the depth pass; the whole not
    archive = _tar(outside / "longpath.tar", [
        _file(f"{GOOD}/Submission.lean", correct(GOOD)),
        _file(f"{BAD}/Submission.lean", correct(BAD)),
        _file(f"{BAD}/Submission/{long_dir}/X.lean", "-- x\n")])
    other = make_submission(outside / "subs", "other", {GOOD: {"Submission.lean": correct(GOOD)}})
    run = run_eval(archive, other)
    assert "Traceback" not in run.result.output, run.result.output
    bad = run.verdict("longpath", BAD)
    assert bad["verdict"] == "invalid_submission"
    assert bad["reason"]["code"] == "path_rejected"
    assert f"{BAD}/Submission/AAAA" in bad["reason"]["message"]
    assert "inside the scoring workspace, over the limit of" in bad["reason"]["message"]
    assert run.verdict("longpath", GOOD)["verdict"] == "accepted"
    assert run.verdict("other", GOOD)["verdict"] == "accepted"
    assert (run.out / "summary.json").is_file()
    assert run.code == 0, run.result.output
    no_survivor(outside)


def test_git_archive_fork_with_one_workspace_solved(run_eval: RunEval, outside: Path) -> None:
    fork = fork_archive(outside / "fork.tar", GOOD, correct(GOOD).encode())
    other = make_submission(outside / "subs", "other", {BAD: {"Submission.lean": correct(BAD)}})
    run = run_eval(fork, other)
    output = run.result.output
    assert "Traceback" not in output, output
    solved = run.verdict("fork", GOOD)
    assert solved["verdict"] == "accepted", (solved["reason"], output)
    summary = run.summary()
    pairs = {p["problem"]: p["verdict"] for p in summary["pairs"] if p["submission"] == "fork"}
    # unchanged pairs are listed by id in their submission's entry (summary schema 2)
    pairs |= dict.fromkeys(next(s["unchanged"] for s in summary["submissions"]
                                if s["id"] == "fork"), "unchanged")
    assert pairs == {pid: "accepted" if pid == GOOD else "unchanged" for pid in PROBLEMS}
    assert run.verdict("other", BAD)["verdict"] == "accepted"
    assert run.code == 0, output
    no_survivor(outside)
