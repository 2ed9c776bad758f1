"""Issue 23: the memory a build hides from ``/proc`` and the capabilities a root harness left it,
tried as an attacker would, each in a batch with a correct pair at ``-j 2`` (design §5.5
Limits; SECURITY.md). Every memory case runs under the kernel mechanism this machine offers
(cgroup v1 or v2; under CI a writable v1 ``memory``/``pids`` makes it mandatory) and under
the watchdog, and the tmpfs and memfd cases also with the harness as uid 65534.

Negative controls (run by hand, see the issue's report): with the old watchdog (five tmpfs
names, no memfd or SysV count) every watchdog case ends ``accepted``; with the wrapper's
``NO_CAPABILITIES`` emptied the mount case fills its own tmpfs."""

from __future__ import annotations

import json
import os
import signal
import subprocess  # noqa: TID251 - the unprivileged harness is a real child process
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from support import (
    BWRAP_FLOOR,
    STANDIN,
    UNPRIVILEGED,
    RunEval,
    correct,
    good,
    harness_pid,
    in_background,
    leftover_groups,
    make_submission,
    no_survivor,
    own_parents,
    require_kernel,
    run_eval_argv,
    sh_payload,
    sleeper,
    standin_only,
    unique_marker,
    unprivileged_python,
    with_lines,
)

from lean_eval.cli import main
from lean_eval.supervise import cgroup

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

P = "two_plus_two"
FILL = 384  # MiB each attack stores, three times the limit
LIMIT = "128M"
SYSV = ("import ctypes, time; libc = ctypes.CDLL(None, use_errno=True); "
        "libc.shmat.restype = ctypes.c_void_p; "
        "[libc.shmdt(ctypes.c_void_p(ctypes.memset(libc.shmat(libc.shmget(0, 4 << 20, 0o1600), "
        "None, 0), 1, 4 << 20))) for _ in range(96)]; time.sleep(30)")
MEMFD = ("import os, time; fd = os.memfd_create(\"m\"); "
         f"[os.write(fd, bytes(1 << 20)) for _ in range({FILL})]; time.sleep(30)")


def attack(kind: str, outside: Path, marker: str) -> str:
    """The build's shell command for ``kind`` (its argv carries ``marker``)."""
    fill = f"dd if=/dev/zero bs=1M count={FILL} 2>/dev/null of="
    commands = {
        "tmpfs_home": f"{fill}/home/fill",
        "tmpfs_root": f"{fill}/root/fill",
        "tmpfs_mask": f"{fill}{outside}/fill",  # the wrapper's mask over --out's parent
        "memfd": f"python3 -c '{MEMFD}'",
        "sysv": f"python3 -c '{SYSV}'",
    }
    return f"{commands[kind]}; sleep {marker}"


def _batch(outside: Path, kind: str, marker: str) -> Path:
    subs = outside / "subs"
    make_submission(subs, "good", {P: {"Submission.lean": correct(P)}})
    make_submission(subs, "hostile", {P: {"Submission.lean": with_lines(P, sh_payload(
        attack(kind, outside, marker)))}})
    return subs


def _judge(out: Path, output: str, mechanism: str) -> None:
    """The hostile pair over its memory limit under ``mechanism``, the correct one accepted."""
    assert "Traceback" not in output, output
    assert (out / "summary.json").is_file(), output
    good = json.loads((out / "good" / f"{P}.json").read_text())
    hostile = json.loads((out / "hostile" / f"{P}.json").read_text())
    log = (out / "hostile" / f"{P}.log").read_text(errors="replace")
    assert good["verdict"] == "accepted", (out / "good" / f"{P}.log").read_text()
    assert good["limits"]["mechanism"] == mechanism
    assert (hostile["verdict"], hostile["execution"]) == ("error", "resource_exhausted"), (
        hostile["reason"], log)
    assert hostile["limits"]["exceeded"] == "memory", log
    assert hostile["limits"]["mechanism"] == mechanism


MEMORY_CASES = ["tmpfs_home", "tmpfs_root", "tmpfs_mask", "memfd", "sysv"]


@pytest.mark.parametrize("mechanism", ["kernel", "watchdog"])
@pytest.mark.parametrize("kind", MEMORY_CASES)
def test_hidden_memory_ends_resource_exhausted_beside_an_accepted_pair(
        run_eval: RunEval, outside: Path, monkeypatch: pytest.MonkeyPatch, kind: str,
        mechanism: str) -> None:
    standin_only(run_eval, "the payloads are -- standin-io: lines")
    if mechanism == "kernel":
        expected = require_kernel()
    else:
        if kind == "sysv" and os.geteuid() != 0:
            pytest.skip("an unprivileged watchdog cannot read another IPC namespace")
        monkeypatch.setattr(cgroup, "cgroup_parent", lambda: None)
        expected = "watchdog"
    marker = unique_marker()
    subs = _batch(outside, kind, marker)
    run = run_eval(subs / "good", subs / "hostile", extra=("-j", "2", "--memory-limit", LIMIT))
    _judge(run.out, run.result.output, expected)
    assert run.summary()["limits_best_effort"] is (expected == "watchdog")
    assert run.code == 1  # an infrastructure failure, never a rejection
    no_survivor(outside)
    assert leftover_groups() == []


@pytest.mark.parametrize("kind", ["tmpfs_home", "tmpfs_root", "tmpfs_mask", "memfd"])
def test_hidden_memory_under_an_unprivileged_harness(
        bench_copy: Path, outside: Path, bwrap: str, kind: str) -> None:
    """The same attacks with the harness as uid 65534: no cgroup is writable, so the watchdog
    enforces (SysV is left out: its segments are counted by a root harness only)."""
    del bwrap
    setup = unprivileged_python(outside)
    if isinstance(setup, str):
        pytest.skip(setup)
    prefix, env = setup
    marker = unique_marker()
    subs = _batch(outside, kind, marker)
    out, work = outside / "out", outside / "work"
    if os.geteuid() == 0:
        for path in (outside, *outside.rglob("*")):
            os.chown(path, UNPRIVILEGED, UNPRIVILEGED, follow_symlinks=False)
    argv = ["-m", "lean_eval", "run-eval", str(subs / "good"), str(subs / "hostile"),
            "--out", str(out), "--work-dir", str(work), "--benchmark", str(bench_copy),
            "--toolchain", str(STANDIN), "--timeout", "60", "-q", "--skip-probes", "-j", "2",
            "--memory-limit", LIMIT, "--allow-bwrap-version", BWRAP_FLOOR]
    done = subprocess.run([*prefix, *argv], capture_output=True, text=True, env=env,
                          cwd=outside, timeout=240, check=False)
    _judge(out, done.stdout + done.stderr, "watchdog")
    assert json.loads((out / "summary.json").read_text())["limits_best_effort"] is True
    no_survivor(outside)


def test_a_root_harness_leaves_the_build_no_capability_to_mount_its_own_tmpfs(
        run_eval: RunEval, outside: Path) -> None:
    """``unshare -m`` and a tmpfs of the build's own, filled: refused in the sandbox (the
    wrapper's ``--cap-drop ALL``), so nothing is filled and the correct pair is accepted.
    Negative control: without NO_CAPABILITIES the log says FILLED (or, under the kernel
    mechanism, the pair ends resource_exhausted)."""
    standin_only(run_eval, "the payloads are -- standin-io: lines")
    marker = unique_marker()
    subs = outside / "subs"
    make_submission(subs, "good", {P: {"Submission.lean": correct(P)}})
    inner = (f"mount -t tmpfs none /mnt && dd if=/dev/zero of=/mnt/fill bs=1M count={FILL} "
             f"2>/dev/null && echo FILLED")
    command = (f"grep CapEff /proc/self/status; unshare -m sh -c '{inner}' 2>&1; "
               f"echo UNSHARE-DONE; sleep 0.{marker.split('.')[1]}")
    make_submission(subs, "hostile", {P: {"Submission.lean": with_lines(P, sh_payload(command))}})
    run = run_eval(subs / "good", subs / "hostile", extra=("-j", "2", "--memory-limit", LIMIT))
    output = run.result.output
    assert "Traceback" not in output, output
    assert (run.out / "summary.json").is_file(), output
    assert run.verdict("good", P)["verdict"] == "accepted", run.log("good", P)
    log = run.log("hostile", P)
    assert "UNSHARE-DONE" in log, log  # the payload ran
    assert "CapEff:\t0000000000000000" in log, log
    assert "Operation not permitted" in log and "FILLED" not in log, log
    no_survivor(outside)
    assert leftover_groups() == []


def test_groups_a_killed_harness_left_are_reclaimed_by_the_next_run(
        run_eval: RunEval, outside: Path) -> None:
    """A harness SIGKILLed while a pair runs leaves its parent group; the next harness removes
    it before making its own, and a live harness's group is never touched (issue 23 item 1)."""
    standin_only(run_eval, "a sleeping build")
    require_kernel()
    owns = [p for p in own_parents() if p.is_dir()]
    subs = outside / "subs"
    sleeper(subs, "slow", 60)
    good(subs)
    first = outside / "out1"
    thread, outcomes = in_background(
        run_eval_argv(run_eval, [subs / "slow"], first, outside / "work1"), timeout=120)
    try:
        deadline = time.monotonic() + 90
        pid = None
        while pid is None or not _pairs_of(owns, pid):
            assert thread.is_alive(), outcomes
            assert time.monotonic() < deadline, "the first run made no pair group"
            time.sleep(0.05)
            pid = harness_pid(str(first))
        os.kill(pid, signal.SIGKILL)
    finally:
        thread.join()
    left = [p.parent for p in _pairs_of(owns, pid)] or _parents_of(owns, pid)
    assert left, "the killed harness left no group: nothing to reclaim"
    second = outside / "out2"
    thread, outcomes = in_background(
        run_eval_argv(run_eval, [subs / "good"], second, outside / "work2"), timeout=120)
    thread.join()
    assert outcomes and outcomes[0].returncode == 0, outcomes
    assert json.loads((second / "good" / f"{P}.json").read_text())["verdict"] == "accepted"
    assert [p for p in left if p.exists()] == []
    assert cgroup.cgroup_parent() is not None  # this live harness's group stays
    assert all(p.is_dir() for p in cgroup.cgroup_parent().paths)  # type: ignore[union-attr]
    assert leftover_groups() == []
    no_survivor(outside)


def _parents_of(owns: list[Path], pid: int) -> list[Path]:
    return [p for own in owns for p in own.glob(f"lean-eval-*-{pid}-*")]


def _pairs_of(owns: list[Path], pid: int | None) -> list[Path]:
    return [] if pid is None else [q for p in _parents_of(owns, pid) for q in p.glob("pair-*")]


@pytest.mark.parametrize("mechanism", ["kernel", "watchdog"])
def test_a_run_enforced_by_the_watchdog_says_its_limits_are_best_effort(
        run_eval: RunEval, outside: Path, monkeypatch: pytest.MonkeyPatch,
        mechanism: str) -> None:
    """Issue 23 item 2: a console warning and ``summary.limits_best_effort`` where only the
    watchdog enforces; neither where the kernel does."""
    standin_only(run_eval, "any correct pair")
    if mechanism == "kernel":
        require_kernel()
    else:
        monkeypatch.setattr(cgroup, "cgroup_parent", lambda: None)
    subs = outside / "subs"
    good(subs)
    out = outside / "out"
    result = CliRunner().invoke(main, [
        "run-eval", str(subs / "good"), "--out", str(out), "--benchmark",
        str(run_eval.benchmark), "--toolchain", str(STANDIN), "--timeout", "60",
        "--skip-probes", "--allow-bwrap-version", BWRAP_FLOOR], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    best_effort = mechanism == "watchdog"
    assert ("limits are best-effort" in result.output) is best_effort, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["limits_best_effort"] is best_effort
