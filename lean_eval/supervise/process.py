"""Start a child process and return only once its whole process tree is gone (by way of
``supervise.reaper``). Invariants the rest of lean-eval relies on:

- This is the only module that starts processes; ruff bans ``subprocess`` everywhere else.
- argv is a tuple of str, never a shell string; the child gets exactly the env and cwd it is
  given, stdin /dev/null and no descriptor but 0, 1 and 2.
- Every ``run()`` has its own reaper, whose parent-death signal fires when the *thread* that
  started it exits: ``run()`` holds its thread until the reaper is reaped, so a pool must never
  run it in a thread that could end sooner (no daemon threads, no cancelling mid-call).
- When ``run()`` returns or raises, the reaper has been reaped and, unless it had to be
  SIGKILLed as a last resort, every descendant was reaped first.
- A timeout is ``ProcessResult.timed_out``, never an exception; output is drained in the
  calling thread into bounded captures, so no flood can deadlock it. Nothing the child does
  raises; only a real signal sets ``ProcessResult.signal``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import selectors
import signal
import subprocess  # noqa: TID251 - the one module allowed to start processes
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from lean_eval.errors import LeanEvalError, ProcessStartError
from lean_eval.supervise import cgroup, resources
from lean_eval.supervise.capture import Capture

__all__ = ["ProcessResult", "run", "run_capture", "start_child"]

_READ_CHUNK = 1024 * 1024
_PIPE_SIZE = 1024 * 1024
_SPEC_CHUNK = 64 * 1024
_REAPER_MARGIN = 5.0  # after deadline + grace, before run() gives up on the reaper
_DRAIN_AFTER_EXIT = 2.0  # how long run() drains output still held open once the reaper is gone
_CAPTURE_CAP = 8 * 1024 * 1024
_CAPTURE_GRACE = 1.0
# `-I` ignores PYTHON* variables, the user site and the current directory; `-S` skips `site`
# (site-packages and their .pth hooks, half of a bare start-up: one reaper per process run),
# which the reaper never needs, as it imports only the standard library and this very package,
# from the directory the harness loaded it from. Named, not imported: the reaper imports this
# module for start_child.
_REAPER_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from lean_eval.supervise.reaper import boot; boot()"
)


class ProcessResult(NamedTuple):
    """How a child ended, with its capped output."""

    returncode: int | None  # exit status if it exited normally
    signal: int | None  # the signal that ended it (for timeouts: the one that finally did)
    timed_out: bool
    duration: float  # seconds, monotonic
    stdout: bytes  # capped: head + "\n[... N bytes omitted ...]\n" + tail
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    orphans_killed: int  # descendants alive after the main child ended, killed by the reaper
    # (seconds since start, first bytes) of stdout lines as they completed: the first and the
    # last capture.LINE_MARKS of them, so callers can time phases announced on stdout
    line_marks: tuple[tuple[float, bytes], ...] = ()
    # "memory", "processes", "disk_bytes" or "disk_files": the pair's limit that ended it
    limit_exceeded: str | None = None
    # "cgroup_v2", "cgroup_v1" or "watchdog" when limits were asked for
    limits_mechanism: str | None = None


def run(
    argv: tuple[str, ...],
    *,
    env: Mapping[str, str],
    cwd: Path,
    timeout: float | None,
    output_cap: int = 256 * 1024,
    grace: float = 5.0,
    rlimits: Mapping[int, tuple[int, int]] | None = None,
    limits: resources.PairLimits | None = None,
    user: tuple[int, int] | None = None,
) -> ProcessResult:
    """Run argv to completion or to its deadline; its whole process tree is gone on return.
    ``user``: (uid, gid) the child runs as, with no supplementary groups (a root caller only;
    the reaper stays the caller). ProcessStartError when it cannot start, LeanEvalError when
    the reaper dies unreported."""
    if not argv:
        raise ValueError("argv must not be empty")
    if output_cap < 0 or grace < 0:
        raise ValueError("output_cap and grace must not be negative")
    if not sys.executable:
        raise ProcessStartError(f"cannot start {argv[0]!r}: no Python interpreter for the reaper")
    group, mechanism = resources.enforcement(argv[0], limits)
    try:
        return _run(argv, env=env, cwd=cwd, timeout=timeout, output_cap=output_cap, grace=grace,
                    rlimits=rlimits, limits=limits, group=group, mechanism=mechanism,
                    user=user)
    finally:
        if group is not None:
            group.remove()


def _run(argv: tuple[str, ...], *, env: Mapping[str, str], cwd: Path, timeout: float | None,
         output_cap: int, grace: float, rlimits: Mapping[int, tuple[int, int]] | None,
         limits: resources.PairLimits | None, group: cgroup.PairGroup | None,
         mechanism: str | None, user: tuple[int, int] | None = None) -> ProcessResult:
    status_r, status_w = os.pipe()
    spec = {
        "argv": list(argv),
        "env": dict(env),
        "cwd": os.fspath(cwd),
        "grace": grace,
        "rlimits": [[int(k), int(v[0]), int(v[1])] for k, v in (rlimits or {}).items()],
        "status_fd": status_w,
        "parent_pid": os.getpid(),
        "cgroup": None if group is None else [group.version, [os.fspath(p) for p in group.paths]],
        "limits": None if mechanism is None or limits is None else limits.to_spec(),
        "user": None if user is None else [int(user[0]), int(user[1])],
    }
    start = time.monotonic()
    try:
        reaper = subprocess.Popen(
            (sys.executable, "-I", "-S", "-c", _REAPER_BOOT,
             str(Path(__file__).resolve().parents[2])),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            pass_fds=(status_w,), env={}, cwd="/", start_new_session=True)
    except OSError as exc:
        os.close(status_r)
        raise ProcessStartError(f"cannot start {argv[0]!r}: the reaper failed: {exc}") from exc
    finally:
        os.close(status_w)
    supervisor = _Supervisor(reaper, status_r, json.dumps(spec).encode("ascii"), start=start,
                             timeout=timeout, grace=grace, output_cap=output_cap)
    try:
        supervisor.pump()
    finally:
        supervisor.finish()
    done = supervisor.result(argv[0])
    exceeded = done.limit_exceeded or (None if group is None else group.exceeded())
    return done._replace(limit_exceeded=exceeded, limits_mechanism=mechanism)


def run_capture(
    argv: tuple[str, ...], *, env: Mapping[str, str], cwd: Path, timeout: float = 60.0
) -> ProcessResult:
    """Run a short trusted helper (git, bwrap --version) with run()'s guarantees."""
    return run(argv, env=env, cwd=cwd, timeout=timeout, output_cap=_CAPTURE_CAP,
               grace=_CAPTURE_GRACE)


def start_child(argv: tuple[str, ...], *, env: Mapping[str, str], cwd: str,
                setup: Callable[[], None]) -> subprocess.Popen[bytes]:
    """The reaper's one start of run()'s argv: stdin /dev/null, no other descriptor, default
    signal dispositions, ``setup`` between fork and exec; ProcessStartError says why not."""
    try:
        return subprocess.Popen(
            argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, close_fds=True,
            restore_signals=True,
            preexec_fn=setup,  # noqa: PLW1509 - the reaper is single-threaded
        )
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        message = str(exc)
        if isinstance(exc, subprocess.SubprocessError):
            message += (" (setting its process group, cgroup, rlimits, signal mask or user "
                        "failed)")
        raise ProcessStartError(message) from exc


class _Supervisor:
    """run()'s side of one reaper: feed it the spec, drain its pipes, enforce the deadline."""

    def __init__(self, reaper: subprocess.Popen[bytes], status_fd: int, spec: bytes, *,
                 start: float, timeout: float | None, grace: float, output_cap: int) -> None:
        self.reaper = reaper
        self.status_fd = status_fd
        self.spec = memoryview(spec)
        self.start = start
        self.end = start
        self.deadline = None if timeout is None else start + timeout
        self.grace = grace
        self.term_sent_at: float | None = None
        self.reaper_killed = False
        self.status_eof_at: float | None = None
        self.status = bytearray()
        if reaper.stdin is None or reaper.stdout is None or reaper.stderr is None:
            raise AssertionError("the reaper's standard streams are pipes")
        self.out = Capture(output_cap)
        self.err = Capture(output_cap)
        self.captures = {reaper.stdout.fileno(): self.out, reaper.stderr.fileno(): self.err}
        for fd in self.captures:  # fewer, larger reads: the drain rate is per read, not per byte
            with contextlib.suppress(OSError):  # over the per-user pipe budget: keep the default
                fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_SIZE)

    def pump(self) -> None:
        assert self.reaper.stdin  # noqa: S101
        stdin_fd = self.reaper.stdin.fileno()
        os.set_blocking(stdin_fd, False)
        with selectors.DefaultSelector() as sel:
            sel.register(stdin_fd, selectors.EVENT_WRITE)
            sel.register(self.status_fd, selectors.EVENT_READ)
            for fd in self.captures:
                sel.register(fd, selectors.EVENT_READ)
            while sel.get_map():
                now = time.monotonic()
                term_at = self.deadline if self.term_sent_at is None else None
                if term_at is not None and now >= term_at:
                    self.term_sent_at, term_at = now, None
                    self._signal_reaper(signal.SIGTERM)
                kill_at = None
                if self.term_sent_at is not None and not self.reaper_killed:
                    kill_at = self.term_sent_at + self.grace + _REAPER_MARGIN
                    if now >= kill_at:
                        self._kill_tree()
                        kill_at = None
                drain_until = None
                if self.status_eof_at is not None:  # the reaper is gone; after a normal exit, so
                    drain_until = self.status_eof_at + _DRAIN_AFTER_EXIT  # is every descendant
                    if now >= drain_until:
                        break
                wakes = [t for t in (term_at, kill_at, drain_until) if t is not None]
                for key, _ in sel.select(max(0.0, min(wakes) - now) if wakes else None):
                    self._service(sel, key.fd, stdin_fd)
        self.end = time.monotonic()

    def _service(self, sel: selectors.BaseSelector, fd: int, stdin_fd: int) -> None:
        if fd == stdin_fd:
            assert self.reaper.stdin  # noqa: S101
            try:
                self.spec = self.spec[os.write(fd, self.spec[:_SPEC_CHUNK]) :]
            except BrokenPipeError:
                self.spec = self.spec[:0]
            if not self.spec:
                sel.unregister(fd)
                with contextlib.suppress(BrokenPipeError):
                    self.reaper.stdin.close()
            return
        data = os.read(fd, _READ_CHUNK)
        if not data:
            sel.unregister(fd)
            if fd == self.status_fd:
                self.status_eof_at = time.monotonic()
        elif fd == self.status_fd:
            self.status += data
        else:
            self.captures[fd].feed(data)
            if self.captures[fd] is self.out:
                self.out.mark_lines(data, round(time.monotonic() - self.start, 3))

    def _signal_reaper(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.reaper.send_signal(sig)

    def _kill_tree(self) -> None:
        """Last resort: SIGKILL the reaper and, while it is still the child's, the child's group."""
        self.reaper_killed = True
        events = self._events()
        if "started" in events and not {"exited", "error"} & events.keys():  # nor reused yet
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(events["started"]["pid"]), signal.SIGKILL)
        if self.reaper.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.reaper.pid, signal.SIGKILL)  # unreaped, so the pgid is still ours

    def finish(self) -> None:
        """Close every pipe and reap the reaper, stopping it first if pump() did not finish."""
        if self.reaper.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                self.reaper.stdin.close()
        for stream in (self.reaper.stdout, self.reaper.stderr):
            if stream is not None:
                stream.close()
        os.close(self.status_fd)
        if self.status_eof_at is None and self.reaper.poll() is None:
            self._signal_reaper(signal.SIGTERM)  # interrupted (KeyboardInterrupt, ...)
        try:
            self.reaper.wait(timeout=self.grace + _REAPER_MARGIN)
        except subprocess.TimeoutExpired:
            self._kill_tree()
            self.reaper.wait()

    def _events(self) -> dict[str, dict[str, Any]]:
        events: dict[str, dict[str, Any]] = {}
        for line in bytes(self.status).splitlines():
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                events[str(event["event"])] = event
        return events

    def result(self, name: str) -> ProcessResult:
        events = self._events()
        if "error" in events:
            raise ProcessStartError(f"cannot start {name!r}: {events['error']['message']}")
        out, out_cut = self.out.result()
        err, err_cut = self.err.result()

        def ended(code: int | None, sig: int | None, timed_out: bool,
                  orphans: int) -> ProcessResult:
            marks = (*self.out.first_marks, *self.out.last_marks)
            return ProcessResult(code, sig, timed_out, self.end - self.start, out, err, out_cut,
                                 err_cut, orphans, marks, events.get("limit", {}).get("which"))

        if "exited" in events:
            exited = events["exited"]
            return ended(exited["returncode"], exited["signal"],
                         bool(exited["terminated"]) or self.reaper_killed,
                         int(events.get("done", {}).get("orphans", 0)))
        code = self.reaper.returncode
        if self.term_sent_at is not None:  # deadline passed and the reaper never reported an end
            return ended(None, -code if code is not None and code < 0 else int(signal.SIGKILL),
                         True, 0)
        detail = err.decode(errors="replace").strip()[-2000:]
        if "started" not in events:
            raise ProcessStartError(f"cannot start {name!r}: the reaper exited ({code}): {detail}")
        raise LeanEvalError(f"the reaper of {name!r} died ({code}) before its child: {detail}")
