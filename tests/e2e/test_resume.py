"""Resume (design §5.5): a killed or interrupted run, re-run on the same --out, loses nothing and
scores nothing twice; one run holds an --out at a time."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from support import (
    PROBLEM,
    RunEval,
    correct,
    harness_pid,
    in_background,
    make_submission,
    no_survivor,
    run_eval_argv,
    sleeper,
    survivors,
    verdict_files,
    wait_for_verdicts,
)

from lean_eval.scoring import scheduler
from lean_eval.scoring.options import Planned
from lean_eval.supervise import lock

PAIRS = 6


def _batch(outside: Path, seconds: float = 2) -> list[Path]:
    return [sleeper(outside / "subs", f"s{i}", seconds) for i in range(PAIRS)]


def _check_resumed(run_eval: RunEval, subs: list[Path], out: Path, work: Path,
                   before: dict[Path, tuple[bytes, int, int]]) -> None:
    kept = {p: v for p, v in before.items() if json.loads(v[0])["verdict"] != "error"}
    rerun = run_eval(*subs, out=out, extra=("--work-dir", str(work), "--jobs", "2"))
    assert rerun.code == 0, rerun.result.output
    assert "Traceback" not in rerun.result.output
    after = verdict_files(out)
    for path, state in kept.items():
        assert after[path] == state, f"{path} was rewritten"
    summary = rerun.summary()
    assert summary["reused"] == len(kept) and not summary["interrupted"]
    assert [p["submission"] for p in summary["pairs"]] == [f"s{i}" for i in range(PAIRS)]
    assert {p["verdict"] for p in summary["pairs"]} == {"accepted"}
    assert list(out.rglob("*.tmp")) == []
    assert [p.name for p in work.iterdir() if p.name.startswith(lock.RUN_PREFIX)] == []
    assert survivors(str(work)) == [] and survivors(str(out)) == []


@pytest.mark.slow
def test_sigkill_mid_run_then_rerun_reuses_verdicts_byte_for_byte(
        run_eval: RunEval, outside: Path) -> None:
    subs, out, work = _batch(outside), outside / "out", outside / "work"
    thread, outcomes = in_background(run_eval_argv(run_eval, subs, out, work, "--jobs", "1"), 120)
    wait_for_verdicts(out, 2, thread, outcomes)
    pid = harness_pid(str(out))
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    thread.join(60)
    assert outcomes and outcomes[0].signal == signal.SIGKILL
    no_survivor(work)  # bwrap --die-with-parent and the reapers' PDEATHSIG act asynchronously
    before = verdict_files(out)
    assert 2 <= len(before) < PAIRS
    assert [p for p in work.iterdir() if p.name.startswith(lock.RUN_PREFIX)] != [], \
        "a killed run leaves its scoring directory (the re-run reclaims it)"
    _check_resumed(run_eval, subs, out, work, before)


@pytest.mark.slow
def test_sigterm_mid_run_exits_143_with_an_interrupted_summary_and_a_rerun_resumes(
        run_eval: RunEval, outside: Path) -> None:
    subs, out, work = _batch(outside), outside / "out", outside / "work"
    thread, outcomes = in_background(run_eval_argv(run_eval, subs, out, work, "--jobs", "1"),
                                      timeout=120, grace=60)
    wait_for_verdicts(out, 2, thread, outcomes)
    pid = harness_pid(str(out))
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
    _check_resumed(run_eval, subs, out, work, verdict_files(out))


def test_a_submission_changed_after_planning_is_error_not_scored(
        run_eval: RunEval, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = make_submission(outside / "subs", "first",
                            {PROBLEM: {"Submission.lean": correct(PROBLEM)}})
    victim = make_submission(outside / "subs", "victim",
                             {PROBLEM: {"Submission.lean": correct(PROBLEM)}})
    original = scheduler._load

    def load(item: Planned, run: scheduler.RunState) -> tuple[object, str | None]:
        if item.sid == "victim":  # after planning, before the victim's bytes are read again
            with (victim / PROBLEM / "Submission.lean").open("a") as handle:
                handle.write("-- changed after planning\n")
        return original(item, run)

    monkeypatch.setattr(scheduler, "_load", load)
    run = run_eval(first, victim, extra=("--jobs", "1"))
    assert run.code == 1, run.result.output
    assert run.verdict("first", PROBLEM)["verdict"] == "accepted"
    changed = run.verdict("victim", PROBLEM)
    assert changed["verdict"] == "error" and "changed after planning" in \
        changed["reason"]["message"]
