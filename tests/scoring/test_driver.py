"""Pure parts of the driver: NanoDa forcing, strict config decoding and classification."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lean_eval.benchmark import problem
from lean_eval.errors import TrustedConfigError
from lean_eval.scoring import classification, driver
from lean_eval.supervise import process, resources

CONFIG = problem.ComparatorConfig(challenge_module="Challenge", solution_module="Solution",
                                  theorem_names=("t",), permitted_axioms=("propext",))
NANODA = Path("/tc/bin/nanoda_bin")
ACCEPT_OUT = "\n".join([
    "Resolving dependencies", "Building Challenge", "Exporting #[t] from Challenge",
    "Building Solution", "Exporting #[t] from Solution", "Running nanoda kernel on solution",
    "nanoda kernel accepts the solution", "Running Lean default kernel on solution",
    "Lean default kernel accepts the solution", "Your solution is okay!", "",
])


def outcome(stdout: str = "", stderr: str = "", returncode: int | None = 0,
            signal: int | None = None, timed_out: bool = False) -> process.ProcessResult:
    return process.ProcessResult(returncode=returncode, signal=signal, timed_out=timed_out,
                           duration=1.0, stdout=stdout.encode(), stderr=stderr.encode(),
                           stdout_truncated=False, stderr_truncated=False, orphans_killed=0)


kernel_argv = st.lists(st.text(min_size=1, max_size=10), min_size=1, max_size=3)


@given(enable=st.one_of(st.none(), st.booleans()),
       kernels=st.one_of(st.none(), st.dictionaries(st.sampled_from(["nanoda", "other", "x"]),
                                                      kernel_argv, max_size=3)))
def test_forced_config_always_names_the_bundled_nanoda(
        enable: bool | None, kernels: dict[str, list[str]] | None) -> None:
    raw: dict[str, object] = {"challenge_module": "C", "solution_module": "S",
                              "theorem_names": ["t"], "permitted_axioms": []}
    if enable is not None:
        raw["enable_nanoda"] = enable
    if kernels is not None:
        raw["external_kernels"] = kernels
    config = problem.parse_config(json.dumps(raw).encode(), "config.json")
    forced = driver.forced_config(config, NANODA)
    assert "enable_nanoda" not in forced
    assert forced["external_kernels"]["nanoda"] == [str(NANODA)]  # type: ignore[index]
    others = {k: v for k, v in (kernels or {}).items() if k != "nanoda"}
    assert {k: v for k, v in forced["external_kernels"].items()  # type: ignore[attr-defined]
            if k != "nanoda"} == others


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"challenge_module": "C", "challenge_module": "D"}', "duplicate key"),
        ('{"challenge_module": NaN}', "non-finite"),
        ('{"challenge_module": Infinity}', "non-finite"),
        ('{"challenge_module": 1, "solution_module": "S", "theorem_names": [], '
         '"permitted_axioms": []}', "challenge_module"),
        ('{"challenge_module": "C", "solution_module": "S", "theorem_names": "t", '
         '"permitted_axioms": []}', "theorem_names"),
        ('{"challenge_module": "C", "solution_module": "S", "theorem_names": [], '
         '"permitted_axioms": [], "surprise": 1}', "surprise"),
        ('{"challenge_module": "C", "solution_module": "S", "theorem_names": [], '
         '"permitted_axioms": [], "enable_nanoda": "yes"}', "enable_nanoda"),
    ],
)
def test_trusted_config_is_decoded_strictly(text: str, fragment: str) -> None:
    with pytest.raises(TrustedConfigError, match=fragment):
        problem.parse_config(text.encode(), "config.json")


def test_accepts_only_with_every_required_line() -> None:
    c = classification.classify(outcome(ACCEPT_OUT), CONFIG, 10)
    assert (c.verdict, c.execution, c.reason.code) == ("accepted", "completed", "accepted")
    assert [k.name for k in c.checkers] == ["nanoda", "Lean default"]


@pytest.mark.parametrize("drop", ["nanoda kernel accepts the solution",
                                  "Lean default kernel accepts the solution",
                                  "Your solution is okay!"])
def test_exit_zero_without_a_required_line_is_an_error(drop: str) -> None:
    c = classification.classify(outcome(ACCEPT_OUT.replace(drop + "\n", "")), CONFIG, 10)
    assert (c.verdict, c.reason.code) == ("error", "protocol_violation")


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("Challenge and solution theorem statement do not match: 't'", "statement_mismatch"),
        ("Challenge and solution constant kind don't match: 't'", "kind_mismatch"),
        ("Const not found in solution: 't'", "missing_constant"),
        ("Const does not match between challenge and target 'd'", "definition_mismatch"),
        ("Illegal axiom detected: 'sorryAx'", "illegal_axiom"),
        ("nanoda exited with 1", "kernel_rejected"),
        ("Lean default exited with 1", "kernel_rejected"),
        ("Child exited with 1", "build_failed"),
    ],
)
def test_rejection_reasons(message: str, code: str) -> None:
    stdout = ACCEPT_OUT.split("Exporting #[t] from Solution")[0]
    faked = "Your solution is okay!\nnanoda kernel accepts the solution\n"
    c = classification.classify(outcome(faked + stdout, f"error: {message}\n", 1), CONFIG, 10)
    assert (c.verdict, c.execution, c.reason.code, c.reason.message) == (
        "rejected", "completed", code, message)


def test_export_failure_is_told_apart() -> None:
    stdout = ACCEPT_OUT.split("Running nanoda")[0]
    c = classification.classify(outcome(stdout, "error: Child exited with 3\n", 1), CONFIG, 10)
    assert c.reason.code == "export_failed" and c.last_phase == "export_solution"


def test_submission_printing_error_lines_does_not_choose_the_reason() -> None:
    stderr = "error: Illegal axiom detected: 'fake'\nerror: Child exited with 1\n"
    c = classification.classify(outcome("Building Challenge\nBuilding Solution\n", stderr, 1),
                                CONFIG, 10)
    assert c.reason.code == "build_failed"


def test_sandbox_failure_is_never_a_rejection() -> None:
    stderr = ("bwrap: Can't mount proc on /newroot/proc: Operation not permitted\n"
              "error: Child exited with 1\n")
    c = classification.classify(outcome("Resolving dependencies\n", stderr, 1), CONFIG, 10)
    assert (c.verdict, c.execution) == ("error", "sandbox_error")


def test_timeout_and_signals() -> None:
    c = classification.classify(outcome("Building Solution\n", returncode=None, signal=9,
                                timed_out=True), CONFIG, 7)
    assert (c.verdict, c.execution, c.reason.code) == ("error", "timed_out", "timeout")
    assert "build_solution" in c.reason.message
    c = classification.classify(outcome(returncode=None, signal=11), CONFIG, 7)
    assert (c.verdict, c.execution) == ("error", "crashed")
    c = classification.classify(outcome(returncode=None, signal=24), CONFIG, 7)
    assert c.execution == "resource_exhausted"


def test_exit_two_is_setup_and_missing_sandbox_is_sandbox_error() -> None:
    c = classification.classify(outcome(stderr="error: `nanoda` kernel `x` was not found\n",
                                returncode=2), CONFIG, 7)
    assert (c.verdict, c.reason.code) == ("error", "setup")
    c = classification.classify(outcome(stderr="error: no bwrap. There is no unsandboxed mode\n",
                                returncode=2), CONFIG, 7)
    assert (c.verdict, c.execution) == ("error", "sandbox_error")


def test_challenge_side_failure_is_not_the_submissions_fault() -> None:
    c = classification.classify(outcome("Resolving dependencies\nBuilding Challenge\n",
                                "error: Child exited with 1\n", 1), CONFIG, 7)
    assert (c.verdict, c.reason.code) == ("error", "challenge_failed")


def test_phase_seconds_come_from_line_arrival_times() -> None:
    marks = ((0.1, b"Resolving dependencies"), (0.5, b"Building Challenge"),
             (0.7, b"noise"), (2.0, b"Building Solution"),
             (3.5, b"Running nanoda kernel on solution"))
    done = outcome()._replace(duration=4.0, line_marks=marks)
    assert classification.phase_seconds(done, CONFIG) == {
        "resolve": 0.4, "build_challenge": 1.5, "build_solution": 1.5, "kernel:nanoda": 0.5}


def test_printed_earlier_phase_lines_cannot_blame_the_trusted_side() -> None:
    stdout = ("Resolving dependencies\nBuilding Challenge\nBuilding Solution\n"
              "Resolving dependencies\n")
    c = classification.classify(outcome(stdout, "error: Child exited with 1\n", 1), CONFIG, 10)
    assert (c.verdict, c.reason.code, c.last_phase) == ("rejected", "build_failed",
                                                        "build_solution")


# --- infrastructure failures are never rejections (exit 128+n, signals, SIGXFSZ, OOM) ---------

KERNELS_RAN = ACCEPT_OUT.split("Your solution is okay!")[0].replace(
    "nanoda kernel accepts", "nanoda kernel rejected")
BUILD_RAN = ACCEPT_OUT.split("Exporting #[t] from Solution")[0]


@pytest.mark.parametrize(
    ("stdout", "final", "execution", "signal_name"),
    [
        (KERNELS_RAN, "nanoda exited with 137", "resource_exhausted", "SIGKILL"),
        (KERNELS_RAN, "Lean default exited with 139", "crashed", "SIGSEGV"),
        (BUILD_RAN, "Child exited with 137", "resource_exhausted", "SIGKILL"),
        (BUILD_RAN, "Child exited with 153", "resource_exhausted", "SIGXFSZ"),
        (BUILD_RAN, "Child exited with 134", "crashed", "SIGABRT"),
    ],
)
def test_a_child_killed_by_a_signal_is_never_rejected(
        stdout: str, final: str, execution: str, signal_name: str) -> None:
    c = classification.classify(outcome(stdout, f"error: {final}\n", 1), CONFIG, 10)
    assert c.verdict == "error" and c.verdict != "rejected"
    assert c.execution == execution
    assert signal_name in c.reason.message and final in c.reason.message
    # negative control: the same line with an ordinary exit status is a rejection, which is what
    # the old rule (any non-zero kernel or child exit after the build began) said for both
    honest = classification.classify(outcome(stdout, f"error: {final.rsplit(' ', 1)[0]} 1\n", 1),
                             CONFIG, 10)
    assert honest.verdict == "rejected"


def test_a_build_step_killed_inside_lake_build_is_not_a_rejection() -> None:
    """Lake's own line is generic; the build's line below it says the compiler died (OOM)."""
    stderr = ("error: Solution: lean exited with code -9\nerror: build failed\n"
              "error: Child exited with 1\n")
    c = classification.classify(outcome(BUILD_RAN, stderr, 1), CONFIG, 10)
    assert (c.verdict, c.execution) == ("error", "resource_exhausted")
    assert "SIGKILL" in c.reason.message


@pytest.mark.parametrize(("sig", "execution"), [(signal.SIGXFSZ, "resource_exhausted"),
                                                 (signal.SIGXCPU, "resource_exhausted"),
                                                 (signal.SIGKILL, "resource_exhausted"),
                                                 (signal.SIGSEGV, "crashed")])
def test_lake_killed_by_a_signal_is_never_rejected(sig: int, execution: str) -> None:
    c = classification.classify(
        outcome(BUILD_RAN, "error: Child exited with 1\n", None, signal=sig), CONFIG, 10)
    assert (c.verdict, c.execution) == ("error", execution)
    assert signal.Signals(sig).name in c.reason.message


@pytest.mark.parametrize(("code", "execution"), [(153, "resource_exhausted"), (137,
                                                  "resource_exhausted"), (139, "crashed")])
def test_lake_exiting_with_128_plus_n_names_the_signal(code: int, execution: str) -> None:
    c = classification.classify(outcome(BUILD_RAN, "", code), CONFIG, 10)
    assert (c.verdict, c.execution) == ("error", execution)
    assert signal.Signals(code - 128).name in c.reason.message


def test_a_pair_over_its_resource_limit_is_resource_exhausted() -> None:
    done = outcome(BUILD_RAN, "error: Child exited with 1\n", 1)._replace(
        limit_exceeded="memory")
    c = classification.classify(done, CONFIG, 10)
    assert (c.verdict, c.execution, c.reason.code) == ("error", "resource_exhausted",
                                                       "resource_limit")
    assert "memory" in c.reason.message


def test_the_message_is_the_first_error_line_that_says_what_is_wrong() -> None:
    stderr = ("error: Solution.lean: unknown module 'Submission.Helpers'\nerror: build failed\n"
              "error: Child exited with 1\n")
    c = classification.classify(outcome(BUILD_RAN, stderr, 1), CONFIG, 10)
    assert (c.verdict, c.reason.code) == ("rejected", "build_failed")
    assert c.reason.message == "Solution.lean: unknown module 'Submission.Helpers'"
    # a compiler diagnostic on stdout serves when stderr only has generic lines
    c = classification.classify(
        outcome(BUILD_RAN + "Solution.lean:3:0: error: unknown identifier 'x'\n",
                "error: Child exited with 1\n", 1), CONFIG, 10)
    assert c.reason.message == "Solution.lean:3:0: error: unknown identifier 'x'"
    # nothing better: the generic line stays
    c = classification.classify(outcome(BUILD_RAN, "error: Child exited with 1\n", 1), CONFIG, 10)
    assert c.reason.message == "Child exited with 1"


def test_the_comparators_own_judgement_stays_the_message() -> None:
    stderr = "error: something printed by the build\nerror: Illegal axiom detected: 'sorryAx'\n"
    c = classification.classify(outcome(BUILD_RAN + "Exporting #[t] from Solution\n", stderr, 1),
                        CONFIG, 10)
    assert (c.reason.code, c.reason.message) == ("illegal_axiom",
                                                 "Illegal axiom detected: 'sorryAx'")


def test_last_phase_follows_lakes_kernel_order() -> None:
    two = problem.ComparatorConfig(challenge_module="Challenge", solution_module="Solution",
                                   theorem_names=("t",), permitted_axioms=(),
                                   external_kernels={"aaa": ("/k",)})
    stdout = (BUILD_RAN + "Exporting #[t] from Solution\n"
              "Running aaa kernel on solution\naaa kernel accepts the solution\n"
              "Running nanoda kernel on solution\nnanoda kernel rejected the solution\n"
              "Running Lean default kernel on solution\n")
    c = classification.classify(outcome(stdout, "error: nanoda exited with 1\n", 1), two, 10)
    assert c.last_phase == "kernel:Lean default"
    assert classification.kernel_order(two) == ("aaa", "nanoda", "Lean default")
    # printed by the build before Lake's real lines: a kernel Lake does not run is no phase
    c = classification.classify(outcome(BUILD_RAN + "Running evil kernel on solution\n",
                                "error: Child exited with 1\n", 1), CONFIG, 10)
    assert c.last_phase == "build_solution"


def test_every_run_records_its_limits_and_mechanism() -> None:
    limits = resources.PairLimits(1 << 30, 64, "auto")
    ran = outcome()._replace(limits_mechanism="watchdog", limit_exceeded="processes")
    assert driver.limits_record(limits, None, ran).model_dump(exclude_defaults=True) == {
        "memory_bytes": 1 << 30, "max_processes": 64, "mechanism": "watchdog",
        "exceeded": "processes"}
    disk = resources.PairLimits(1 << 30, 64, "auto", 1 << 20, 10, ("/w",))
    assert driver.limits_record(disk, 5 << 20, ran).model_dump(
        include={"disk_bytes", "disk_files", "disk_mechanism", "disk_reserve_bytes"}) == {
        "disk_bytes": 1 << 20, "disk_files": 10, "disk_mechanism": "watchdog",
        "disk_reserve_bytes": 5 << 20}
    unlimited = resources.PairLimits(None, None)
    assert driver.limits_record(unlimited, None, outcome()).mechanism == "none"
    defaults = driver.DriverSettings._field_defaults["limits"]
    assert (defaults.memory_limit, defaults.max_processes) == (8 << 30, 512)


def test_a_forged_exit_line_cannot_override_the_comparators_judgement() -> None:
    stderr = "error: helper exited with 137\nerror: Illegal axiom detected: 'sorryAx'\n"
    c = classification.classify(outcome(BUILD_RAN + "Exporting #[t] from Solution\n", stderr, 1),
                        CONFIG, 10)
    assert (c.verdict, c.reason.code) == ("rejected", "illegal_axiom")
    stderr = "error: helper exited with 137\nerror: nanoda exited with 1\n"
    c = classification.classify(outcome(KERNELS_RAN, stderr, 1), CONFIG, 10)
    assert (c.verdict, c.reason.code) == ("rejected", "kernel_rejected")
