"""Issue 30 item 2: the four disk attacks of round 5, each in a batch with a correct pair at
``-j 2``, under a filesystem of each pair's own (a root harness, ``supervise.pair_fs``) and under
the watchdog (forced here; as uid 65534 below). Each ends ``resource_exhausted`` (``disk_bytes``)
while the correct pair stays ``accepted``, and no pair filesystem is left mounted.

Negative controls (run by hand, see the branch's report): against the code before issue 30 the
deep-path, hold-full, in-flight and pulse builds each end ``accepted``."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess  # noqa: TID251 - mounting a small work filesystem needs mount(8)
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import (
    BWRAP_FLOOR,
    STANDIN,
    UNPRIVILEGED,
    RunEval,
    correct,
    harness_pid,
    in_background,
    make_submission,
    no_survivor,
    run_eval_argv,
    sh_payload,
    sleeper,
    standin_only,
    unprivileged_python,
    with_lines,
)

from lean_eval.supervise import pair_fs

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

P = "two_plus_two"


def _python(code: str) -> str:
    encoded = base64.b64encode(code.encode()).decode()
    return f"python3 -c \"import base64; exec(base64.b64decode('{encoded}'))\""


# Each build writes files of 8 MiB or less (RLIMIT_FSIZE is the budget: only a budget over
# all of them stops it), keeps going past a full filesystem and then holds what it made.
_DEEP = ("import os, time\nos.chdir('.lake')\n"
         "for i in range(20):\n"  # 20 levels of 250 characters: the path passes PATH_MAX
         "    name = '%02d' % i + 'd' * 248\n"
         "    os.mkdir(name)\n"
         "    os.chdir(name)\n")
DEEP_PATH = _python(
    _DEEP + "for i in range(6):\n"
    "    try:\n"
    "        with open(f'fill{i}', 'wb') as f:\n"
    "            f.write(b'\\1' * (8 << 20))\n"
    "    except OSError:\n"
    "        break\n"
    "print('DEEP', flush=True)\ntime.sleep(30)\n")
HOLD_FULL = _python(
    _DEEP + "i = 0\n"
    "while True:\n"  # until the filesystem it writes to is full
    "    try:\n"
    "        with open(f'fill{i}', 'wb') as f:\n"
    "            for _ in range(4):\n"
    "                f.write(b'\\1' * (1 << 20))\n"
    "    except OSError:\n"
    "        break\n"
    "    i += 1\n"
    "print('FULL', i, flush=True)\ntime.sleep(30)\n")
IN_FLIGHT = _python(
    "import array, os, socket, time\nos.chdir('.lake')\n"
    "a, b = socket.socketpair()\n"
    "for i in range(6):\n"  # each file's one descriptor is sent to b and never received
    "    try:\n"
    "        with open(f'held{i}', 'wb') as f:\n"
    "            f.write(b'\\1' * (8 << 20))\n"
    "            f.flush()\n"
    "            a.sendmsg([b'x'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,\n"
    "                                array.array('i', [f.fileno()]))])\n"
    "        os.unlink(f'held{i}')\n"
    "    except OSError:\n"
    "        break\n"
    "print('IN-FLIGHT', flush=True)\ntime.sleep(30)\n")
PULSE = _python(
    "import os, random, time\nos.chdir('.lake')\n"
    "end = time.monotonic() + 12\n"
    "while time.monotonic() < end:\n"
    "    made = []\n"
    "    for i in range(256):\n"  # all free space, in posix_fallocate'd 4 MiB files
    "        try:\n"
    "            fd = os.open(f'p{i}', os.O_CREAT | os.O_WRONLY, 0o600)\n"
    "            made.append(f'p{i}')\n"
    "            os.posix_fallocate(fd, 0, 4 << 20)\n"
    "            os.close(fd)\n"
    "        except OSError:\n"
    "            break\n"
    "    time.sleep(random.uniform(0.05, 0.4))\n"
    "    for name in made:\n"
    "        os.unlink(name)\n"
    "    time.sleep(random.uniform(0.02, 0.15))\n"
    "print('PULSED', flush=True)\n")

# attack: (payload, size of the work filesystem in MiB, extra options by mechanism)
ATTACKS: dict[str, tuple[str, int, dict[str, tuple[str, ...]]]] = {
    "deep_path": (DEEP_PATH, 96, {}),
    # Within its budget under the watchdog, as the build was; on a filesystem of its
    # own a filled filesystem is the pair's budget, so the budget is small there.
    "hold_full": (HOLD_FULL, 64, {"watchdog": ("--disk-limit", "1G")}),
    "in_flight": (IN_FLIGHT, 96, {}),
    "pulse": (PULSE, 128, {}),
}


def _mount_tmpfs(point: Path, mib: int) -> None:
    """A tmpfs of ``mib`` MiB at ``point`` (root only: the tests that need one say why not)."""
    point.mkdir()
    # private, as the harness's own pair filesystems are (supervise.pair_fs.mount)
    done = subprocess.run(("mount", "--make-private", "-t", "tmpfs", "-o",
                           f"size={mib}m,mode=0755", "tmpfs", str(point)),
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(f"under CI the disk attack tests must run: {done.stderr.strip()}")
        pytest.skip(f"mount -t tmpfs failed: {done.stderr.strip()}")


@pytest.fixture
def mounted(outside: Path) -> Iterator[list[Path]]:
    """Directories the test mounts a tmpfs on; unmounted afterwards whatever happened."""
    if os.geteuid() != 0:
        pytest.skip("a small work filesystem needs a root test run")
    points: list[Path] = []
    try:
        yield points
    finally:
        for point in reversed(points):
            subprocess.run(("umount", "-l", str(point)), check=False)


def _mechanism(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if kind == "filesystem":
        why = pair_fs.unavailable_reason()
        if why is not None:
            if os.environ.get("CI") and os.geteuid() == 0:
                pytest.fail(f"a root harness must give each pair a filesystem here: {why}")
            pytest.skip(why)
    else:
        monkeypatch.setattr(pair_fs, "unavailable_reason", lambda: "forced by the test")


def _left_mounted(below: Path) -> list[str]:
    return [p for p in pair_fs.own_mounts() if p.startswith(str(below))]


def _subs(outside: Path, payload: str) -> tuple[Path, Path]:
    subs = outside / "subs"
    good = make_submission(subs, "good", {P: {"Submission.lean": correct(P)}})
    hostile = make_submission(subs, "hostile", {P: {"Submission.lean": with_lines(
        P, sh_payload(payload))}})
    return good, hostile


def _judge(out: Path, output: str, mechanism: str) -> dict[str, Any]:
    """The hostile pair over its disk budget, the correct one accepted, both under
    ``mechanism``."""
    assert "Traceback" not in output, output
    assert (out / "summary.json").is_file(), output
    good = json.loads((out / "good" / f"{P}.json").read_text())
    hostile = json.loads((out / "hostile" / f"{P}.json").read_text())
    log = (out / "hostile" / f"{P}.log").read_text(errors="replace")
    assert good["verdict"] == "accepted", (good["reason"], (out / "good" / f"{P}.log").read_text())
    assert good["limits"]["disk_mechanism"] == mechanism
    assert (hostile["verdict"], hostile["execution"]) == ("error", "resource_exhausted"), (
        hostile["reason"], log)
    assert hostile["limits"]["exceeded"] == "disk_bytes", log
    assert hostile["limits"]["disk_mechanism"] == mechanism
    return hostile


@pytest.mark.parametrize("mechanism", ["filesystem", "watchdog"])
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_each_disk_attack_ends_resource_exhausted_beside_an_accepted_pair(
        run_eval: RunEval, outside: Path, mounted: list[Path], monkeypatch: pytest.MonkeyPatch,
        attack: str, mechanism: str) -> None:
    standin_only(run_eval, "the payloads are -- standin-io: lines")
    _mechanism(mechanism, monkeypatch)
    payload, mib, extra = ATTACKS[attack]
    work = outside / "work"
    _mount_tmpfs(work, mib)
    mounted.append(work)
    good, hostile = _subs(outside, payload)
    options = extra.get(mechanism, ("--disk-limit", "16M"))
    run = run_eval(good, hostile, extra=("-j", "2", "--work-dir", str(work),
                                         "--disk-reserve", "8M", *options))
    _judge(run.out, run.result.output, mechanism)
    assert run.summary()["limits_best_effort"] is (mechanism == "watchdog")
    no_survivor(outside)
    assert _left_mounted(outside) == []


def test_the_attacks_under_an_unprivileged_harness(bench_copy: Path, outside: Path,
                                                    mounted: list[Path], bwrap: str) -> None:
    """The deep-path and in-flight builds with the harness as uid 65534, which may mount
    nothing: the watchdog enforces, fails closed and says it is best-effort."""
    del bwrap
    setup = unprivileged_python(outside)
    if isinstance(setup, str):
        pytest.skip(setup)
    prefix, env = setup
    for attack in ("deep_path", "in_flight"):
        base = outside / attack
        base.mkdir()
        good, hostile = _subs(base, ATTACKS[attack][0])
        out, work = base / "out", base / "work"
        _mount_tmpfs(work, ATTACKS[attack][1])  # a filesystem only this run writes to
        mounted.append(work)
        if os.geteuid() == 0:
            for path in (outside, *outside.rglob("*")):
                os.chown(path, UNPRIVILEGED, UNPRIVILEGED, follow_symlinks=False)
        argv = ["-m", "lean_eval", "run-eval", str(good), str(hostile), "--out", str(out),
                "--work-dir", str(work), "--benchmark", str(bench_copy), "--toolchain",
                str(STANDIN), "--timeout", "60", "-q", "--skip-probes", "-j", "2",
                "--disk-limit", "16M", "--allow-bwrap-version", BWRAP_FLOOR]
        done = subprocess.run([*prefix, *argv], capture_output=True, text=True, env=env,
                              cwd=outside, timeout=240, check=False)
        output = done.stdout + done.stderr
        _judge(out, output, "watchdog")
        assert json.loads((out / "summary.json").read_text())["limits_best_effort"] is True
    no_survivor(outside)


def test_pair_filesystems_a_killed_harness_left_are_unmounted_by_the_next_run(
        run_eval: RunEval, outside: Path) -> None:
    """A harness SIGKILLed while its pair runs on a filesystem of its own leaves that mount; the
    next run on the same --work-dir unmounts it (and only then removes the dead run's tree),
    and after it nothing of either is mounted."""
    standin_only(run_eval, "a sleeping build")
    if pair_fs.unavailable_reason() is not None:
        pytest.skip(str(pair_fs.unavailable_reason()))
    subs = outside / "subs"
    sleeper(subs, "slow", 60)
    good = make_submission(subs, "good", {P: {"Submission.lean": correct(P)}})
    work = outside / "work"
    first = outside / "out1"
    thread, outcomes = in_background(
        run_eval_argv(run_eval, [subs / "slow"], first, work, "--disk-limit", "16M"),
        timeout=120)
    try:
        deadline = time.monotonic() + 90
        while not _left_mounted(work):
            assert thread.is_alive(), outcomes
            assert time.monotonic() < deadline, "the first run mounted no pair filesystem"
            time.sleep(0.05)
        pid = harness_pid(str(first))
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
    finally:
        thread.join(timeout=120)
    left = _left_mounted(work)
    assert left, "the killed harness left no mount: nothing to reclaim"
    dead = [p for p in work.iterdir() if p.name.startswith("lean-eval-run-")]
    run = run_eval(good, extra=("--work-dir", str(work), "--disk-limit", "16M"),
                   out=outside / "out2")
    assert run.verdict("good", P)["verdict"] == "accepted", run.result.output
    assert run.verdict("good", P)["limits"]["disk_mechanism"] == "filesystem"
    assert _left_mounted(outside) == []
    assert not any(p.exists() for p in dead)
    no_survivor(outside)
