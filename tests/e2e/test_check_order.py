"""run-eval's order of checks (issue 16 item 7): everything that needs no sandbox comes first.

Arguments, ``--out``'s lock, toolchain, bubblewrap and the catalog are checked before any probe
and their errors reported together; the probes run only when a pair needs a sandbox. Probe runs
are counted through the CLI's probe runner (run for real once, then replayed), never timed.
"""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from support import BWRAP_FLOOR, CORRECT, STANDIN, make_submission

from lean_eval.benchmark import catalog
from lean_eval.cli import main
from lean_eval.probes import preflight
from lean_eval.records import out_layout
from lean_eval.supervise import lock

REPO = Path(__file__).resolve().parents[2]
INCORRECT = REPO / "examples" / "submissions" / "incorrect"


@pytest.fixture
def probes(replayed_probes: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """Every call of the CLI's probe runner; the real probes run once per session (conftest)."""
    return replayed_probes


def _run_eval(bench: Path, out: Path, *subs: Path, extra: tuple[str, ...] = (),
              env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, [
        "run-eval", *map(str, subs), "--out", str(out), "--benchmark", str(bench),
        "--timeout", "60", "--work-dir", str(out.parent / "work"), *extra],
        env=env or {}, catch_exceptions=False)


def _tools(*extra: str) -> tuple[str, ...]:
    return ("--toolchain", str(STANDIN), "--allow-bwrap-version", BWRAP_FLOOR, *extra)


@pytest.mark.slow
def test_a_locked_out_is_refused_before_any_probe_runs(
        bench_copy: Path, outside: Path, bwrap: str, probes: list[tuple[str, ...]]) -> None:
    out = outside / "out"
    out.mkdir()
    held = lock.OutLock(out.resolve())  # another run-eval holds --out
    try:
        result = _run_eval(bench_copy, out, CORRECT, extra=_tools("--problem", "two_plus_two"))
    finally:
        held.close()
    assert result.exit_code == 2, result.output
    assert f"--out {out.resolve()} is in use by pid" in result.output
    assert probes == []  # refused before the probes
    assert sorted(p.name for p in out.iterdir()) == [out_layout.LOCK]  # nothing else written
    # Negative control on the same --out, lock free: the same command probes and scores.
    result = _run_eval(bench_copy, out, CORRECT, extra=_tools("--problem", "two_plus_two"))
    assert result.exit_code == 0, result.output
    assert len(probes) == 1
    verdict = json.loads((out / "correct" / "two_plus_two.json").read_text())
    assert verdict["verdict"] == "accepted" and verdict["probes_skipped"] is False


def test_toolchain_bwrap_catalog_and_lock_errors_come_in_one_message(
        bench_copy: Path, outside: Path, bwrap: str, probes: list[tuple[str, ...]]) -> None:
    """No toolchain, a bwrap below the floor, a tampered catalog and a held --out: one run,
    one message naming all four, no probe, and a fresh --out is not even created."""
    bench = shutil.copytree(bench_copy, outside / "bench")
    challenge = bench / "workspaces" / "two_plus_two" / "Challenge.lean"
    challenge.write_text(challenge.read_text().replace("2 + 2 = 4", "True"))
    env = {"HOME": str(outside), "ELAN_HOME": str(outside / "elan"),
           "XDG_DATA_HOME": str(outside / "data"), "LEAN_EVAL_TOOLCHAIN": "",
           "LEAN_EVAL_ALLOW_BWRAP_VERSION": ""}
    fresh = outside / "fresh"
    result = _run_eval(bench, fresh, CORRECT, extra=("--bwrap", bwrap), env=env)
    assert result.exit_code == 2, result.output
    lines = [x for x in result.output.splitlines() if x.startswith("lean-eval: error:")]
    assert len(lines) == 1, result.output
    text = result.output[result.output.index("lean-eval: error:"):]
    assert "workspaces/two_plus_two/Challenge.lean" in text  # the catalog
    assert "leanprover/lean4:v4.35.0 is not installed" in text  # the toolchain
    assert "older than" in text or "0.12.0" in text  # bubblewrap below the floor
    assert "Traceback" not in result.output
    assert probes == [] and not fresh.exists()
    # The same with --out held by another run: the lock is named in the same message.
    held_out = outside / "held"
    held_out.mkdir()
    held = lock.OutLock(held_out.resolve())
    try:
        result = _run_eval(bench, held_out, CORRECT, extra=("--bwrap", bwrap), env=env)
    finally:
        held.close()
    assert result.exit_code == 2
    text = result.output[result.output.index("lean-eval: error:"):]
    assert "is in use by pid" in text and "Challenge.lean" in text and "v4.35.0" in text
    assert probes == []


@pytest.mark.slow
def test_a_rerun_whose_pairs_are_all_kept_runs_no_probe(
        bench_copy: Path, outside: Path, bwrap: str, probes: list[tuple[str, ...]]) -> None:
    out = outside / "out"
    first = _run_eval(bench_copy, out, CORRECT, INCORRECT, extra=_tools())
    assert first.exit_code == 0, first.output
    assert len(probes) == 1
    before = json.loads((out / "summary.json").read_text())
    assert before["counts"]["accepted"] == 5 and before["counts"]["rejected"] >= 1
    verdict_bytes = (out / "correct" / "two_plus_two.json").read_bytes()

    again = _run_eval(bench_copy, out, CORRECT, INCORRECT, extra=_tools())
    assert again.exit_code == 0, again.output
    assert len(probes) == 1  # no probe this time: nothing needed a sandbox
    summary = json.loads((out / "summary.json").read_text())
    pre = summary["preflight"]
    assert pre["skipped"] is False and pre["probes"] == []
    assert pre["reason"].startswith("nothing to score")
    assert summary["reused"] == len(summary["pairs"]) == len(before["pairs"])
    assert summary["counts"] == before["counts"]
    assert (out / "correct" / "two_plus_two.json").read_bytes() == verdict_bytes
    assert "note: probes not run: nothing to score" in again.output
    assert "warning:" not in again.output  # an ordinary resume warns of nothing
    kept_lines = [x for x in again.output.splitlines() if "(kept: an earlier run's verdict)" in x]
    assert len(kept_lines) == len(summary["pairs"])
    assert any(x.startswith("correct/two_plus_two  accepted") for x in kept_lines)
    assert f"{summary['reused']} pair(s) kept" in again.output
    # A first run prints no pair as kept.
    assert "(kept:" not in first.output

    # --rescore needs the sandbox again: the probes run and the correct proof is accepted.
    rescored = _run_eval(bench_copy, out, CORRECT, extra=_tools("--rescore"))
    assert rescored.exit_code == 0, rescored.output
    assert len(probes) == 2
    assert json.loads((out / "correct" / "two_plus_two.json").read_text())["verdict"] == \
        "accepted"


@pytest.mark.slow
def test_pairs_decided_at_intake_need_no_probe(
        bench_copy: Path, outside: Path, bwrap: str, probes: list[tuple[str, ...]]) -> None:
    """Starters only (``unchanged``) and a rejected entry (``invalid_submission``) are decided
    without a sandbox: no probe; adding a correct submission brings the probes back."""
    cat = catalog.load_catalog(bench_copy)
    starter = dict(cat.problems["two_plus_two"].starter)
    same = make_submission(outside / "subs", "same", {"two_plus_two": starter})
    bad = make_submission(outside / "subs", "bad", {"two_plus_two": {
        "Submission.lean": b"theorem x : True := trivial\n", "Submission/bad name.lean": b"x"}})
    out = outside / "out"
    result = _run_eval(bench_copy, out, same, bad, extra=_tools("--problem", "two_plus_two"))
    assert result.exit_code == 0, result.output
    assert probes == []
    summary = json.loads((out / "summary.json").read_text())
    assert summary["preflight"]["reason"].startswith("nothing to score")
    assert _verdicts(summary) == {"same": "unchanged", "bad": "invalid_submission"}

    out2 = outside / "out2"
    result = _run_eval(bench_copy, out2, same, bad, CORRECT,
                       extra=_tools("--problem", "two_plus_two"))
    assert result.exit_code == 0, result.output
    assert len(probes) == 1
    summary = json.loads((out2 / "summary.json").read_text())
    assert summary["preflight"]["reason"] is None and summary["preflight"]["probes"]
    assert _verdicts(summary) == {
        "same": "unchanged", "bad": "invalid_submission", "correct": "accepted"}


def _verdicts(summary: dict[str, Any]) -> dict[str, str]:
    """Each submission's verdict of its one pair, unchanged pairs (listed by id) included."""
    found = {p["submission"]: p["verdict"] for p in summary["pairs"]}
    found |= {s["id"]: "unchanged" for s in summary["submissions"] if s["unchanged"]}
    return found


def test_ctrl_c_during_the_probes_stops_them_at_once(
        bench_copy: Path, outside: Path, bwrap: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probes run outside the batch's signal handlers: SIGINT while they run ends the run
    (exit 130) instead of being recorded while the remaining probes go on."""
    # A process started in the background by a non-interactive shell inherits SIGINT ignored,
    # and Python then installs no handler of its own: give this test Python's usual one.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    handlers: list[object] = []
    went_on: list[bool] = []

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        handlers.append(signal.getsignal(signal.SIGINT))
        signal.raise_signal(signal.SIGINT)  # its handler runs before raise_signal returns
        went_on.append(True)  # reached only when a handler swallowed the signal
        raise AssertionError("the probes went on after SIGINT")

    monkeypatch.setattr(preflight, "run_probes", interrupted)
    out = outside / "out"
    try:
        result = _run_eval(bench_copy, out, CORRECT, extra=_tools("--problem", "two_plus_two"))
    finally:
        signal.signal(signal.SIGINT, previous)
    assert result.exit_code == 130, result.output
    assert handlers == [signal.default_int_handler]  # the caller's, not the batch's
    assert went_on == [] and "interrupted" in result.output
    assert not (out / "correct").exists()  # no pair scored
