"""run-eval --jobs: pairs run at once, never see each other, and the summary keeps input order."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import (
    PROBLEM,
    RunEval,
    make_submission,
    sh_payload,
    survivors,
    with_lines,
)

from lean_eval.records.verdict import Mounts
from lean_eval.sandbox import identity, masks


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

    monkeypatch.setattr(masks, "run_masks", no_masks)
    # As the harness: a root harness's sandbox identity cannot list the run directories to
    # find the other pair (0711), a second layer this control is not about.
    monkeypatch.setattr(identity, "resolve", lambda *_, **__: identity.as_harness())
    assert _leaks(run_eval, outside) != []
