"""What a newcomer met in round 5 (issue 32 item 3), end to end: the CLI on the stand-in, as
another user, offline, interrupted. Each test here failed on the code before its fix."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess  # noqa: TID251 - the checkout must be a real git repository
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from support import (
    BWRAP_FLOOR,
    CORRECT,
    PROBLEM,
    REPO,
    STANDIN,
    RunEval,
    copy_benchmark,
    harness_pid,
    in_background,
    make_submission,
    run_eval_argv,
    sh_payload,
    unprivileged_python,
    with_lines,
)

from lean_eval.cli import main
from lean_eval.scoring import batch
from lean_eval.supervise import process


def _not_a_crash(output: str) -> None:
    assert "this is a bug in lean-eval" not in output and "crash" not in output, output


# --- an unusable --work-dir: a setup error naming it, found before planning --------------------


def test_a_work_dir_that_cannot_be_made_is_a_setup_error_found_before_planning(
        run_eval: RunEval, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def planned(*args: object, **kwargs: object) -> object:
        raise AssertionError("the run was planned before --work-dir was checked")

    monkeypatch.setattr(batch, "plan_batch", planned)
    blocker = outside / "a-file"
    blocker.write_text("not a directory\n")
    for work in (blocker / "work", blocker / "deeper" / "work"):
        said = f"--work-dir {work} cannot be created: {blocker} is not a directory"
        run = run_eval(CORRECT, extra=("--work-dir", str(work)))
        assert run.code == 2, run.result.output
        assert said in run.result.output
        _not_a_crash(run.result.output)
        assert not run.out.exists()  # nothing planned, --out not even made


def test_a_work_dir_this_user_cannot_write_is_a_setup_error(
        run_eval: RunEval, outside: Path) -> None:
    """As uid 65534, a root-owned --work-dir: exit 2 naming it (it was exit 3 and a crash file
    once the probes or the first pair tried to write there)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run the harness as another user")
    prefix = unprivileged_python(outside)
    if isinstance(prefix, str):
        pytest.skip(prefix)
    argv, env = prefix
    work = outside / "root-owned"
    work.mkdir(mode=0o755)
    out = outside / "out-unprivileged"
    outside.chmod(0o777)  # uid 65534 may make --out here, not inside root-owned
    bench = run_eval.benchmark
    for probes in ((), ("--skip-probes",)):
        done = process.run_capture(
            (*argv, "-m", "lean_eval", "run-eval", str(CORRECT), "--out", str(out),
             "--benchmark", str(bench), "--toolchain", str(STANDIN), "--allow-bwrap-version",
             BWRAP_FLOOR, "--work-dir", str(work), "-q", *probes),
            env=env, cwd=outside, timeout=120)
        text = done.stderr.decode(errors="replace")
        assert done.returncode == 2, text
        assert f"--work-dir {work} is not writable by this user (uid 65534)" in text
        _not_a_crash(text)


# --- a checkout git refuses for its owner -------------------------------------------------------


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(("git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args),
                   cwd=cwd, check=True, capture_output=True,
                   env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1"})


def test_a_checkout_owned_by_another_user_says_git_refused_it_and_how_to_fix_it(
        run_eval: RunEval, outside: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give the checkout to another user")
    checkout = outside / "theirs"
    checkout.mkdir()
    copy_benchmark(checkout)
    _git(checkout, "init", "-q")
    _git(checkout, "add", "-A")
    _git(checkout, "commit", "-q", "-m", "benchmark")
    own = RunEval(checkout, outside / "own")(CORRECT, extra=("--problem", PROBLEM))
    assert own.code == 0, own.result.output  # control: the checkout itself scores
    for path in (checkout, *checkout.rglob("*")):
        os.chown(path, 65534, 65534, follow_symlinks=False)
    run = RunEval(checkout, outside / "theirs-out")(CORRECT, extra=("--problem", PROBLEM))
    assert run.code == 2, run.result.output
    text = " ".join(run.result.output.split())
    assert "not found" not in text
    assert (f"git refuses to read the benchmark checkout {checkout}: it is owned by uid 65534, "
            "not by the user running lean-eval (uid 0; git's 'dubious ownership' check, "
            "safe.directory)") in text
    assert f"chown -R 0 {checkout}" in text


# --- prepare and run-eval agree -----------------------------------------------------------------


def test_prepare_names_the_tool_options_run_eval_needs_and_with_them_run_eval_scores(
        bench_copy: Path, outside: Path, bwrap: str) -> None:
    home = outside / "home"  # no elan, no prepared bubblewrap: only what the options name
    home.mkdir()
    env = {"HOME": str(home), "XDG_DATA_HOME": str(home / "data"), "PATH": "/usr/bin:/bin"}
    tools = ("--toolchain", str(STANDIN), "--allow-bwrap-version", BWRAP_FLOOR)
    prepared = CliRunner().invoke(main, ["prepare", "--benchmark", str(bench_copy), *tools],
                                  env=env, catch_exceptions=False)
    assert prepared.exit_code == 0, prepared.output
    assert "lean          present  --toolchain" in prepared.output
    assert (f"run-eval, test and replay do not remember these options: give them "
            f"`--toolchain {STANDIN} --allow-bwrap-version {BWRAP_FLOOR}` too") in prepared.output
    doc = json.loads(CliRunner().invoke(main, ["prepare", "--benchmark", str(bench_copy),
                                               *tools, "--json"], env=env,
                                        catch_exceptions=False).stdout)
    assert doc["ok"] and doc["run_with"] == list(tools)
    # without them run-eval does not find what prepare did not install, and says why
    bare = CliRunner().invoke(main, ["run-eval", str(CORRECT), "--out", str(outside / "o1"),
                                     "--benchmark", str(bench_copy), "--problem", PROBLEM,
                                     "--skip-probes", "--allow-bwrap-version", BWRAP_FLOOR],
                              env=env, catch_exceptions=False)
    assert bare.exit_code == 2
    assert ("`lean-eval prepare --toolchain DIR` installs no release, so pass that same "
            "--toolchain DIR here too") in " ".join(bare.output.split())
    # with exactly what prepare printed, run-eval scores
    scored = CliRunner().invoke(main, ["run-eval", str(CORRECT), "--out", str(outside / "o2"),
                                       "--benchmark", str(bench_copy), "--problem", PROBLEM,
                                       "--skip-probes", "-q", *doc["run_with"]],
                                env=env, catch_exceptions=False)
    assert scored.exit_code == 0, scored.output
    # what run-eval reads from the environment itself is not repeated
    from_env = CliRunner().invoke(main, ["prepare", "--benchmark", str(bench_copy), "--json"],
                                  env={**env, "LEAN_EVAL_TOOLCHAIN": str(STANDIN),
                                       "LEAN_EVAL_ALLOW_BWRAP_VERSION": BWRAP_FLOOR},
                                  catch_exceptions=False)
    assert json.loads(from_env.stdout)["run_with"] == []


# --- the offline newcomer is told of the stand-in, which runs only when named -----------------


def test_an_offline_newcomer_is_told_of_the_standin_which_is_used_only_when_named(
        bench_copy: Path, outside: Path, bwrap: str, monkeypatch: pytest.MonkeyPatch) -> None:
    home = outside / "home"
    home.mkdir()
    empty = outside / "offline"
    empty.mkdir()
    env = {"HOME": str(home), "XDG_DATA_HOME": str(home / "data"), "PATH": "/usr/bin:/bin"}
    standin = "--toolchain " + os.path.relpath(STANDIN)
    prepared = CliRunner().invoke(main, ["prepare", "--benchmark", str(REPO), "--offline",
                                         str(empty)], env=env, catch_exceptions=False)
    assert prepared.exit_code == 2
    text = " ".join(prepared.output.split())
    assert ("lean MISSING leanprover/lean4:v4.35.0 is not installed and --offline does not cover "
            "it: the Lean release comes only through elan's network") in text
    assert "without network pass --toolchain DIR" in text
    assert f"this checkout ships a stand-in toolchain: {standin}" in text
    # run-eval says the same where it fails, and scores nothing with the stand-in unasked
    out = outside / "out"
    run = CliRunner().invoke(main, ["run-eval", str(CORRECT), "--out", str(out),
                                    "--benchmark", str(REPO), "--allow-bwrap-version",
                                    BWRAP_FLOOR, "--skip-probes"], env=env,
                             catch_exceptions=False)
    assert run.exit_code == 2
    assert f"this checkout ships a stand-in toolchain: {standin}" in " ".join(run.output.split())
    assert not out.exists()
    # a benchmark that is no checkout of this project ships none, and none is named
    elsewhere = CliRunner().invoke(main, ["run-eval", str(CORRECT), "--out", str(out),
                                          "--benchmark", str(bench_copy), "--allow-bwrap-version",
                                          BWRAP_FLOOR, "--skip-probes"], env=env,
                                   catch_exceptions=False)
    assert elsewhere.exit_code == 2 and "stand-in" not in elsewhere.output
    # and so does `test`, the submitter's next step, run inside the checkout
    if (REPO / ".git").exists():
        workspace = outside / "ws"
        shutil.copytree(bench_copy / "workspaces" / PROBLEM, workspace)
        monkeypatch.chdir(REPO)
        tested = CliRunner().invoke(main, ["test", str(workspace), "--allow-bwrap-version",
                                           BWRAP_FLOOR], env=env, catch_exceptions=False)
        assert tested.exit_code == 2
        assert "this checkout ships a stand-in toolchain: --toolchain tests/standin/toolchain" \
            in " ".join(tested.output.split())


# --- SIGINT mid-batch -----------------------------------------------------------------------------


@pytest.mark.slow
def test_sigint_mid_batch_leaves_no_log_without_its_verdict_and_says_why_once(
        run_eval: RunEval, outside: Path) -> None:
    subs = [make_submission(outside / "subs", f"s{i}", {PROBLEM: {"Submission.lean": with_lines(
        PROBLEM, sh_payload("touch .lake/started"), sh_payload("sleep 120"))}}) for i in range(4)]
    out, work = outside / "out", outside / "work"
    thread, outcomes = in_background(run_eval_argv(run_eval, subs, out, work, "--jobs", "2"),
                                     timeout=240, grace=60)
    deadline = time.monotonic() + 120
    # both running pairs are inside their build (.lake: what the sandbox lets a build write)
    while len(list(work.glob("**/.lake/started"))) < 2:
        assert thread.is_alive(), outcomes
        assert time.monotonic() < deadline, "the pairs did not start"
        time.sleep(0.1)
    pid = harness_pid(str(out))
    assert pid is not None
    os.kill(pid, signal.SIGINT)
    thread.join(180)
    assert outcomes and outcomes[0].returncode == 130, outcomes
    logs = {p.with_suffix("") for p in out.glob("*/*.log")}
    verdicts = {p.with_suffix("") for p in out.glob("*/*.json")}
    assert logs <= verdicts, f"logs without a verdict: {sorted(logs - verdicts)}"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] and summary["not_scored"] == 4 - len(verdicts)
    shown = CliRunner().invoke(main, ["report", str(out)], catch_exceptions=False).output
    assert shown.count("interrupted or stopped") == 1, shown  # said once, under the table
    assert shown.count("no verdict") == summary["not_scored"] + 1
    shutil.rmtree(work, ignore_errors=True)
