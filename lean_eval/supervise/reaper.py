"""The reaper: the process between ``supervise.process.run`` and its child, which it outlives.

- ``run()`` starts it as ``python -I -S`` with no environment, so it, and every module it
  imports (``cgroup`` with ``cgroup_tree`` and ``cgroup_v1``, ``disk``, ``disk_ledger``,
  ``pair_fs``, ``procfs``, ``resources``), uses only the standard library and lean_eval
  modules that do the same.
- A child subreaper with a parent-death signal: every descendant that leaves the child's group
  or session is reparented to it, and the end of the thread that started it stops it.
- Signals are taken synchronously, never by handlers. Whatever happens, once the child has
  ended it SIGKILLs and reaps everything reparented to it until waitpid reports ECHILD:
  nothing outlives it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import resource
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from lean_eval.errors import ProcessStartError
from lean_eval.supervise import cgroup, process, procfs, resources

__all__ = ["boot", "main"]

_SWEEP_POLL = 0.05
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_TERM_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
_WAITED = _TERM_SIGNALS | {signal.SIGCHLD}


def boot() -> NoReturn:
    """``main``, then exit without interpreter teardown (a fifth of a reaper's CPU time): events
    go out unbuffered and nothing is registered to run at exit, so nothing is lost."""
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main() -> int:
    """Start the child, wait for it (or terminate it on request), then kill every descendant."""
    signal.pthread_sigmask(signal.SIG_BLOCK, _WAITED)  # taken synchronously, never by handlers
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    spec = json.loads(sys.stdin.buffer.read())
    status_fd = int(spec["status_fd"])

    def emit(**event: Any) -> None:
        with contextlib.suppress(OSError):  # run() may have stopped listening; cleanup goes on
            os.write(status_fd, json.dumps(event).encode("ascii") + b"\n")

    orphaned = os.getppid() != spec["parent_pid"]  # the caller died before PDEATHSIG was armed
    try:
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    except OSError as exc:
        emit(event="error", message=f"the reaper cannot become a subreaper: {exc}")
        return 1
    rlimits = tuple((int(r), int(s), int(h)) for r, s, h in spec["rlimits"])
    group = None if spec["cgroup"] is None else cgroup.PairGroup(
        tuple(Path(p) for p in spec["cgroup"][1]), spec["cgroup"][0])
    try:
        child = process.start_child(
            tuple(spec["argv"]), env=dict(spec["env"]), cwd=spec["cwd"],
            setup=functools.partial(
                _child_setup, rlimits, () if group is None else tuple(map(os.fspath, group.procs)),
                status_fd, None if spec.get("user") is None else
                (int(spec["user"][0]), int(spec["user"][1]))))
    except ProcessStartError as exc:
        emit(event="error", message=str(exc))
        return 0
    try:
        emit(event="started", pid=child.pid)  # the child reported it already (_child_setup)
        watch = None
        interval = resources.WATCHDOG_INTERVAL
        if spec["limits"] is not None:
            limits = resources.PairLimits.from_spec(spec["limits"])
            watch = functools.partial(resources.watch, limits, group, emit)
            interval = resources.watch_interval(limits)
        status, terminated = _wait_for_child(child.pid, float(spec["grace"]), orphaned, watch,
                                             interval)
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        emit(event="exited", terminated=terminated,
             returncode=os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
             signal=os.WTERMSIG(status) if os.WIFSIGNALED(status) else None)
    finally:  # whatever went wrong above, nothing outlives the reaper
        if child.returncode is None:
            _signal_group(child.pid, signal.SIGKILL)
        orphans = _sweep()
    emit(event="done", orphans=orphans)
    return 0


def _child_setup(rlimits: tuple[tuple[int, int, int], ...], cgroup_procs: tuple[str, ...],
                 status_fd: int, user: tuple[int, int] | None = None) -> None:
    """Between fork and exec: own process group, the pair's cgroup, rlimits, then ``user``
    (no supplementary groups, gid, uid: in that order, the last one dropping the right to the
    others; only after the cgroup and rlimits, which need root), no signal blocked; then the
    child reports its own pid: once it runs it could SIGSTOP its reaper before that said
    "started", and ``run()``'s last resort needs the pid. Popen's own user/group switch is not
    used: it runs before this setup, which could then no longer join the cgroup."""
    os.setpgid(0, 0)
    for procs in cgroup_procs:  # before exec: everything the child starts is born inside
        with open(procs, "w", encoding="ascii") as f:
            f.write("0")
    for res, soft, hard in rlimits:
        resource.setrlimit(res, (soft, hard))
    if user is not None:
        os.setgroups([])
        os.setgid(user[1])
        os.setuid(user[0])
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    os.write(status_fd, json.dumps({"event": "started", "pid": os.getpid()}).encode() + b"\n")


def _wait_for_child(pid: int, grace: float, terminate: bool,
                    watch: Callable[[], bool] | None = None,
                    interval: float = resources.WATCHDOG_INTERVAL) -> tuple[int, bool]:
    """The child's wait status, and whether it was terminated on request (TERM, then KILL).
    ``watch`` (the limits) is looked at every ``interval`` until it reports a kill."""
    terminated = False
    kill_at: float | None = None
    watch_at = time.monotonic() if watch is not None else None
    while True:
        if terminate and not terminated:
            terminated = True
            _signal_group(pid, signal.SIGTERM)
            kill_at = time.monotonic() + grace
        status = _reap(pid)
        if status is not None:
            return status, terminated
        if kill_at is not None and time.monotonic() >= kill_at:
            _signal_group(pid, signal.SIGKILL)
            kill_at = None
            continue
        if watch is not None and watch_at is not None and time.monotonic() >= watch_at:
            watch_at = None if watch() else time.monotonic() + interval
            continue
        info: signal.struct_siginfo | None
        wake = min((t for t in (kill_at, watch_at) if t is not None), default=None)
        if wake is None:
            info = signal.sigwaitinfo(_WAITED)
        else:
            info = signal.sigtimedwait(_WAITED, max(0.0, wake - time.monotonic()))
        terminate = terminate or (info is not None and info.si_signo != signal.SIGCHLD)


def _signal_group(pid: int, sig: int) -> None:
    """The child's group, and the child itself should it have left that group."""
    for send in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            send(pid, sig)


def _reap(pid: int) -> int | None:
    """Reap every exited child without blocking; the wait status of `pid` if it was among them."""
    found = None
    while True:
        try:
            reaped, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return found
        if reaped == 0:
            return found
        if reaped == pid:
            found = status


def _sweep() -> int:
    """SIGKILL and reap every remaining descendant; how many were still alive."""
    killed: set[int] = set()
    me = os.getpid()
    while True:
        try:
            while os.waitpid(-1, os.WNOHANG)[0] != 0:
                pass
        except ChildProcessError:
            return len(killed)
        for pid, (parent, _) in procfs.process_table().items():  # zombies are not listed
            if parent == me:
                killed.add(pid)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        signal.sigtimedwait((signal.SIGCHLD,), _SWEEP_POLL)


def _prctl(option: int, value: int) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    zero = ctypes.c_ulong(0)
    if int(libc.prctl(option, ctypes.c_ulong(value), zero, zero, zero)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
