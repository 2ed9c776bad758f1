"""replay's pure parts: --paranoid's comparator argv and acceptance rule, the checker line, the
status comparison and the rendering of a replay report. The replays of real recorded runs
(real bubblewrap, stand-in toolchain) are in tests/e2e/test_replay.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support import (
    make_verdict,
)

from lean_eval.benchmark.toolchain import Toolchain
from lean_eval.errors import UsageError
from lean_eval.outputs import replay, replay_report
from lean_eval.records.replay import Drift, ReplayPair, ReplayReport
from lean_eval.records.verdict import Checker, Verdict
from lean_eval.scoring import classification, driver
from lean_eval.supervise import process

PROBLEMS = "two_plus_two,double_def"
SORRY = "namespace Submission\ntheorem two_plus_two : 2 + 2 = 4 := by sorry\nend Submission\n"
GIT_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}


# --- the pure parts ------------------------------------------------------------------------------


def _toolchain() -> Toolchain:
    return Toolchain(name="t", root=Path("/tc"), lake=Path("/tc/bin/lake"),
                     nanoda=Path("/tc/bin/nanoda_bin"))


def test_comparator_argv_adds_paranoid_only_when_asked() -> None:
    config = Path("/state/comparator.json")
    assert driver.comparator_argv(_toolchain(), config) == (
        "/tc/bin/lake", "comparator", "--config", "/state/comparator.json")
    assert driver.comparator_argv(_toolchain(), config, paranoid=True) == (
        "/tc/bin/lake", "comparator", "--config", "/state/comparator.json", "--paranoid")
    assert driver.DriverSettings(toolchain=_toolchain(), bwrap=Path("/b"), caller_env={},
                                 timeout=1.0, writable_roots=()).paranoid is False


def _outcome(stdout: str, returncode: int = 0, stderr: str = "") -> process.ProcessResult:
    return process.ProcessResult(returncode=returncode, signal=None, timed_out=False, duration=1.0,
                           stdout=stdout.encode(), stderr=stderr.encode(),
                           stdout_truncated=False, stderr_truncated=False, orphans_killed=0)


def _kernels(*names: str, rejected: str = "") -> list[str]:
    return [line for k in names for line in (
        f"Running {k} kernel on solution",
        f"{k} kernel {'rejected' if k == rejected else 'accepts'} the solution")]


PARANOID_ORDER = (*classification.PARANOID_KERNELS, "Lean default")
HEAD = ["Resolving dependencies", "Building Challenge", "Exporting #[t] from Challenge",
        "Building Solution", "Exporting #[t] from Solution"]


def test_paranoid_acceptance_needs_every_bundled_checker() -> None:
    from lean_eval.benchmark import problem

    config = problem.ComparatorConfig(challenge_module="Challenge", solution_module="Solution",
                                      theorem_names=("t",), permitted_axioms=())
    full = "\n".join([*HEAD, *_kernels(*PARANOID_ORDER), classification.OKAY_LINE])
    got = classification.classify(_outcome(full), config, 10, paranoid=True)
    assert (got.verdict, got.last_phase) == ("accepted", "kernel:Lean default")
    assert [c.name for c in got.checkers] == list(PARANOID_ORDER)
    short = "\n".join([*HEAD, *_kernels("nanoda", "Lean default"), classification.OKAY_LINE])
    assert classification.classify(_outcome(short), config, 10).verdict == "accepted"
    missing = classification.classify(_outcome(short), config, 10, paranoid=True)
    assert (missing.verdict, missing.reason.code) == ("error", "protocol_violation")
    assert "con-ron" in missing.reason.message
    rejected = "\n".join([*HEAD, *_kernels(*PARANOID_ORDER, rejected="con-leche")])
    got = classification.classify(
        _outcome(rejected, 1, "error: con-leche exited with 1\n"), config, 10, paranoid=True)
    assert (got.verdict, got.reason.code) == ("rejected", "kernel_rejected")
    assert Checker(name="con-leche", result="rejected") in got.checkers


@pytest.mark.parametrize("result", ["accepted", "rejected", "started"])
def test_checker_line_is_the_line_the_driver_parses(result: str) -> None:
    checker = Checker.model_validate({"name": "con-leche", "result": result})
    assert classification.classify(_outcome(classification.checker_line(checker), 1),
                                   driver_config(), 10).checkers == (checker,)


def driver_config() -> Any:
    from lean_eval.benchmark import problem

    return problem.ComparatorConfig(challenge_module="C", solution_module="S",
                                    theorem_names=("t",), permitted_axioms=())


def _verdict(outcome: str, code: str, checkers: tuple[Checker, ...] = ()) -> Verdict:
    return make_verdict("alice", "two_plus_two", outcome, code=code, message="m",
                        checkers=checkers)


def test_compare_statuses() -> None:
    accepted = _verdict("accepted", "accepted")
    con_leche = (Checker(name="nanoda", result="accepted"),
                 Checker(name="con-leche", result="rejected"))
    rejected = _verdict("rejected", "kernel_rejected", con_leche)
    assert replay.compare(accepted, accepted, paranoid=False) == ("reproduced", ())
    assert replay.compare(accepted, None, paranoid=True) == ("not_scored", ())
    assert replay.compare(accepted, rejected, paranoid=False) == ("changed", ())
    assert replay.compare(accepted, rejected, paranoid=True) == (
        "kernel_disagreement", ("con-leche kernel rejected the solution",))
    # only a recorded acceptance can be disagreed with; anything else that moved is a change
    assert replay.compare(_verdict("rejected", "illegal_axiom"), rejected, True)[0] == "changed"
    assert replay.compare(accepted, _verdict("error", "timeout"), True)[0] == "changed"


def _report(submission: str, n: int = 1) -> ReplayReport:
    checkers = (Checker(name="nanoda", result="accepted"),
                Checker(name="con-leche", result="rejected"))
    recorded = replay.judgement(_verdict("accepted", "accepted"))
    new = replay.judgement(_verdict("rejected", "kernel_rejected", checkers))
    pairs = tuple(ReplayPair(
        submission=submission, problem=f"p{i}", status="kernel_disagreement", recorded=recorded,
        new=new, disagreement=("con-leche kernel rejected the solution",)) for i in range(n))
    return ReplayReport(
        record="/r", out=None, started_at="s", finished_at="f", paranoid=True, allow_drift=True,
        drift=(Drift(pin="submission_digest", subject=submission, recorded="a", current="b"),),
        counts={"kernel_disagreement": n}, pairs=pairs, exit_code=1)


def test_replay_rendering_keeps_hostile_names_literal_and_fits_the_step_summary() -> None:
    hostile = "[bold red]x[/]\x1b[2J|*"
    text = replay_report.render(_report(hostile), "table", width=200)
    assert "[bold red]x[/]\\x1b[2J|*" in text and "\x1b" not in text
    assert "kernel_disagreement [bold red]x[/]\\x1b[2J|*/p0:" in text
    assert "    con-leche kernel rejected the solution" in text
    assert "drift submission_digest of [bold red]x[/]" in text
    markdown = replay_report.render(_report(hostile), "markdown")
    assert "\\[bold red\\]x\\[/\\]\\\\x1b\\[2J\\|\\*" in markdown
    cut = replay_report.render_markdown(_report("s", n=2000), budget=20_000)
    assert len(cut.encode()) < 20_000 and "more pair(s) not shown" in cut
    assert "more disagreement(s) not shown" in cut
    with pytest.raises(UsageError, match="junit is not available"):
        replay_report.render(_report("s"), "junit")
