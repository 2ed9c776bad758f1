"""No silent downgrade (issue 30 item 4), on this machine's kernel mechanism: a limit value the
controller refuses is an argument error naming its option before anything runs, and a pair
whose group cannot be made mid-run says it ran under the watchdog (a warning line, its
``limits.mechanism``, ``limits_best_effort`` in the summary) beside a correct pair that stays
``accepted``.

Negative controls (run by hand): with the code of before, ``--max-processes 99999999`` scored
the pair under the watchdog and exited 0 (pids.max refused the value for every pair), and the
pairs whose group could not be made ran under the watchdog with no warning and
``limits_best_effort: false``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from support import (
    BWRAP_FLOOR,
    PROBLEM,
    STANDIN,
    RunEval,
    correct,
    good,
    leftover_groups,
    make_submission,
    require_kernel,
    standin_only,
)

from lean_eval.cli import main
from lean_eval.supervise import cgroup


def test_a_value_the_controller_refuses_is_an_argument_error_naming_the_option(
        run_eval: RunEval, outside: Path) -> None:
    standin_only(run_eval, "any correct pair")
    require_kernel()
    subs = outside / "subs"
    good(subs)
    run = run_eval(subs / "good", extra=("--max-processes", "99999999"))
    assert run.code == 2, run.result.output
    assert "--max-processes 99999999: the kernel refuses it (pids.max" in run.result.output
    assert not (run.out / "good" / f"{PROBLEM}.json").exists()
    assert leftover_groups() == []  # the probe group is gone
    accepted = run_eval(subs / "good", extra=("--max-processes", "4096"), out=outside / "ok")
    assert accepted.code == 0, accepted.result.output


def test_a_pair_whose_group_cannot_be_made_says_it_ran_under_the_watchdog(
        run_eval: RunEval, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    standin_only(run_eval, "any correct pair")
    require_kernel()

    def unwritable(*args: object) -> cgroup.PairGroup:
        raise PermissionError(13, "Permission denied", "the parent group, unwritable mid-run")

    monkeypatch.setattr(cgroup, "make_pair_group", unwritable)
    subs = outside / "subs"
    good(subs)
    make_submission(subs, "also_good", {PROBLEM: {"Submission.lean": correct(PROBLEM)}})
    out = outside / "out"
    result = CliRunner().invoke(main, [  # without -q: warnings are shown
        "run-eval", str(subs / "good"), str(subs / "also_good"), "-j", "2", "--out", str(out),
        "--benchmark", str(run_eval.benchmark), "--toolchain", str(STANDIN), "--timeout", "60",
        "--skip-probes", "--allow-bwrap-version", BWRAP_FLOOR], catch_exceptions=False)
    output = result.output
    assert result.exit_code == 0, output
    for sub in ("good", "also_good"):
        found = json.loads((out / sub / f"{PROBLEM}.json").read_text())
        assert (found["verdict"], found["limits"]["mechanism"]) == ("accepted", "watchdog")
        assert (f"warning: {sub}/{PROBLEM}: limits are best-effort for this pair: its cgroup "
                "could not be made") in " ".join(output.split()), output
    assert "the parent group, unwritable mid-run" in output
    assert json.loads((out / "summary.json").read_text())["limits_best_effort"] is True
