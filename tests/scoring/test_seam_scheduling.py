"""The scheduler with replayed transcripts (no bubblewrap): FIFO admission, -j, memory and disk
waits, the slot freed before a pair's tree is removed, input order in the summary."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from fake_runner import (
    PROBLEM,
    FakeRunEval,
    FakeRunner,
    catalog,
    options,
    pair_of,
    score,
    submission,
)

from lean_eval.records.verdict import Verdict
from lean_eval.sandbox.runner import Launch
from lean_eval.scoring import scheduler, sizing, workspace
from lean_eval.supervise import disk, pair_fs, process

MIB = 1 << 20


def _subs(base: Path, n: int, case: str = "accepted", prefix: str = "s") -> list[Path]:
    return [submission(base / "subs", f"{prefix}{i}", case) for i in range(n)]


def _held_until_running(n: int) -> FakeRunner:
    """A runner whose pairs wait (at most 10 s) until ``n`` of them have run at once."""
    fake = FakeRunner()
    fake.on_start = lambda launch: fake.wait_until(lambda f: f.most_running >= n,
                                                   timeout=10) and None
    return fake


def test_one_job_starts_pairs_one_at_a_time_in_input_order(tmp_path: Path) -> None:
    subs = _subs(tmp_path, 5)
    fake = FakeRunner()
    events: list[scheduler.Progress] = []
    summary = score(subs, catalog(), fake, options(tmp_path / "out", jobs=1),
                    on_progress=events.append)
    assert fake.started == [(f"s{i}", PROBLEM) for i in range(5)]
    assert fake.most_running == 1
    finished = [e.running for e in events if e.verdict is not None]
    assert len(finished) == 5 and max(finished) <= 1 and finished[-1] == 0
    assert [p.submission for p in summary.pairs] == [f"s{i}" for i in range(5)]
    assert summary.jobs == 1 and summary.counts["accepted"] == 5


def test_three_jobs_keep_three_pairs_live_and_never_four(tmp_path: Path) -> None:
    subs = _subs(tmp_path, 6)
    fake = _held_until_running(3)
    summary = score(subs, catalog(), fake, options(tmp_path / "out", jobs=3))
    assert fake.most_running == 3
    # FIFO: the first three admitted are the first three inputs, then the other three
    assert set(fake.started[:3]) == {(f"s{i}", PROBLEM) for i in range(3)}
    assert set(fake.started[3:]) == {(f"s{i}", PROBLEM) for i in range(3, 6)}
    assert [p.submission for p in summary.pairs] == [f"s{i}" for i in range(6)]
    assert summary.jobs == 3 and summary.counts["accepted"] == 6


def test_summary_lists_pairs_in_input_order_whatever_finished_first(tmp_path: Path) -> None:
    slow, fast = (submission(tmp_path / "subs", name, "accepted") for name in ("slow", "fast"))
    fast_recorded = threading.Event()

    def on_verdict(verdict: Verdict) -> None:
        if verdict.submission.id == "fast":
            fast_recorded.set()

    def on_start(launch: Launch) -> None:
        if pair_of(launch)[0] == "slow":
            assert fast_recorded.wait(30)

    out = tmp_path / "out"
    summary = score([slow, fast], catalog(), FakeRunner(on_start=on_start),
                    options(out, jobs=2), on_verdict=on_verdict)
    assert (out / "fast" / f"{PROBLEM}.json").stat().st_mtime_ns <= \
        (out / "slow" / f"{PROBLEM}.json").stat().st_mtime_ns
    assert [p.submission for p in summary.pairs] == ["slow", "fast"]
    assert {p.verdict for p in summary.pairs} == {"accepted"}


def test_admission_waits_while_memory_is_below_the_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    subs = _subs(tmp_path, 3, prefix="m")
    monkeypatch.setattr(sizing, "mem_available", lambda: 100 * MIB)  # below --memory-limit
    low = FakeRunner()
    summary = score(subs, catalog(), low, options(tmp_path / "low", jobs=3,
                                                   memory_limit=1 << 30))
    assert low.most_running == 1  # one pair at a time: never two with processes alive
    assert low.started == [(f"m{i}", PROBLEM) for i in range(3)]  # and none overtakes
    assert [p.submission for p in summary.pairs] == ["m0", "m1", "m2"]
    monkeypatch.setattr(sizing, "mem_available", lambda: 64 << 30)
    high = _held_until_running(3)
    score(subs, catalog(), high, options(tmp_path / "high", jobs=3, memory_limit=1 << 30))
    assert high.most_running == 3  # negative control: enough memory, pairs overlap


def test_a_pair_that_started_short_of_memory_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pair with nothing else running starts whatever memory is available (waiting could free
    nothing), and its verdict records that it started below its limit."""
    sub = submission(tmp_path / "subs", "m0", "accepted")
    monkeypatch.setattr(sizing, "mem_available", lambda: 100 * MIB)
    score([sub], catalog(), FakeRunner(), options(tmp_path / "low", memory_limit=1 << 30))
    low = Verdict.model_validate_json((tmp_path / "low" / "m0" / f"{PROBLEM}.json").read_bytes())
    assert low.verdict == "accepted" and low.limits is not None
    assert low.limits.started_below_memory and low.limits.memory_available_at_start == 100 * MIB
    monkeypatch.setattr(sizing, "mem_available", lambda: 64 << 30)
    score([sub], catalog(), FakeRunner(), options(tmp_path / "high", memory_limit=1 << 30))
    high = Verdict.model_validate_json((tmp_path / "high" / "m0" / f"{PROBLEM}.json").read_bytes())
    assert high.limits is not None and not high.limits.started_below_memory


def test_a_finished_pairs_slot_is_free_while_its_tree_is_removed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At -j 1 the next pair starts while the previous pair's tree is still being removed
    (here: removal waits until the next pair has started)."""
    subs = _subs(tmp_path, 2, prefix="m")
    fake = FakeRunner()
    waited: list[bool] = []
    remove = workspace.remove

    def slow_remove(dirs: workspace.PairDirs) -> tuple[str, ...]:
        if dirs.root.parent.name == "m0":
            waited.append(fake.wait_until(lambda f: ("m1", PROBLEM) in f.started))
        return remove(dirs)

    monkeypatch.setattr(workspace, "remove", slow_remove)
    out = tmp_path / "out"
    summary = score(subs, catalog(), fake, options(out, jobs=1))
    assert waited == [True]  # m1 was admitted before m0's removal ended
    assert [p.submission for p in summary.pairs] == ["m0", "m1"]
    for i in range(2):
        v = Verdict.model_validate_json((out / f"m{i}" / f"{PROBLEM}.json").read_bytes())
        assert v.cleanup == ()
    assert not list(out.glob("m*/*.tmp"))


def test_short_of_the_reserve_pairs_run_alone_and_a_failure_is_scored_again_at_the_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Free space below --disk-reserve: one pair at a time (the one alone starts anyway and
    records it); a wrong proof that failed meanwhile is error after one more try alone at the
    end of the run; the correct ones accepted."""
    monkeypatch.setattr(disk, "room", lambda path: disk.Room(5 * MIB, 10_000))
    removing = [0]
    in_flight: list[int] = []  # at each start: pairs running or being removed
    remove = workspace.remove

    def counted_remove(dirs: workspace.PairDirs) -> tuple[str, ...]:
        removing[0] += 1
        try:
            return remove(dirs)
        finally:
            removing[0] -= 1

    monkeypatch.setattr(workspace, "remove", counted_remove)
    subs = [submission(tmp_path / "subs", "good", "accepted"),
            submission(tmp_path / "subs", "also", "accepted"),
            submission(tmp_path / "subs", "wrong", "build_error")]
    fake = FakeRunner(on_start=lambda launch: in_flight.append(fake.running + removing[0]))
    out = tmp_path / "out"
    summary = score(subs, catalog(), fake, options(out, jobs=3, disk_reserve=64 * MIB))
    assert in_flight == [1, 1, 1, 1]  # never two pairs in flight while short of the reserve
    assert [sid for sid, _ in fake.started] == ["good", "also", "wrong", "wrong"]
    for name in ("good", "also"):
        v = Verdict.model_validate_json((out / name / f"{PROBLEM}.json").read_bytes())
        assert v.verdict == "accepted" and v.limits is not None
        assert v.limits.started_below_reserve and v.limits.short_of_space
        assert v.limits.disk_free_at_start == 5 * MIB and v.limits.disk_reserve_bytes == 64 * MIB
    wrong = Verdict.model_validate_json((out / "wrong" / f"{PROBLEM}.json").read_bytes())
    assert (wrong.verdict, wrong.reason.code) == ("error", "disk_short")
    assert [p.submission for p in summary.pairs] == ["good", "also", "wrong"]
    assert summary.exit_code == 1


def test_with_room_a_wrong_proof_stays_rejected_and_pairs_overlap(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control of the test above: the same batch with room is scored as usual."""
    monkeypatch.setattr(disk, "room", lambda path: disk.Room(64 << 30, 1 << 30))
    subs = [submission(tmp_path / "subs", "good", "accepted"),
            submission(tmp_path / "subs", "also", "accepted"),
            submission(tmp_path / "subs", "wrong", "build_error")]
    fake = _held_until_running(3)
    out = tmp_path / "out"
    summary = score(subs, catalog(), fake, options(out, jobs=3, disk_reserve=64 * MIB))
    assert fake.most_running == 3 and len(fake.started) == 3
    assert [(p.submission, p.verdict) for p in summary.pairs] == [
        ("good", "accepted"), ("also", "accepted"), ("wrong", "rejected")]
    good = Verdict.model_validate_json((out / "good" / f"{PROBLEM}.json").read_bytes())
    assert good.limits is not None
    assert not good.limits.short_of_space and not good.limits.started_below_reserve
    assert good.limits.disk_mechanism == (
        "watchdog" if pair_fs.unavailable_reason() else "filesystem")
    assert summary.exit_code == 0


def test_progress_is_one_line_per_pair_off_a_terminal_and_nothing_with_quiet(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_eval = FakeRunEval(FakeRunner(), tmp_path, monkeypatch)
    subs = _subs(tmp_path, 2, prefix="q")
    loud = run_eval(*subs, out=tmp_path / "loud", extra=("-j", "2"), quiet=False)
    assert loud.code == 0, loud.result.output
    assert sum(f"q{i}/{PROBLEM}" in line for line in loud.result.output.splitlines()
               for i in range(2)) >= 2
    quiet = run_eval(*subs, out=tmp_path / "quiet", extra=("-j", "2"))
    assert quiet.code == 0 and quiet.result.output == ""


def test_a_sandbox_that_lost_the_mount_race_is_scored_again_from_a_fresh_copy(
        tmp_path: Path) -> None:
    """bwrap's "Unable to apply mount flags" (a pair filesystem another pair removed while the
    sandbox copied it) is no verdict on the proof: that pair is scored once more, alone, at the
    end, and ends accepted; another sandbox error is not tried again."""
    fake = FakeRunner()
    lost: set[tuple[str, str]] = set()
    race = (b"bwrap: Can't bind mount /oldroot/ on /newroot/: Unable to apply mount flags: "
            b'remount "/newroot/tmp/lean-eval-run-x/other/problem": No such file or directory\n')
    broken = b"bwrap: Can't find source path /nowhere: No such file or directory\n"

    class Racing:
        def run(self, launch: Launch) -> process.ProcessResult:
            key = pair_of(launch)
            if key[0] == "broken" or key not in lost:
                lost.add(key)
                fake.started.append(key)
                stderr = broken if key[0] == "broken" else race
                return process.ProcessResult(1, None, False, 0.1, b"", stderr, False, False, 0)
            return fake.run(launch)

    subs = [submission(tmp_path / "subs", "raced", "accepted"),
            submission(tmp_path / "subs", "broken", "accepted"),
            submission(tmp_path / "subs", "good", "accepted")]
    out = tmp_path / "out"
    score(subs, catalog(), Racing(), options(out, jobs=2))  # type: ignore[arg-type]
    verdicts = {name: Verdict.model_validate_json((out / name / f"{PROBLEM}.json").read_bytes())
                for name in ("raced", "broken", "good")}
    assert [sid for sid, _ in fake.started].count("raced") == 2  # the race, then a fresh try
    assert [sid for sid, _ in fake.started].count("broken") == 1
    assert (verdicts["raced"].verdict, verdicts["good"].verdict) == ("accepted", "accepted")
    assert verdicts["broken"].execution == "sandbox_error"
