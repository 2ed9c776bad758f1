"""run-eval --jobs: pairs run at once, never see each other, and the summary keeps input order."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from support import (
    BWRAP_FLOOR,
    PROBLEM,
    STANDIN,
    RunEval,
    make_submission,
    sh_payload,
    sleeper,
    survivors,
    with_lines,
)

from lean_eval import progress, sandbox, scheduler, sizing, workspace
from lean_eval.cli import main
from lean_eval.verdict import Mounts


@pytest.mark.slow
def test_three_jobs_keep_three_sleeping_pairs_live_at_once(
        run_eval: RunEval, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Order and outcome, not wall-clock time (a loaded machine must pass): with --jobs 1 at
    most the next pair runs when one finishes (a pair frees its slot once its processes are
    gone, before its verdict is recorded); with --jobs 3 at least two others still do."""
    seen: list[int] = []
    original = progress.Display.update

    def update(self: progress.Display, event: scheduler.Progress) -> None:
        if event.verdict is not None:  # a pair finished: how many others were still running
            seen.append(event.running)
        original(self, event)

    monkeypatch.setattr(progress.Display, "update", update)
    subs = [sleeper(outside / "subs", f"s{i}", 3) for i in range(6)]
    one = run_eval(*subs, out=outside / "one", extra=("--jobs", "1"))
    serial, seen[:] = list(seen), []
    three = run_eval(*subs, out=outside / "three", extra=("--jobs", "3"))
    for run in (one, three):
        assert run.code == 0, run.result.output
        assert "Traceback" not in run.result.output
        summary = run.summary()
        assert [p["submission"] for p in summary["pairs"]] == [f"s{i}" for i in range(6)]
        assert summary["counts"]["accepted"] == 6
    assert three.summary()["jobs"] == 3
    assert len(serial) == 6 and max(serial) <= 1 and serial[-1] == 0, serial
    assert len(seen) == 6 and 2 <= max(seen) <= 3, seen  # three pairs live at once
    assert survivors(str(outside)) == []


@pytest.mark.slow
def test_summary_lists_pairs_in_input_order_whatever_finished_first(
        run_eval: RunEval, outside: Path) -> None:
    slow = sleeper(outside / "subs", "slow", 4)
    fast = make_submission(outside / "subs", "fast",
                           {PROBLEM: {"Submission.lean": with_lines(PROBLEM)}})
    run = run_eval(slow, fast, extra=("--jobs", "2"))
    assert run.code == 0, run.result.output
    assert (run.out / "fast" / f"{PROBLEM}.json").stat().st_mtime_ns < \
        (run.out / "slow" / f"{PROBLEM}.json").stat().st_mtime_ns
    assert [p["submission"] for p in run.summary()["pairs"]] == ["slow", "fast"]
    assert all(p["verdict"] == "accepted" for p in run.summary()["pairs"])


def _peekers(outside: Path) -> tuple[Path, Path]:
    """Two correct proofs, live at the same time, each trying to read the other's workspace:
    each waits (up to 10 s, an event rather than a fixed delay) for the other's file to be
    visible and reads it; one that read it stays live (up to 60 s, again an event) until the
    other has read its own, so that neither depends on how fast the other starts."""
    work = outside / "work"
    subs = []
    for me, other in (("alpha", "beta"), ("beta", "alpha")):
        there = f"{work}/lean-eval-run-*/{other}/{PROBLEM}/workspace"
        peek = (f"i=0; while [ $i -lt 100 ] && ! [ -e {there}/Submission.lean ]; do sleep 0.1; "
                f"i=$((i+1)); done; if [ -e {there}/Submission.lean ]; then "
                f"cat {there}/Submission.lean; : > .lake/peeked; i=0; "
                f"while [ $i -lt 600 ] && ! [ -e {there}/.lake/peeked ]; do sleep 0.1; "
                "i=$((i+1)); done; fi")
        subs.append(make_submission(outside / "subs", me, {PROBLEM: {
            "Submission.lean": with_lines(PROBLEM, f"-- SECRET-{me.upper()}-MARK",
                                          sh_payload(peek))}}))
    return subs[0], subs[1]


def _leaks(run_eval: RunEval, outside: Path) -> list[str]:
    alpha, beta = _peekers(outside)
    run = run_eval(alpha, beta, extra=("--jobs", "2", "--work-dir", str(outside / "work")))
    assert run.code == 0, run.result.output
    assert {p["verdict"] for p in run.summary()["pairs"]} == {"accepted"}
    assert "Traceback" not in run.result.output
    assert survivors(str(outside)) == []
    leaks = []
    for me, other in (("alpha", "BETA"), ("beta", "ALPHA")):
        if f"SECRET-{other}-MARK" in run.log(me, PROBLEM):
            leaks.append(f"{me} read {other.lower()}'s workspace")
    return leaks


@pytest.mark.slow
def test_two_live_pairs_cannot_read_each_others_workspace(
        run_eval: RunEval, outside: Path) -> None:
    assert _leaks(run_eval, outside) == []


def test_negative_control_without_the_run_masks_a_live_pair_reads_the_other(
        run_eval: RunEval, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_masks(**_: object) -> Mounts:
        return Mounts()

    monkeypatch.setattr(sandbox, "run_masks", no_masks)
    assert _leaks(run_eval, outside) != []


@pytest.mark.slow
def test_admission_waits_while_memory_is_below_the_limit(
        run_eval: RunEval, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    original = progress.Display.update

    def update(self: progress.Display, event: scheduler.Progress) -> None:
        seen.append(event.running)  # pairs holding a slot (processes alive) at each event
        original(self, event)

    monkeypatch.setattr(progress.Display, "update", update)
    subs = [sleeper(outside / "subs", f"m{i}", 1) for i in range(3)]
    monkeypatch.setattr(sizing, "mem_available", lambda: 100 << 20)  # below --memory-limit
    low = run_eval(*subs, out=outside / "low", extra=("--jobs", "3", "--memory-limit", "1G"))
    assert low.code == 0, low.result.output
    assert max(seen) == 1  # one pair at a time: never two with processes alive
    assert [p["submission"] for p in low.summary()["pairs"]] == ["m0", "m1", "m2"]
    seen.clear()
    monkeypatch.setattr(sizing, "mem_available", lambda: 64 << 30)
    high = run_eval(*subs, out=outside / "high", extra=("--jobs", "3", "--memory-limit", "1G"))
    assert high.code == 0 and max(seen) > 0  # negative control: enough memory, pairs overlap


def test_default_jobs_is_the_cpus_lowered_to_what_memory_allows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    cpus = len(os.sched_getaffinity(0))
    monkeypatch.setattr(sizing, "mem_available", lambda: 64 << 30)
    assert sizing.default_jobs(1 << 30) == cpus
    monkeypatch.setattr(sizing, "mem_available", lambda: 9 << 30)
    assert sizing.default_jobs(8 << 30) == 1
    monkeypatch.setattr(sizing, "mem_available", lambda: 1 << 30)
    assert sizing.default_jobs(8 << 30) == 1


def test_limits_and_shards_reach_every_verdict_and_the_summary(
        run_eval: RunEval, outside: Path) -> None:
    subs = [make_submission(outside / "subs", f"p{i}",
                            {PROBLEM: {"Submission.lean": with_lines(PROBLEM)}})
            for i in range(4)]
    runs = [run_eval(*subs, out=outside / f"shard{k}",
                     extra=("--shard", f"{k}/2", "--memory-limit", "768M",
                            "--max-processes", "200")) for k in (1, 2)]
    scored = []
    for k, run in zip((1, 2), runs, strict=True):
        assert run.code == 0, run.result.output
        summary = run.summary()
        assert (summary["shard"]["k"], summary["shard"]["n"]) == (k, 2)
        scored.append({(p["submission"], p["problem"]) for p in summary["pairs"]})
        for pair in summary["pairs"]:
            verdict = run.verdict(pair["submission"], pair["problem"])
            assert verdict["verdict"] == "accepted"
            assert verdict["limits"]["memory_bytes"] == 768 << 20
            assert verdict["limits"]["max_processes"] == 200
    assert runs[0].summary()["shard"]["batch_digest"] == runs[1].summary()["shard"]["batch_digest"]
    assert not scored[0] & scored[1]
    assert scored[0] | scored[1] == {(f"p{i}", PROBLEM) for i in range(4)}


def test_progress_is_one_line_per_pair_off_a_terminal_and_nothing_with_quiet(
        bench_copy: Path, outside: Path, bwrap: str) -> None:
    del bwrap
    subs = [make_submission(outside / "subs", f"q{i}",
                            {PROBLEM: {"Submission.lean": with_lines(PROBLEM)}})
            for i in range(2)]
    base = ["run-eval", *map(str, subs), "--benchmark", str(bench_copy), "--toolchain",
            str(STANDIN), "--skip-probes", "--allow-bwrap-version", BWRAP_FLOOR, "-j", "2"]
    loud = CliRunner().invoke(main, [*base, "--out", str(outside / "loud")], catch_exceptions=False)
    assert loud.exit_code == 0, loud.output
    assert sum(f"q{i}/{PROBLEM}" in line for line in loud.output.splitlines()
               for i in range(2)) >= 2
    quiet = CliRunner().invoke(main, [*base, "--out", str(outside / "quiet"), "-q"],
                               catch_exceptions=False)
    assert quiet.exit_code == 0 and quiet.output == ""


def test_a_pair_that_started_short_of_memory_says_so(
        run_eval: RunEval, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 17 item 4: a pair with nothing else running starts whatever memory is available
    (waiting could free nothing), and its verdict records that it started below its limit."""
    sub = sleeper(outside / "subs", "m0", 0)
    monkeypatch.setattr(sizing, "mem_available", lambda: 100 << 20)
    low = run_eval(sub, out=outside / "low", extra=("--memory-limit", "1G"))
    limits = low.verdict("m0", PROBLEM)["limits"]
    assert low.verdict("m0", PROBLEM)["verdict"] == "accepted"
    assert limits["started_below_memory"] and limits["memory_available_at_start"] == 100 << 20
    monkeypatch.setattr(sizing, "mem_available", lambda: 64 << 30)
    high = run_eval(sub, out=outside / "high", extra=("--memory-limit", "1G"))
    assert not high.verdict("m0", PROBLEM)["limits"]["started_below_memory"]


def test_a_finished_pairs_slot_is_free_while_its_tree_is_removed(
        run_eval: RunEval, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 12 item 7: at -j 1 the next pair starts while the previous pair's tree is still
    being removed (here: removal waits until the next pair has started)."""
    subs = [sleeper(outside / "subs", f"m{i}", 0) for i in range(2)]
    second_started = threading.Event()
    waited: list[bool] = []
    remove, prepare = workspace.remove, workspace.prepare

    def slow_remove(dirs: workspace.PairDirs) -> tuple[str, ...]:
        if dirs.root.parent.name == "m0":
            waited.append(second_started.wait(60))
        return remove(dirs)

    def noting_prepare(dirs: workspace.PairDirs) -> tuple[str, ...]:
        if dirs.root.parent.name == "m1":
            second_started.set()
        return prepare(dirs)

    monkeypatch.setattr(workspace, "remove", slow_remove)
    monkeypatch.setattr(workspace, "prepare", noting_prepare)
    run = run_eval(*subs, extra=("--jobs", "1"))
    assert run.code == 0, run.result.output
    assert waited == [True]  # m1 was admitted before m0's removal ended
    assert [p["submission"] for p in run.summary()["pairs"]] == ["m0", "m1"]
    assert all(run.verdict(f"m{i}", PROBLEM)["cleanup"] == [] for i in range(2))
    assert not list((outside / "out").glob("m*/*.tmp"))
