"""The limits bookkeeping of verdicts and summaries with replayed transcripts (no bubblewrap):
the options a run was given reach every verdict, what ended a pair is recorded, pairs that never
ran carry the run's limits."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_runner import (
    PROBLEM,
    FakeRunEval,
    FakeRunner,
    catalog,
    load_transcripts,
    options,
    score,
    submission,
)
from support import REPO, make_submission

from lean_eval.records.verdict import Verdict
from lean_eval.supervise import pair_fs

MIB = 1 << 20


def _verdict(out: Path, sid: str, pid: str = PROBLEM) -> Verdict:
    return Verdict.model_validate_json((out / sid / f"{pid}.json").read_bytes())


def test_limits_and_shards_reach_every_verdict_and_the_summary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_eval = FakeRunEval(FakeRunner(), tmp_path, monkeypatch)
    subs = [submission(tmp_path / "subs", f"p{i}", "accepted") for i in range(4)]
    runs = [run_eval(*subs, out=tmp_path / f"shard{k}",
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
        assert summary["options"]["memory_limit"] == 768 << 20
        assert summary["options"]["max_processes"] == 200
    assert runs[0].summary()["shard"]["batch_digest"] == runs[1].summary()["shard"]["batch_digest"]
    assert not scored[0] & scored[1]
    assert scored[0] | scored[1] == {(f"p{i}", PROBLEM) for i in range(4)}


def test_what_ended_a_pair_is_its_verdicts_and_the_limits_mechanism_is_recorded(
        tmp_path: Path) -> None:
    subs = [submission(tmp_path / "subs", "good", "accepted"),
            submission(tmp_path / "subs", "hog", "resource_exhausted")]
    out = tmp_path / "out"
    summary = score(subs, catalog(), FakeRunner(),
                    options(out, memory_limit=384 * MIB, max_processes=64))
    mechanism = load_transcripts()["resource_exhausted"].outcome.limits_mechanism
    assert mechanism in ("cgroup_v2", "cgroup_v1", "watchdog")
    good, hog = _verdict(out, "good"), _verdict(out, "hog")
    assert good.limits is not None and hog.limits is not None
    assert (good.limits.memory_bytes, good.limits.max_processes, good.limits.exceeded) == (
        384 * MIB, 64, None)
    assert (hog.verdict, hog.execution) == ("error", "resource_exhausted")
    assert (hog.limits.exceeded, hog.limits.mechanism) == ("memory", mechanism)
    assert summary.exit_code == 1  # an infrastructure failure, never a rejection


def test_disk_limits_are_recorded_and_zero_turns_each_off(tmp_path: Path) -> None:
    sub = submission(tmp_path / "subs", "good", "accepted")
    on = tmp_path / "on"
    score([sub], catalog(), FakeRunner(),
          options(on, disk_limit=12 * MIB, disk_files=500, disk_reserve=64 * MIB))
    limits = _verdict(on, "good").limits
    assert limits is not None
    assert (limits.disk_bytes, limits.disk_files, limits.disk_reserve_bytes) == (
        12 * MIB, 500, 64 * MIB)
    # the transcript's run had its limits enforced; the pair had a filesystem of its own where
    # this harness may mount one
    assert limits.disk_mechanism == ("watchdog" if pair_fs.unavailable_reason() else "filesystem")
    off = tmp_path / "off"
    score([sub], catalog(), FakeRunner(),
          options(off, disk_limit=None, disk_files=None, disk_reserve=None))
    limits = _verdict(off, "good").limits
    assert limits is not None
    assert (limits.disk_bytes, limits.disk_files, limits.disk_reserve_bytes,
            limits.disk_mechanism) == (None, None, None, "none")


def test_pairs_that_never_ran_carry_the_runs_limits(tmp_path: Path) -> None:
    starter = (REPO / "workspaces" / PROBLEM / "Submission.lean").read_text()
    lazy = make_submission(tmp_path / "subs", "lazy", {PROBLEM: {"Submission.lean": starter}})
    dup = make_submission(tmp_path / "subs", "dup", {
        f"{d}/{PROBLEM}": {"Submission.lean": starter + "\n-- x\n"} for d in "ab"})
    fake = FakeRunner()
    out = tmp_path / "out"
    score([lazy, dup], catalog(), fake, options(out, memory_limit=512 * MIB, max_processes=99))
    assert fake.launches == []
    for sid, verdict in (("lazy", "unchanged"), ("dup", "invalid_submission")):
        v = _verdict(out, sid)
        assert (v.verdict, v.execution) == (verdict, "not_run")
        assert v.limits is not None
        assert (v.limits.memory_bytes, v.limits.max_processes, v.limits.mechanism,
                v.limits.exceeded) == (512 * MIB, 99, "none", None)
