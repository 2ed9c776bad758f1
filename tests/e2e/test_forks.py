"""Fork-shaped batches (design §5.5 "Unchanged pairs", §4.4): a fork names every problem, most
of them unchanged starters. Unchanged pairs are listed by id per submission in summary.json,
still have their verdict files, and every consumer (report, merge, verify) still counts them;
a killed and resumed fork batch keeps its unchanged verdicts."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from click.testing import CliRunner
from support import (
    REPO,
    RunEval,
    correct,
    harness_pid,
    in_background,
    keypair,
    no_survivor,
    run_eval_argv,
    sh_payload,
    verdict_files,
    wait_for_verdicts,
    with_lines,
)

from lean_eval.cli import main
from lean_eval.errors import OutputRefusedError
from lean_eval.files.atomic import sync_filesystem
from lean_eval.outputs import outdir
from lean_eval.records.verdict import Summary

PROBLEMS = sorted(p.name for p in (REPO / "workspaces").iterdir() if p.is_dir())
SOLVED = "two_plus_two"


def fork(base: Path, name: str, changed: dict[str, str]) -> Path:
    """A fork naming every problem: its starters, except ``changed`` Submission.lean texts."""
    root = base / name
    for pid in PROBLEMS:
        ws = REPO / "workspaces" / pid
        for rel in ("Submission.lean", *(str(p.relative_to(ws))
                                         for p in sorted((ws / "Submission").rglob("*.lean")))):
            target = root / pid / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes((ws / rel).read_bytes())
        if pid in changed:
            (root / pid / "Submission.lean").write_text(changed[pid], encoding="utf-8")
    return root


def _summary(out: Path) -> Summary:
    return Summary.model_validate_json((out / "summary.json").read_bytes())


def test_a_fork_batch_lists_unchanged_compactly_and_every_consumer_counts_them(
        run_eval: RunEval, outside: Path) -> None:
    subs = [fork(outside / "subs", "solver", {SOLVED: correct(SOLVED)}),
            fork(outside / "subs", "idle", {})]
    run = run_eval(*subs, extra=("--jobs", "2"))
    assert run.code == 0, run.result.output
    assert "Traceback" not in run.result.output
    summary = _summary(run.out)
    # the correct submission stays accepted; only scored pairs are listed as pairs
    assert [(p.submission, p.problem, p.verdict) for p in summary.pairs] == [
        ("solver", SOLVED, "accepted")]
    others = tuple(p for p in PROBLEMS if p != SOLVED)
    assert [s.unchanged for s in summary.submissions] == [others, tuple(PROBLEMS)]
    assert summary.counts["unchanged"] == len(others) + len(PROBLEMS)
    assert [s.tally.unchanged for s in summary.submissions] == [len(others), len(PROBLEMS)]
    raw = json.loads((run.out / "summary.json").read_bytes())
    assert raw["schema_version"] == 3
    assert all(p["verdict"] != "unchanged" for p in raw["pairs"])
    # every pair, unchanged ones included, has its verdict file and is seen by pair_files
    every = summary.every_pair()
    assert len(every) == 2 * len(PROBLEMS)
    outdir.check_summary(run.out, summary)
    files = outdir.pair_files(run.out, summary)
    assert all(f.verdict is not None for f in files)
    assert [f.verdict.verdict for f in files if f.verdict] == [p.verdict for p in every]
    # report shows the unchanged pairs in its rows; verify checks their files too
    report = CliRunner().invoke(main, ["report", str(run.out), "--format", "json"],
                                catch_exceptions=False)
    assert report.exit_code == 0, report.output
    doc = json.loads(report.output)
    assert len(doc["pairs"]) == 2 * len(PROBLEMS)
    assert sum(p["verdict"] == "unchanged" for p in doc["pairs"]) == len(others) + len(PROBLEMS)
    assert not list(run.out.rglob("*.tmp"))
    # shards' compact lists combine in a merge that counts every pair covered; verify checks
    # the envelope of every pair, unchanged ones included
    private, public = keypair(outside)
    parts = [run_eval(*subs, out=outside / f"s{k}",
                      extra=("--shard", f"{k}/2", "--sign-key", str(private)))
             for k in (1, 2)]
    assert all(p.code == 0 for p in parts), [p.result.output for p in parts]
    merged = CliRunner().invoke(main, ["merge", str(parts[0].out), str(parts[1].out), "--out",
                                       str(outside / "merged")], catch_exceptions=False)
    assert merged.exit_code == 0, merged.output
    whole = _summary(outside / "merged")
    assert whole.not_scored == 0
    assert whole.not_scored_pairs == ()
    assert whole.pairs == summary.pairs
    assert [s.unchanged for s in whole.submissions] == [s.unchanged for s in summary.submissions]
    assert whole.counts == summary.counts
    verified = CliRunner().invoke(main, ["verify", str(outside / "merged"), "--key", str(public)],
                                  catch_exceptions=False)
    assert verified.exit_code == 0, verified.output
    assert f"{2 * len(PROBLEMS)} envelope(s)" in verified.output


def test_an_unchanged_id_the_rules_forbid_is_refused(run_eval: RunEval, outside: Path) -> None:
    run = run_eval(fork(outside / "subs", "idle", {}))
    assert run.code == 0, run.result.output
    summary = _summary(run.out)
    bad = summary.model_copy(update={"submissions": (summary.submissions[0].model_copy(
        update={"unchanged": ("../escape",)}),)})
    with pytest.raises(OutputRefusedError, match="escape"):
        outdir.check_summary(run.out, bad)
    # an id listed unchanged and also as a scored pair is recorded twice: refused too
    twice = summary.model_copy(update={"submissions": (summary.submissions[0].model_copy(
        update={"unchanged": (PROBLEMS[0], PROBLEMS[0])}),)})
    with pytest.raises(OutputRefusedError, match="twice"):
        outdir.check_summary(run.out, twice)


@pytest.mark.slow
def test_a_killed_fork_batch_resumes_keeping_its_unchanged_verdicts(
        run_eval: RunEval, outside: Path) -> None:
    slow = with_lines(SOLVED, sh_payload("sleep 3"))
    subs = [fork(outside / "subs", f"f{i}", {SOLVED: slow}) for i in range(3)]
    out, work = outside / "out", outside / "work"
    thread, outcomes = in_background(run_eval_argv(run_eval, subs, out, work, "--jobs", "1"), 120)
    wait_for_verdicts(out, len(PROBLEMS) + 1, thread, outcomes)  # past the first fork
    pid = harness_pid(str(out))
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    thread.join(60)
    assert outcomes
    assert outcomes[0].signal == signal.SIGKILL
    no_survivor(work)
    before = verdict_files(out)
    unchanged = {p: v for p, v in before.items() if json.loads(v[0])["verdict"] == "unchanged"}
    assert unchanged  # decided before the kill: renamed into place whole
    assert all(json.loads(v[0])["resume_key"] for v in before.values())
    rerun = run_eval(*subs, out=out, extra=("--work-dir", str(work), "--jobs", "2"))
    assert rerun.code == 0, rerun.result.output
    after = verdict_files(out)
    for path, state in unchanged.items():
        assert after[path] == state, f"{path} was rewritten"
    summary = _summary(out)
    assert summary.reused >= len(unchanged)
    assert not summary.interrupted
    assert summary.not_scored == 0
    assert [(p.submission, p.verdict) for p in summary.pairs] == [
        (f"f{i}", "accepted") for i in range(3)]
    others = tuple(p for p in PROBLEMS if p != SOLVED)
    assert [s.unchanged for s in summary.submissions] == [others] * 3
    assert len(after) == 3 * len(PROBLEMS)  # nothing lost
    assert not list(out.rglob("*.tmp"))


def test_unchanged_verdicts_are_made_durable_once_before_the_summary_is_written(
        run_eval: RunEval, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Crash safety of the fast path: its verdicts skip the per-file fsync, so one filesystem
    barrier must come after the last of them and before summary.json names them."""
    calls: list[tuple[bool, int]] = []
    original = sync_filesystem

    def barrier(path: Path) -> None:
        calls.append(((path / "summary.json").exists(), len(list(path.glob("*/*.json")))))
        original(path)

    monkeypatch.setattr("lean_eval.scoring.summary.sync_filesystem", barrier)
    subs = [fork(outside / "subs", f"f{i}", {}) for i in range(2)]
    run = run_eval(*subs)
    assert run.code == 0, run.result.output
    assert calls == [(False, 2 * len(PROBLEMS))]  # once, every verdict in place, no summary yet


def test_a_torn_unchanged_verdict_a_power_loss_could_leave_is_scored_again(
        run_eval: RunEval, outside: Path) -> None:
    """Before the barrier a power loss may leave a renamed verdict empty or cut short: resume
    must not reuse it, and the re-run records the pair (unchanged) again, losing nothing."""
    sub = fork(outside / "subs", "idle", {})
    first = run_eval(sub)
    assert first.code == 0, first.result.output
    torn, empty = (first.out / "idle" / f"{p}.json" for p in PROBLEMS[:2])
    torn.write_bytes(torn.read_bytes()[:100])
    empty.write_bytes(b"")
    rerun = run_eval(sub)
    assert rerun.code == 0, rerun.result.output
    summary = _summary(rerun.out)
    assert summary.reused == len(PROBLEMS) - 2
    assert summary.submissions[0].unchanged == tuple(PROBLEMS)
    for path in (torn, empty):
        assert json.loads(path.read_bytes())["verdict"] == "unchanged"
