"""Resume (design §5.5): a killed or interrupted run, re-run on the same --out, loses nothing and
scores nothing twice; one run holds an --out at a time."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import (
    BWRAP_FLOOR,
    REPO,
    STANDIN,
    RunEval,
    correct,
    make_submission,
    no_survivor,
    survivors,
)
from test_parallel import PROBLEM, sleeper

from lean_eval import batch, lock, process
from lean_eval.resume import Planned

PAIRS = 6


def _batch(outside: Path, seconds: float = 2) -> list[Path]:
    return [sleeper(outside / "subs", f"s{i}", seconds) for i in range(PAIRS)]


def _argv(run_eval: RunEval, subs: list[Path], out: Path, work: Path,
          *extra: str) -> tuple[str, ...]:
    return (sys.executable, "-m", "lean_eval", "run-eval", *map(str, subs), "--out", str(out),
            "--work-dir", str(work), "--benchmark", str(run_eval.benchmark),
            "--toolchain", str(STANDIN), "--timeout", "60", "-q", "--skip-probes",
            "--allow-bwrap-version", BWRAP_FLOOR, *extra)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["PYTHONPATH"] = str(REPO)
    return env


def _verdicts(out: Path) -> dict[Path, tuple[bytes, int, int]]:
    """Every verdict file with its bytes, inode and mtime (so "untouched" can be checked)."""
    found = {}
    for path in sorted(out.glob("*/*.json")):
        st = path.stat()
        found[path] = (path.read_bytes(), st.st_ino, st.st_mtime_ns)
    return found


def _harness_pid(marker: str) -> int | None:
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"lean_eval" in argv and marker.encode() in argv and b"run-eval" in argv:
            return int(name)
    return None


def _in_background(argv: tuple[str, ...], timeout: float,
                   grace: float = 5.0) -> tuple[threading.Thread, list[process.ProcessResult]]:
    outcomes: list[process.ProcessResult] = []

    def target() -> None:
        outcomes.append(process.run(argv, env=_env(), cwd=REPO, timeout=timeout, grace=grace))

    thread = threading.Thread(target=target)
    thread.start()
    return thread, outcomes


def _wait_for_verdicts(out: Path, count: int, thread: threading.Thread,
                       outcomes: list[process.ProcessResult], limit: float = 90) -> None:
    deadline = time.monotonic() + limit
    while len(list(out.glob("*/*.json"))) < count:
        assert thread.is_alive(), f"the run ended early: {outcomes}"
        assert time.monotonic() < deadline, "the run wrote too few verdicts"
        time.sleep(0.05)


def _check_resumed(run_eval: RunEval, subs: list[Path], out: Path, work: Path,
                   before: dict[Path, tuple[bytes, int, int]]) -> None:
    kept = {p: v for p, v in before.items() if json.loads(v[0])["verdict"] != "error"}
    rerun = run_eval(*subs, out=out, extra=("--work-dir", str(work), "--jobs", "2"))
    assert rerun.code == 0, rerun.result.output
    assert "Traceback" not in rerun.result.output
    after = _verdicts(out)
    for path, state in kept.items():
        assert after[path] == state, f"{path} was rewritten"
    summary = rerun.summary()
    assert summary["reused"] == len(kept) and not summary["interrupted"]
    assert [p["submission"] for p in summary["pairs"]] == [f"s{i}" for i in range(PAIRS)]
    assert {p["verdict"] for p in summary["pairs"]} == {"accepted"}
    assert list(out.rglob("*.tmp")) == []
    assert [p.name for p in work.iterdir() if p.name.startswith(lock.RUN_PREFIX)] == []
    assert survivors(str(work)) == [] and survivors(str(out)) == []


def test_sigkill_mid_run_then_rerun_reuses_verdicts_byte_for_byte(
        run_eval: RunEval, outside: Path) -> None:
    subs, out, work = _batch(outside), outside / "out", outside / "work"
    thread, outcomes = _in_background(_argv(run_eval, subs, out, work, "--jobs", "1"), 120)
    _wait_for_verdicts(out, 2, thread, outcomes)
    pid = _harness_pid(str(out))
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    thread.join(60)
    assert outcomes and outcomes[0].signal == signal.SIGKILL
    no_survivor(work)  # bwrap --die-with-parent and the reapers' PDEATHSIG act asynchronously
    before = _verdicts(out)
    assert 2 <= len(before) < PAIRS
    assert [p for p in work.iterdir() if p.name.startswith(lock.RUN_PREFIX)] != [], \
        "a killed run leaves its scoring directory (the re-run reclaims it)"
    _check_resumed(run_eval, subs, out, work, before)


def test_sigterm_mid_run_exits_143_with_an_interrupted_summary_and_a_rerun_resumes(
        run_eval: RunEval, outside: Path) -> None:
    subs, out, work = _batch(outside), outside / "out", outside / "work"
    thread, outcomes = _in_background(_argv(run_eval, subs, out, work, "--jobs", "1"),
                                      timeout=120, grace=60)
    _wait_for_verdicts(out, 2, thread, outcomes)
    pid = _harness_pid(str(out))
    assert pid is not None
    os.kill(pid, signal.SIGTERM)
    thread.join(90)
    assert outcomes and outcomes[0].returncode == 143, outcomes
    assert b"Traceback" not in outcomes[0].stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["exit_code"] == 143
    assert summary["not_scored"] > 0
    assert len(summary["pairs"]) == len(list(out.glob("*/*.json")))
    assert survivors(str(work)) == []
    _check_resumed(run_eval, subs, out, work, _verdicts(out))


def test_a_second_run_on_a_locked_out_exits_2_naming_the_holder(
        run_eval: RunEval, outside: Path) -> None:
    sub = make_submission(outside / "subs", "good",
                          {PROBLEM: {"Submission.lean": correct(PROBLEM)}})
    out = outside / "out"
    out.mkdir()
    held = lock.OutLock(out)
    try:
        run = run_eval(sub, out=out)
        assert run.code == 2
        assert f"pid {os.getpid()}" in run.result.output and "in use" in run.result.output
        assert not (out / "summary.json").exists() and not (out / "good").exists()
    finally:
        held.close()
    run = run_eval(sub, out=out)
    assert run.code == 0, run.result.output
    assert run.verdict("good", PROBLEM)["verdict"] == "accepted"


def test_a_verdict_is_reused_only_when_its_key_matches_and_error_is_rescored(
        run_eval: RunEval, outside: Path) -> None:
    sub = make_submission(outside / "subs", "good", {
        PROBLEM: {"Submission.lean": correct(PROBLEM)},
        "double_def": {"Submission.lean": correct("double_def")}})
    first = run_eval(sub)
    assert first.code == 0, first.result.output
    path = first.out / "good" / f"{PROBLEM}.json"
    stale = json.loads(path.read_text())
    stale["verdict"], stale["execution"] = "error", "harness_error"
    path.write_text(json.dumps(stale))
    (first.out / "good" / ".double_def.json.abc.tmp").write_text("{half")
    again = run_eval(sub)
    assert again.code == 0 and again.summary()["reused"] == 1
    assert again.verdict("good", PROBLEM)["verdict"] == "accepted"
    assert list(first.out.rglob("*.tmp")) == []
    changed = run_eval(sub, timeout=59)  # an option that can change a verdict: no reuse
    assert changed.code == 0 and changed.summary()["reused"] == 0
    rescored = run_eval(sub, timeout=59, extra=("--rescore",))
    assert rescored.code == 0 and rescored.summary()["reused"] == 0


def test_a_submission_changed_after_planning_is_error_not_scored(
        run_eval: RunEval, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = make_submission(outside / "subs", "first",
                            {PROBLEM: {"Submission.lean": correct(PROBLEM)}})
    victim = make_submission(outside / "subs", "victim",
                             {PROBLEM: {"Submission.lean": correct(PROBLEM)}})
    original = batch._load

    def load(item: Planned, run: batch._Run) -> tuple[object, str | None]:
        if item.sid == "victim":  # after planning, before the victim's bytes are read again
            with (victim / PROBLEM / "Submission.lean").open("a") as handle:
                handle.write("-- changed after planning\n")
        return original(item, run)

    monkeypatch.setattr(batch, "_load", load)
    run = run_eval(first, victim, extra=("--jobs", "1"))
    assert run.code == 1, run.result.output
    assert run.verdict("first", PROBLEM)["verdict"] == "accepted"
    changed = run.verdict("victim", PROBLEM)
    assert changed["verdict"] == "error" and "changed after planning" in \
        changed["reason"]["message"]
