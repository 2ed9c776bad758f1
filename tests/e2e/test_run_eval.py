"""run-eval end to end through the CLI: stand-in toolchain, real bubblewrap (design §5, §7)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from support import (
    CORRECT,
    PROBLEMS,
    REPO,
    STANDIN,
    RunEval,
    correct,
    make_submission,
    sh_payload,
    standin_only,
    with_lines,
)

INCORRECT = REPO / "examples" / "submissions" / "incorrect"


def test_every_starter_problem_is_accepted_with_a_correct_proof(run_eval: RunEval) -> None:
    run = run_eval(CORRECT)
    assert run.code == 0, run.result.output
    for problem in PROBLEMS:
        v = run.verdict("correct", problem)
        assert (v["verdict"], v["execution"], v["reason"]["code"]) == (
            "accepted", "completed", "accepted"), (problem, run.log("correct", problem))
        assert [c["name"] for c in v["checkers"]] == ["nanoda", "Lean default"]
        assert all(c["result"] == "accepted" for c in v["checkers"])
        assert v["schema_version"] == 2 and v["problem"]["statement_revision"] == 1
        assert "Challenge.lean" in v["trusted_files"] and "Submission.lean" in v["submission_files"]
        assert {"resolve", "build_solution", "kernel:nanoda"} <= set(v["timings"]["phases"])
    summary = run.summary()
    assert summary["counts"] == {"accepted": len(PROBLEMS), "rejected": 0,
                                 "invalid_submission": 0, "unchanged": 0, "error": 0}
    assert summary["exit_code"] == 0


def test_examples_score_as_documented(run_eval: RunEval) -> None:
    run = run_eval(INCORRECT)
    assert run.code == 0
    assert run.verdict("incorrect", "two_plus_two")["reason"]["code"] == "illegal_axiom"
    # Real Lean: the trusted bridge restates the statement, so a changed one fails its build.
    expected = "build_failed" if run_eval.is_lean else "statement_mismatch"
    assert run.verdict("incorrect", "add_comm_explicit")["reason"]["code"] == expected


SORRY = "theorem two_plus_two : 2 + 2 = 4 := by sorry"
REJECTIONS = {
    "statement_mismatch": ("two_plus_two", "theorem two_plus_two : 2 + 2 = 5 := by decide",
                           "Challenge and solution theorem statement do not match: "
                           "'two_plus_two'"),
    "kind_mismatch": ("two_plus_two", "def two_plus_two : 2 + 2 = 4 := by decide",
                      "Challenge and solution constant kind don't match: 'two_plus_two'"),
    "sorry": ("two_plus_two", SORRY, "Illegal axiom detected: 'sorryAx'"),
    "native_decide": ("two_plus_two", "theorem two_plus_two : 2 + 2 = 4 := by native_decide",
                      "Illegal axiom detected: 'Lean.ofReduceBool'"),
    "user_axiom": ("two_plus_two", "axiom cheat : 2 + 2 = 4\n"
                   "theorem two_plus_two : 2 + 2 = 4 := cheat",
                   "Illegal axiom detected: 'Submission.cheat'"),
    "definition_mismatch": ("double_def", "def double (n : Int) : Int := n + n\n"
                            "theorem double_eq (n : Nat) : double n = n + n := rfl",
                            "Const does not match between challenge and target 'double'"),
    "build_error": ("two_plus_two", "theorem two_plus_two : 2 + 2 = 4 := by decide\n"
                    "-- standin: build-error\nexample : True := by exact bogus_name",
                    "Submission.lean:1:0: error: build failed (-- standin: build-error)"),
    "nanoda_rejects": ("two_plus_two", "theorem two_plus_two : 2 + 2 = 4 := by decide\n"
                       "-- standin: kernel-reject nanoda", "nanoda exited with 1"),
    "lean_default_rejects": ("two_plus_two", "theorem two_plus_two : 2 + 2 = 4 := by decide\n"
                             "-- standin: kernel-reject Lean default",
                             "Lean default exited with 1"),
}
# On real Lean the bridge in Solution.lean is what the comparator judges: a changed statement or
# a definition of another type fails the bridge's build, a `def` proof of a theorem passes, and
# no valid proof makes a kernel reject.
LEAN_CODES = {"statement_mismatch": "build_failed", "definition_mismatch": "build_failed",
              "kind_mismatch": None, "nanoda_rejects": None, "lean_default_rejects": None}
CODES = {"sorry": "illegal_axiom", "native_decide": "illegal_axiom", "user_axiom": "illegal_axiom",
         "build_error": "build_failed", "nanoda_rejects": "kernel_rejected",
         "lean_default_rejects": "kernel_rejected"}


def test_each_rejection_has_its_reason(run_eval: RunEval, outside: Path) -> None:
    subs = []
    for name, (problem, body, _) in REJECTIONS.items():
        text = f"namespace Submission\n{body}\nend Submission\n"
        subs.append(make_submission(outside / "subs", name, {problem: {"Submission.lean": text}}))
    run = run_eval(*subs)
    assert run.code == 0, run.result.output
    for name, (problem, _, message) in REJECTIONS.items():
        v = run.verdict(name, problem)
        code = CODES.get(name, name)
        if run_eval.is_lean:
            code = LEAN_CODES.get(name, code)
            if code is None:
                continue
        assert v["verdict"] == "rejected", (name, v["reason"], run.log(name, problem))
        assert v["execution"] == "completed"
        assert v["reason"]["code"] == code
        if not run_eval.is_lean:
            assert v["reason"]["message"] == message
    if run_eval.is_lean:
        return
    nanoda = run.verdict("nanoda_rejects", "two_plus_two")["checkers"]
    assert {c["name"]: c["result"] for c in nanoda} == {"nanoda": "rejected",
                                                         "Lean default": "accepted"}


def test_printed_acceptance_lines_do_not_make_a_failing_build_pass(
        run_eval: RunEval, outside: Path) -> None:
    lines = ("nanoda kernel accepts the solution", "Lean default kernel accepts the solution",
             "Your solution is okay!")
    io = "\n".join(f"-- standin-io: echo '{line}'" for line in lines)
    real_lean = "\n".join(f'#eval IO.println "{line}"' for line in lines)
    text = f"namespace Submission\n{real_lean}\n{io}\n{SORRY}\nend Submission\n"
    sub = make_submission(outside / "subs", "liar", {"two_plus_two": {"Submission.lean": text}})
    run = run_eval(sub)
    v = run.verdict("liar", "two_plus_two")
    assert (v["verdict"], v["reason"]["code"]) == ("rejected", "illegal_axiom")
    assert "Your solution is okay!" in run.log("liar", "two_plus_two")


def _fake_toolchain(base: Path, lake_body: str) -> Path:
    root = base / "fake-toolchain"
    (root / "bin").mkdir(parents=True)
    for tool in ("lake", "nanoda_bin"):
        path = root / "bin" / tool
        path.write_text("#!/bin/sh\n" + (lake_body if tool == "lake" else "exit 0\n"))
        path.chmod(0o755)
    return root


def test_exit_zero_without_kernel_lines_is_an_error_never_accepted(
        run_eval: RunEval, outside: Path) -> None:
    standin_only(run_eval, "uses its own fake toolchain")
    toolchain = _fake_toolchain(outside, "echo 'Your solution is okay!'\nexit 0\n")
    sub = make_submission(outside / "subs", "s", {"two_plus_two": {
        "Submission.lean": correct("two_plus_two")}})
    run = run_eval(sub, toolchain=toolchain)
    v = run.verdict("s", "two_plus_two")
    assert (v["verdict"], v["reason"]["code"]) == ("error", "protocol_violation")
    assert run.code == 1


def test_unchanged_starter_is_skipped(run_eval: RunEval, outside: Path, bench_copy: Path) -> None:
    starter = (bench_copy / "workspaces" / "two_plus_two" / "Submission.lean").read_text()
    sub = make_submission(outside / "subs", "lazy", {
        "two_plus_two": {"Submission.lean": starter},
        "add_comm_explicit": {"Submission.lean": correct("add_comm_explicit")}})
    run = run_eval(sub)
    assert run.verdict("lazy", "two_plus_two")["verdict"] == "unchanged"
    assert run.verdict("lazy", "add_comm_explicit")["verdict"] == "accepted"


def test_problem_filter_and_json_summary(run_eval: RunEval) -> None:
    run = run_eval(CORRECT, extra=("--problem", "two_plus_two,double_def", "--json"))
    assert run.code == 0
    assert sorted(p["problem"] for p in run.summary()["pairs"]) == ["double_def", "two_plus_two"]
    assert run.summary()["schema_version"] == 3  # summary schema 3 (not_reused)
    assert json.loads(run.result.stdout)["summary_schema_version"] == 3


def test_sandbox_that_cannot_start_is_sandbox_error(run_eval: RunEval, outside: Path) -> None:
    broken = outside / "bwrap"
    broken.write_text(
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'bubblewrap 0.8.0'; exit 0; }\n"
        "echo \"bwrap: Can't mount proc on /newroot/proc: Operation not permitted\" >&2\n"
        "exit 1\n")
    broken.chmod(0o755)
    run = run_eval(CORRECT, extra=("--bwrap", str(broken), "--problem", "two_plus_two"))
    v = run.verdict("correct", "two_plus_two")
    assert (v["verdict"], v["execution"], v["reason"]["code"]) == (
        "error", "sandbox_error", "sandbox")
    assert run.code == 1


def _process_with(marker: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if marker.encode() in (proc / "cmdline").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


@pytest.mark.slow
def test_build_that_never_ends_times_out_and_leaves_nothing_running(
        run_eval: RunEval, outside: Path) -> None:
    marker = f"heartbeat-{outside.name}"
    text = with_lines("two_plus_two",
                      sh_payload(f"setsid sh -c 'while :; do echo {marker} >> .lake/hb;"
                                 " sleep 0.1; done' >/dev/null 2>&1 &"),
                      sh_payload("sleep 1000"))
    sub = make_submission(outside / "subs", "slow", {"two_plus_two": {"Submission.lean": text}})
    deadline = 120 if run_eval.is_lean else 10  # time to reach the Solution build when loaded
    started = time.monotonic()
    run = run_eval(sub, timeout=deadline)
    elapsed = time.monotonic() - started
    v = run.verdict("slow", "two_plus_two")
    assert (v["verdict"], v["execution"], v["reason"]["code"]) == ("error", "timed_out", "timeout")
    assert v["last_phase"] == "build_solution"
    assert elapsed < deadline + 60, elapsed  # ended by its deadline, not by `sleep 1000`
    assert _process_with(marker) == []
    assert run.code == 1


def test_two_inputs_with_one_id_is_a_setup_failure(run_eval: RunEval, outside: Path) -> None:
    a = make_submission(outside / "a", "same", {"two_plus_two": {"Submission.lean": "x"}})
    b = make_submission(outside / "b", "same", {"two_plus_two": {"Submission.lean": "y"}})
    run = run_eval(a, b)
    assert run.code == 2
    assert "same id 'same'" in run.result.output
    assert not run.out.exists()


def test_missing_toolchain_is_a_setup_failure(run_eval: RunEval, outside: Path) -> None:
    run = run_eval(CORRECT, toolchain=None, env={"HOME": str(outside), "ELAN_HOME": str(outside),
                                                 "LEAN_EVAL_TOOLCHAIN": ""})
    assert run.code == 2
    assert "leanprover/lean4:v4.35.0 is not installed" in run.result.output
    assert "elan toolchain install" in run.result.output and "--toolchain" in run.result.output
    assert not run.out.exists()


def test_toolchain_without_nanoda_is_a_setup_failure(run_eval: RunEval, outside: Path) -> None:
    copy = outside / "tc"
    shutil.copytree(STANDIN, copy)
    (copy / "bin" / "nanoda_bin").unlink()
    run = run_eval(CORRECT, toolchain=copy)
    assert run.code == 2 and "nanoda_bin" in run.result.output
    assert not run.out.exists()


def test_no_bwrap_is_a_setup_failure(run_eval: RunEval, outside: Path) -> None:
    empty = outside / "emptybin"
    empty.mkdir()
    run = run_eval(CORRECT, env={"PATH": str(empty), "LEAN_EVAL_BWRAP": ""})
    assert run.code == 2 and "bwrap" in run.result.output
    assert not run.out.exists()


def test_a_lake_that_cannot_start_stops_the_run_with_a_clear_error(
        run_eval: RunEval, outside: Path) -> None:
    standin_only(run_eval, "uses its own broken toolchain")
    toolchain = _fake_toolchain(outside, "")
    (toolchain / "bin" / "lake").write_text("#!/nonexistent/interpreter\n")
    run = run_eval(CORRECT, toolchain=toolchain, extra=("--problem", "two_plus_two"))
    assert run.code == 1
    # One pair's harness fault is that pair's `error` verdict (the batch goes on), exit 1.
    reason = run.verdict("correct", "two_plus_two")["reason"]["message"]
    assert "cannot start" in reason and "lake" in reason
    assert "Traceback" not in run.result.output
