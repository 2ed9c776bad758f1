"""lean_eval.supervise.capture end to end: a valid proof printing 400 MB of short lines is
accepted, its log capped (real bubblewrap, the stand-in toolchain)."""

from __future__ import annotations

from pathlib import Path

from support import RunEval, correct, make_submission, sh_payload, standin_only, with_lines

P = "two_plus_two"


def test_a_valid_proof_printing_400_mb_of_short_lines_is_accepted_with_its_log_capped(
        run_eval: RunEval, outside: Path) -> None:
    """Issue 7 item 7 end to end: the flood crosses Lake, bwrap and the capture within the
    deadline, and the proof decides the verdict, not the shape of its output."""
    standin_only(run_eval, "the flood is a -- standin-io: line")
    subs = outside / "subs"
    make_submission(subs, "good", {P: {"Submission.lean": correct(P)}})
    make_submission(subs, "flood", {P: {"Submission.lean": with_lines(
        P, sh_payload("yes | head -c 400000000"))}})
    run = run_eval(subs / "good", subs / "flood", timeout=60)
    assert "Traceback" not in run.result.output, run.result.output
    assert (run.out / "summary.json").is_file()
    assert run.verdict("good", P)["verdict"] == "accepted"
    v = run.verdict("flood", P)
    assert (v["verdict"], v["execution"]) == ("accepted", "completed"), v["reason"]
    log = run.out / v["log"]["path"]  # relative to --out
    assert log.stat().st_size < 2 << 20
    assert "bytes omitted ..." in log.read_text(encoding="utf-8")
    assert {"build_solution", "kernel:nanoda"} <= set(v["timings"]["phases"])
