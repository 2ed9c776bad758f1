"""Console escaping end to end: one run-eval (real bubblewrap, the stand-in toolchain) shows
that hostile names reach the console as text, not markup. The report formats themselves are
tested on outputs built from the models in tests/outputs/test_report.py.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from support import (
    BWRAP_FLOOR,
    correct,
    make_submission,
)

from lean_eval.cli import main


def test_run_eval_prints_hostile_names_without_markup_errors(run_eval, outside: Path) -> None:
    good = make_submission(outside / "in", "good", {"two_plus_two": {
        "Submission.lean": correct("two_plus_two")}})
    # two problem directories for one problem: the rejection names both locations
    dup = make_submission(outside / "in", "dup", {
        "two_plus_two": {"Submission.lean": correct("two_plus_two")},
        "a[/x]/two_plus_two": {"Submission.lean": correct("two_plus_two")}})
    stray = make_submission(outside / "in", "stray", {"[bold red]oops": {
        "Submission.lean": "-- [blink]x\n"}})
    out = outside / "out"
    # not through run_eval(): that passes -q, and this test is about what gets printed
    args = ["run-eval", str(good), str(dup), str(stray), "--out", str(out), "--benchmark",
            str(run_eval.benchmark), "--toolchain", str(run_eval.toolchain), "--skip-probes",
            "--allow-bwrap-version", BWRAP_FLOOR, "--timeout", "600"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    output = result.output
    print(output)
    assert "Traceback" not in output and "MarkupError" not in output, output
    assert (out / "summary.json").is_file(), output
    assert json.loads((out / "good" / "two_plus_two.json").read_text())["verdict"] == "accepted"
    flat = "".join(output.replace("│", "").split())
    assert "a[/x]" in flat, output  # the rejection names the nested location as typed
    assert "[boldred]oops" in flat, output  # the no-problem hint names the directory as typed
