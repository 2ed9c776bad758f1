"""A harness in a pid namespace of its own, as a container or a CI job under ``unshare -p`` runs
one beside the host's (issue 30 item 3): started only through this support code, never by the
product; found from the host; and a correct build that holds its pair open until the test lets
it go (so two harnesses' pairs overlap whatever the machine's speed)."""

from __future__ import annotations

import os
import shutil
import subprocess  # noqa: TID251 - checking that unshare works needs a real child process
import time
from pathlib import Path

from support.files import make_submission, sh_payload, with_lines
from support.kernel_limits import own_parents
from support.places import PROBLEM

UNSHARE = ("unshare", "--pid", "--fork", "--mount-proc", "--")
WAITING, GO = "gate-waiting", "gate-go"


def pid_namespace_problem() -> str | None:
    """Why no harness can be started in a pid namespace of its own here (None: it can)."""
    if os.geteuid() != 0:
        return "a pid namespace with its own /proc needs root (unshare --pid --mount-proc)"
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not on PATH"
    done = subprocess.run([*UNSHARE, "true"], capture_output=True, check=False, timeout=60)
    return None if done.returncode == 0 else f"unshare fails here: {done.stderr.decode()[:200]}"


def in_pid_namespace(argv: tuple[str, ...]) -> tuple[str, ...]:
    """``argv`` run as pid 1 of a new pid namespace with its own /proc."""
    return (*UNSHARE, *argv)


def harness_in_namespace(marker: str) -> tuple[int, int, int] | None:
    """The ``run-eval`` whose argv holds ``marker`` (the python, not ``unshare``), if it runs:
    its pid here, the inode of its pid namespace and its pid there."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            status = Path(f"/proc/{name}/status").read_text()
            namespace = os.stat(f"/proc/{name}/ns/pid").st_ino
        except OSError:
            continue
        if (b"run-eval" in argv and marker.encode() in argv and b"lean_eval" in argv
                and Path(argv[0].decode()).name != "unshare"):
            nspid = next(line.split()[-1] for line in status.splitlines()
                         if line.startswith("NSpid:"))
            return int(name), namespace, int(nspid)
    return None


def parents_of(namespace: int, pid: int) -> list[Path]:
    """The parent groups (every hierarchy's) of the harness with ``pid`` in ``namespace``."""
    return [p for own in own_parents() for p in own.glob(f"lean-eval-{namespace}-{pid}-*")]


def gated(base: Path, name: str) -> Path:
    """A correct proof of ``PROBLEM`` whose build marks its ``.lake`` (the workspace's tree the
    sandbox may write, a bind of the host's directory) ``WAITING`` and waits until ``GO``
    appears beside it (``release``)."""
    command = f"touch .lake/{WAITING}; while [ ! -e .lake/{GO} ]; do sleep 0.05; done"
    return make_submission(base, name, {PROBLEM: {"Submission.lean": with_lines(
        PROBLEM, sh_payload(command))}})


def waiting(work: Path) -> list[Path]:
    """The gated builds now waiting under ``work``."""
    return sorted(work.rglob(WAITING))


def release(work: Path) -> None:
    """Let every gated build waiting under ``work`` finish."""
    for mark in waiting(work):
        (mark.parent / GO).touch()


def wait_until(what: str, done: object, limit: float = 120) -> None:
    """Poll ``done()`` until it is true; fail naming ``what`` after ``limit`` seconds (a bound
    for a hung run, never a speed claim)."""
    deadline = time.monotonic() + limit
    while not done():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)
