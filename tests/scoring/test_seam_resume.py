"""Resume with replayed transcripts (no bubblewrap): a re-run on the same --out keeps every
verdict whose key matches and is not error, byte for byte, and scores only the rest."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fake_runner import PROBLEM, FakeRunEval, FakeRunner, catalog, options, score, submission

from lean_eval.errors import UsageError
from lean_eval.supervise import lock


def _verdicts(out: Path) -> dict[Path, tuple[bytes, int, int]]:
    """Every verdict file with its bytes, inode and mtime (so "untouched" can be checked)."""
    found = {}
    for path in sorted(out.glob("*/*.json")):
        st = path.stat()
        found[path] = (path.read_bytes(), st.st_ino, st.st_mtime_ns)
    return found


def _batch(base: Path) -> list[Path]:
    return [submission(base / "subs", "good", "accepted"),
            submission(base / "subs", "slow", "timeout"),
            submission(base / "subs", "wrong", "rejected_sorry")]


def test_a_rerun_rescores_only_the_error_pairs_and_keeps_the_rest_untouched(
        tmp_path: Path) -> None:
    subs, out = _batch(tmp_path), tmp_path / "out"
    first = score(subs, catalog(), FakeRunner(), options(out, jobs=2))
    assert [p.verdict for p in first.pairs] == ["accepted", "error", "rejected"]
    before = _verdicts(out)
    again = FakeRunner()
    second = score(subs, catalog(), again, options(out, jobs=2))
    assert again.started == [("slow", PROBLEM)]  # only the error pair ran again
    after = _verdicts(out)
    for name in ("good", "wrong"):
        path = out / name / f"{PROBLEM}.json"
        assert after[path] == before[path], f"{path} was rewritten"
    assert after[out / "slow" / f"{PROBLEM}.json"] != before[out / "slow" / f"{PROBLEM}.json"]
    assert second.reused == 2 and not second.interrupted
    assert [p.submission for p in second.pairs] == ["good", "slow", "wrong"]
    assert list(out.rglob("*.tmp")) == []


def test_rescore_ignores_what_is_on_disk(tmp_path: Path) -> None:
    subs, out = _batch(tmp_path), tmp_path / "out"
    score(subs, catalog(), FakeRunner(), options(out))
    again = FakeRunner()
    summary = score(subs, catalog(), again, options(out, rescore=True, jobs=1))
    assert again.started == [(s, PROBLEM) for s in ("good", "slow", "wrong")]
    assert summary.reused == 0


def test_a_verdict_is_reused_only_when_its_key_matches_and_error_is_rescored(
        tmp_path: Path) -> None:
    sub = submission(tmp_path / "subs", "good", "accepted")
    second = tmp_path / "subs" / "good" / "double_def"
    second.mkdir()
    (second / "Submission.lean").write_text(
        (Path(__file__).resolve().parents[2] / "examples" / "submissions" / "correct"
         / "double_def" / "Submission.lean").read_text() + "\n-- transcript: accepted\n")
    out = tmp_path / "out"
    first = score([sub], catalog(), FakeRunner(), options(out))
    assert first.counts["accepted"] == 2
    path = out / "good" / f"{PROBLEM}.json"
    stale = json.loads(path.read_text())
    stale["verdict"], stale["execution"] = "error", "harness_error"
    path.write_text(json.dumps(stale))
    (out / "good" / ".double_def.json.abc.tmp").write_text("{half")
    fake = FakeRunner()
    again = score([sub], catalog(), fake, options(out))
    assert again.reused == 1 and fake.started == [("good", PROBLEM)]
    assert json.loads(path.read_text())["verdict"] == "accepted"
    assert list(out.rglob("*.tmp")) == []
    changed = score([sub], catalog(), FakeRunner(), options(out, timeout=59.0))
    assert changed.reused == 0  # an option that can change a verdict: no reuse
    rescored = score([sub], catalog(), FakeRunner(), options(out, timeout=59.0, rescore=True))
    assert rescored.reused == 0


def test_a_second_run_on_a_locked_out_is_refused_naming_the_holder(tmp_path: Path) -> None:
    sub = submission(tmp_path / "subs", "good", "accepted")
    out = tmp_path / "out"
    out.mkdir()
    held = lock.OutLock(out)
    fake = FakeRunner()
    try:
        with pytest.raises(UsageError, match="in use"):
            score([sub], catalog(), fake, options(out))
        assert fake.launches == [] and not (out / "summary.json").exists()
    finally:
        held.close()
    assert score([sub], catalog(), fake, options(out)).counts["accepted"] == 1


def test_run_eval_on_a_locked_out_exits_2_naming_the_holder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same through the CLI (run-eval's exit code and message), its launches replayed."""
    fake = FakeRunner()
    run_eval = FakeRunEval(fake, tmp_path, monkeypatch)
    sub = submission(tmp_path / "subs", "good", "accepted")
    out = tmp_path / "out"
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
    assert fake.started == [("good", PROBLEM)]
