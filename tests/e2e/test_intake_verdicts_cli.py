"""Per-problem verdicts whatever the limit, as whole ``run-eval`` batches (real bubblewrap, the
stand-in toolchain): issue 12 items 6-7 (part) and issue 17 item 2.

Every batch holds a correct submission (``good``) that must stay ``accepted``, and checks that
``summary.json`` exists, no traceback was printed and no process of the run survives
(``batch_ok``). Unit tests of the same rules: tests/intake/test_intake_verdicts.py.
"""

from __future__ import annotations

import json
import os
import subprocess  # noqa: TID251 - the unprivileged run needs a real child process
from pathlib import Path

import pytest
from support import (
    BWRAP_FLOOR,
    STANDIN,
    UNPRIVILEGED,
    RunEval,
    batch_ok,
    correct,
    good,
    make_submission,
    no_survivor,
    sparse,
    tgz,
    unprivileged_python,
)

from lean_eval.intake import reader

P = "two_plus_two"
A = "add_comm_explicit"
BIG = 64 << 20


def _archive(root: Path, path: Path, big: dict[str, int] | None = None) -> Path:
    """A .tar.gz of the directory `root` (its contents at the top); `big` names members that
    are that many zero bytes, streamed (a sparse file's content, without reading it)."""
    members: list[tuple[str, bytes | int]] = []
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = file.relative_to(root).as_posix()
        members.append((rel, (big or {}).get(rel) or file.read_bytes()))
    return tgz(path, members)


@pytest.mark.parametrize("form", ["directory", "archive"])
def test_a_64_mib_file_rejects_only_its_own_problem_with_its_verdict_file(
        run_eval: RunEval, outside: Path, form: str) -> None:
    """The issue's case: a correct add_comm_explicit beside a two_plus_two whose
    Submission/Big.lean is 64 MiB (64x --max-file-bytes, 4x --max-total-bytes)."""
    subs = outside / "subs"
    good(subs)
    root = make_submission(subs if form == "directory" else outside / "src", "mixed", {
        A: {"Submission.lean": correct(A)}, P: {"Submission.lean": correct(P)}})
    sparse(root / P / "Submission" / "Big.lean", BIG)
    sub = root if form == "directory" else _archive(
        root, subs / "mixed.tar.gz", {f"{P}/Submission/Big.lean": BIG})
    run = run_eval(sub, subs / "good")
    assert run.code == 0, run.result.output
    batch_ok(run, outside)
    bad = run.verdict("mixed", P)
    assert (bad["verdict"], bad["reason"]["code"]) == ("invalid_submission", "limit_exceeded")
    assert bad["reason"]["message"] == (
        f"{P}/Submission/Big.lean: {BIG} bytes, over the limit of {1 << 20}")
    assert run.verdict("mixed", A)["verdict"] == "accepted"
    (entry,) = [s for s in run.summary()["submissions"] if s["id"] == "mixed"]
    assert entry["rejection"] is None and entry["problems"] == [A, P]


@pytest.mark.parametrize("form", ["directory", "archive"])
def test_a_whole_submission_limit_gives_the_problem_being_walked_its_verdict(
        run_eval: RunEval, outside: Path, form: str) -> None:
    """--max-total-bytes trips inside two_plus_two/Submission/ (walked before its
    Submission.lean): both problems found so far get their invalid_submission verdict file."""
    subs = outside / "subs"
    good(subs)
    files: dict[str, str | bytes] = {"Submission.lean": correct(P)}
    files |= {f"Submission/M{i:02}.lean": "-- x\n" * 200 for i in range(20)}  # 1000 bytes each
    root = make_submission(subs if form == "directory" else outside / "src", "heavy", {
        A: {"Submission.lean": correct(A)}, P: files})
    sub = root if form == "directory" else _archive(root, subs / "heavy.tgz")
    run = run_eval(sub, subs / "good", extra=("--max-total-bytes", "8192"))
    assert run.code == 0, run.result.output
    batch_ok(run, outside)
    for pid in (A, P):
        verdict = run.verdict("heavy", pid)
        assert (verdict["verdict"], verdict["reason"]["code"]) == (
            "invalid_submission", "limit_exceeded"), pid
        assert "more than 8192 bytes" in verdict["reason"]["message"]
    (entry,) = [s for s in run.summary()["submissions"] if s["id"] == "heavy"]
    assert "more than 8192 bytes" in entry["rejection"] and entry["problems"] == [A, P]


def test_a_problem_directory_past_max_depth_is_named(run_eval: RunEval, outside: Path) -> None:
    """Issue 17's case (a/b/c/d/two_plus_two/Submission.lean under --max-depth 4) is a
    rejection with its verdict file; past the limit under a name that is no problem id, a line
    in the summary's submission entry and on the console."""
    subs = outside / "subs"
    good(subs)
    deep = subs / "deep"
    (deep / "a" / "b" / "c" / "d" / P).mkdir(parents=True)
    (deep / "a" / "b" / "c" / "d" / P / "Submission.lean").write_text(correct(P))
    hider = make_submission(subs, "hider", {A: {"Submission.lean": correct(A)}})
    (hider / "a" / "b" / "c" / "d" / "e" / P).mkdir(parents=True)
    (hider / "a" / "b" / "c" / "d" / "e" / P / "Submission.lean").write_text(correct(P))
    run = run_eval(deep, hider, subs / "good", extra=("--max-depth", "4"))
    assert run.code == 0, run.result.output
    batch_ok(run, outside)
    verdict = run.verdict("deep", P)
    assert (verdict["verdict"], verdict["reason"]["code"]) == ("invalid_submission",
                                                               "limit_exceeded")
    assert verdict["reason"]["message"] == (
        f"a/b/c/d/{P}: deeper than 4 path components, not read; a problem directory there is "
        "never found")
    assert run.verdict("hider", A)["verdict"] == "accepted"
    line = ("a/b/c/d/e: deeper than 4 path components, not read; a problem directory in it "
            "would not be found")
    entries = {s["id"]: s for s in run.summary()["submissions"]}
    assert entries["hider"]["hidden"] == [line]
    assert entries["deep"]["hidden"] == [] and entries["good"]["hidden"] == []
    assert f"hider: hidden by an intake limit: {line}" in run.result.stderr


def _deny(monkeypatch: pytest.MonkeyPatch, target: Path) -> None:
    """Fault injection at intake's only open of a walked entry: `target` cannot be read, as a
    file the harness's user has no permission for (root reads a chmod 000 file regardless)."""
    inode = target.stat().st_ino
    real = reader._open_same

    def open_same(name: str, dfd: int, flags: int, st: os.stat_result, shown: str) -> int:
        if st.st_ino == inode:
            raise PermissionError(13, "Permission denied", name)
        return real(name, dfd, flags, st, shown)

    monkeypatch.setattr(reader, "_open_same", open_same)


def test_a_file_the_harness_cannot_read_is_error_and_scored_on_resume(
        run_eval: RunEval, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    subs = outside / "subs"
    good(subs)
    locked = make_submission(subs, "locked", {A: {"Submission.lean": correct(A)},
                                              P: {"Submission.lean": correct(P)}})
    _deny(monkeypatch, locked / P / "Submission.lean")
    run = run_eval(locked, subs / "good")
    assert run.code == 1, run.result.output  # an infrastructure failure, not a rejection
    batch_ok(run, outside)
    verdict = run.verdict("locked", P)
    assert (verdict["verdict"], verdict["reason"]["code"]) == ("error", "harness_error")
    assert verdict["reason"]["message"] == (
        f"{P}/Submission.lean: cannot be read by the harness (Permission denied)")
    assert run.verdict("locked", A)["verdict"] == "accepted"
    monkeypatch.undo()  # the host is fixed: the next run on the same --out scores the pair
    again = run_eval(locked, subs / "good")
    assert again.code == 0, again.result.output
    batch_ok(again, outside)
    assert again.verdict("locked", P)["verdict"] == "accepted"
    assert again.summary()["reused"] == 1  # good; locked's digest changed with the file


def test_a_chmod_000_file_is_error_for_an_unprivileged_harness(
        bench_copy: Path, outside: Path, bwrap: str) -> None:
    """The same without a seam: run as uid 65534, where permissions bind the harness."""
    del bwrap
    subs = outside / "subs"
    good(subs)
    locked = make_submission(subs, "locked", {A: {"Submission.lean": correct(A)},
                                              P: {"Submission.lean": correct(P)}})
    setup = unprivileged_python(outside)
    if isinstance(setup, str):
        pytest.skip(setup)
    prefix, env = setup
    out = outside / "out"
    if os.geteuid() == 0:
        for path in (outside, *outside.rglob("*")):
            os.chown(path, UNPRIVILEGED, UNPRIVILEGED, follow_symlinks=False)
    (locked / P / "Submission.lean").chmod(0)
    argv = ["-m", "lean_eval", "run-eval", str(locked), str(subs / "good"), "--out", str(out),
            "--work-dir", str(outside / "work"), "--benchmark", str(bench_copy),
            "--toolchain", str(STANDIN), "--timeout", "60", "-q", "--skip-probes",
            "--allow-bwrap-version", BWRAP_FLOOR]
    done = subprocess.run([*prefix, *argv], capture_output=True, text=True, env=env,
                          cwd=outside, timeout=240, check=False)
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    assert done.returncode == 1, output
    verdict = json.loads((out / "locked" / f"{P}.json").read_text())
    assert (verdict["verdict"], verdict["reason"]["code"]) == ("error", "harness_error"), output
    assert "cannot be read by the harness (Permission denied)" in verdict["reason"]["message"]
    for sid, pid in (("locked", A), ("good", P)):
        assert json.loads((out / sid / f"{pid}.json").read_text())["verdict"] == "accepted"
    assert (out / "summary.json").is_file()
    no_survivor(outside)
