"""run-eval verifies the sandbox before it unpacks any submission (issue: preflight)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from support import BWRAP_FLOOR, CORRECT, STANDIN

from lean_eval.cli import main
from lean_eval.intake import reader
from lean_eval.probes import preflight
from lean_eval.records.out_layout import REFUSED_SUMMARY
from lean_eval.records.probe_result import ProbeResult
from lean_eval.supervise import lock

UNSANDBOXED = """#!/bin/sh
# A 'bwrap' that sandboxes nothing: drops every option up to -- and runs the command.
[ "$1" = --version ] && { echo 'bubblewrap 0.12.0'; exit 0; }
while [ "$#" -gt 0 ] && [ "$1" != -- ]; do shift; done
shift
exec "$@"
"""


def _run(bench_copy: Path, outside: Path, *extra: str) -> tuple[int, str, Path]:
    out = outside / "out"
    result = CliRunner().invoke(main, [
        "run-eval", str(CORRECT), "--out", str(out), "--benchmark", str(bench_copy),
        "--toolchain", str(STANDIN), "--problem", "two_plus_two", "--work-dir",
        str(outside / "work"), "--timeout", "60", *extra], catch_exceptions=False)
    return result.exit_code, result.output, out


@pytest.mark.slow
def test_probes_pass_and_are_recorded(bench_copy: Path, outside: Path, bwrap: str) -> None:
    code, output, out = _run(bench_copy, outside, "--allow-bwrap-version", BWRAP_FLOOR)
    assert code == 0, output
    summary = json.loads((out / "summary.json").read_text())
    pre = summary["preflight"]
    assert pre["skipped"] is False
    assert {p["name"] for p in pre["probes"]} == {
        "sandbox_engaged", "env_dump", "tool_path", "artifact_tamper", "comparator"}
    assert all(p["status"] == "pass" for p in pre["probes"])
    assert pre["bwrap_path"] == summary["identity"]["bwrap_path"]
    assert pre["toolchain_path"] == str(STANDIN.resolve())
    verdict = json.loads((out / "correct" / "two_plus_two.json").read_text())
    assert verdict["probes_skipped"] is False and verdict["verdict"] == "accepted"


def test_skip_probes_is_recorded_in_every_verdict(bench_copy: Path, outside: Path,
                                                  bwrap: str) -> None:
    code, output, out = _run(bench_copy, outside, "--allow-bwrap-version", BWRAP_FLOOR,
                             "--skip-probes")
    assert code == 0, output
    assert "--skip-probes" in output
    assert json.loads((out / "summary.json").read_text())["preflight"]["skipped"] is True
    verdict = json.loads((out / "correct" / "two_plus_two.json").read_text())
    assert verdict["probes_skipped"] is True


@pytest.mark.slow
def test_a_broken_sandbox_stops_the_run_before_any_pair_is_scored(
        bench_copy: Path, outside: Path, bwrap: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch is planned first (intake in memory, no sandbox: it decides whether any pair
    needs the probes), then the probes run, and a failed probe stops the run before any pair
    of the batch is scored or its submission read again."""
    fake = outside / "fakebin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text(UNSANDBOXED)
    fake.chmod(0o755)
    read: list[Path] = []
    real = reader.read_submission
    monkeypatch.setattr(reader, "read_submission",
                        lambda path, *a, **k: read.append(path) or real(path, *a, **k))
    code, output, out = _run(bench_copy, outside, "--bwrap", str(fake))
    assert code == 2, output
    assert "preflight probe(s) did not pass" in output and "sandbox_engaged" in output
    assert "nothing was scored" in output
    # Planned once, before the probes (which score their own synthetic submissions); no pair of
    # the batch was scored (no verdict below) and its submission was not read again.
    assert read[0] == CORRECT.absolute() and read.count(CORRECT.absolute()) == 1, read
    assert len(read) > 1
    # The refusal is recorded in --out: the probes' outcome, zero pairs, the reason.
    assert f"the probes' outcome is in {out / 'summary.json'}" in output
    assert sorted(p.name for p in out.iterdir()) == [".lean-eval.lock", "summary.json"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["exit_code"] == 2 and summary["pairs"] == [] and summary["submissions"] == []
    assert summary["preflight"]["skipped"] is False
    statuses = {p["name"]: p["status"] for p in summary["preflight"]["probes"]}
    assert statuses["sandbox_engaged"] != "pass"
    assert "sandbox_engaged" in summary["refused"] and "nothing was scored" in summary["refused"]
    assert summary["identity"]["bwrap_path"] == str(fake)


def _failing_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every probe reports fail at once (the probe runner run-eval and the API share replaced;
    nothing runs)."""
    entry = ProbeResult(name="sandbox_engaged", status="fail", proves="the sandbox",
                        message="writes reached the host", seconds=0.0, checks=())
    monkeypatch.setattr(preflight, "run_probes", lambda *a, **k: (entry,))


def test_a_refusal_keeps_an_earlier_runs_summary_and_respects_the_out_lock(
        bench_copy: Path, outside: Path, bwrap: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reused --out keeps the summary of the verdicts on disk; a held --out gets nothing."""
    code, output, out = _run(bench_copy, outside, "--allow-bwrap-version", BWRAP_FLOOR,
                             "--skip-probes")
    assert code == 0, output
    earlier = (out / "summary.json").read_bytes()
    _failing_probes(monkeypatch)
    code, output, _ = _run(bench_copy, outside, "--allow-bwrap-version", BWRAP_FLOOR)
    assert code == 2, output
    assert (out / "summary.json").read_bytes() == earlier
    refused = json.loads((out / REFUSED_SUMMARY).read_text())
    assert refused["pairs"] == [] and "sandbox_engaged" in refused["refused"]
    assert f"the probes' outcome is in {out / REFUSED_SUMMARY}" in output
    monkeypatch.undo()  # a run that scores again supersedes the refusal
    code, output, _ = _run(bench_copy, outside, "--allow-bwrap-version", BWRAP_FLOOR,
                           "--skip-probes")
    assert code == 0, output
    assert not (out / REFUSED_SUMMARY).exists()

    _failing_probes(monkeypatch)

    other = outside / "held"
    other.mkdir()
    held = lock.OutLock(other.resolve())
    try:
        result = CliRunner().invoke(main, [
            "run-eval", str(CORRECT), "--out", str(other), "--benchmark", str(bench_copy),
            "--toolchain", str(STANDIN), "--allow-bwrap-version", BWRAP_FLOOR],
            catch_exceptions=False)
    finally:
        held.close()
    assert result.exit_code == 2
    # Refused before the probes (tests/e2e/test_check_order.py counts them), so nothing is written.
    assert "is in use by" in result.output and "probe" not in result.output
    assert sorted(p.name for p in other.iterdir()) == [".lean-eval.lock"]
