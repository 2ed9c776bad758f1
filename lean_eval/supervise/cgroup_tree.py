"""Cgroup directories as the harness makes and leaves them, on either hierarchy (design §5.5
"Limits"). A harness's parent group is named ``lean-eval-<pid namespace>-<pid>-<start ticks>``
and the harness holds an exclusive ``flock`` on that directory for its whole life (``hold``):
the lock is on the cgroupfs inode, the same from every pid namespace, and the kernel drops it
when the harness ends however it ends. Reclaim (``reclaim_stale``) takes a parent group only
when it can take that lock, so only when its owner is gone: it never kills a process or removes
a group of a live harness, in this pid namespace or any other. A pid in the name proves
nothing (a harness in another pid namespace has pids this one cannot see), so groups of the
earlier ``lean-eval-<pid>-<start ticks>`` naming, which carry no lock, are left alone. A live
pair never joins a parent group of another harness. Imported by the reaper: standard library
only (``supervise.reaper``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import signal
import time
from pathlib import Path

PARENT_PREFIX = "lean-eval-"
# lean-eval-<pid namespace inode>-<pid>-<start time in ticks>; the earlier naming had no
# namespace (``lean-eval-<pid>-<ticks>``) and no lock, and is never reclaimed
_PARENT = re.compile(r"^lean-eval-(\d+)-(\d+)-(\d+)$")
_REMOVE_WAIT = 5.0
_MAKE_TRIES = 20
_held: list[int] = []  # descriptors of this harness's locked parent groups, never closed


def start_ticks(pid: int | str = "self") -> int | None:
    """The start time of process ``pid`` in clock ticks since boot (None: no such process)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()
    return int(fields[19]) if len(fields) > 19 else None


def pid_namespace() -> int:
    """The inode of this process's pid namespace (0 when it cannot be read)."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def parent_name() -> str:
    """This harness's parent group name: ``lean-eval-<pid namespace>-<pid>-<start ticks>``."""
    return f"{PARENT_PREFIX}{pid_namespace()}-{os.getpid()}-{start_ticks() or 0}"


def leaf_name() -> str:
    """The cgroup v2 leaf this harness moves itself into when its own group holds processes."""
    return f"{PARENT_PREFIX}harness-{pid_namespace()}-{os.getpid()}"


def is_parent_name(name: str) -> bool:
    """Whether ``name`` is a harness parent group of the current naming (pure)."""
    return _PARENT.match(name) is not None


def _lock(path: Path, wait: bool) -> int | None:
    """An open descriptor of directory ``path`` holding its exclusive flock (None: another
    process holds it and ``wait`` is false); OSError when it cannot be opened."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return None
        raise
    return fd


def hold(own: Path) -> Path:
    """Make this harness's parent group below ``own`` and lock it for the rest of this
    process's life; OSError when it cannot. The lock is taken after ``mkdir``, so another
    harness's reclaim may take and remove the still unlocked directory in between: it is made
    again until the directory locked is the one at the path."""
    path = own / parent_name()
    for _ in range(_MAKE_TRIES):
        with contextlib.suppress(FileExistsError):
            path.mkdir()
        try:
            fd = _lock(path, wait=True)
        except FileNotFoundError:
            continue
        assert fd is not None  # noqa: S101 - a waiting lock is always taken
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            _held.append(fd)
            return path
        os.close(fd)
    raise OSError(f"cannot keep a parent group at {path}: another harness's reclaim kept "
                  "removing it")


class LimitRefusedError(OSError):
    """A limit's value its controller refuses (EINVAL): ``which`` is "memory" or "processes",
    ``file`` the control file that refused it."""

    def __init__(self, which: str, file: str, value: int, strerror: str) -> None:
        super().__init__(errno.EINVAL, f"{file} refuses {value} ({strerror})")
        self.which, self.file, self.value, self.reason = which, file, value, strerror


def write_limit(path: Path, value: int, which: str) -> None:
    """Write limit ``value`` to control file ``path``; LimitRefusedError when the controller refuses
    the value itself, OSError otherwise."""
    try:
        path.write_text(str(value))
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            raise LimitRefusedError(which, path.name, value, exc.strerror or "invalid") from exc
        raise


def members(group: Path) -> list[int]:
    """The processes in ``group`` (its ``cgroup.procs``; none when it cannot be read)."""
    try:
        text = (group / "cgroup.procs").read_text()
    except OSError:
        return []
    return [int(word) for word in text.split() if word.isdigit()]


def kill_members(group: Path) -> None:
    """SIGKILL every process in ``group`` once (cgroup v1 has no ``cgroup.kill``)."""
    for pid in members(group):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def remove_group(group: Path) -> str | None:
    """Kill what is left in ``group``, wait until it is empty, remove it; the error, if any."""
    deadline = time.monotonic() + _REMOVE_WAIT
    while members(group):
        if time.monotonic() >= deadline:
            return f"cgroup {group} still holds processes"
        kill_members(group)
        time.sleep(0.01)
    try:
        group.rmdir()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot remove cgroup {group}: {exc}"
    return None


def reclaim_stale(own: Path) -> list[str]:
    """Remove every parent group under ``own`` whose harness has ended, its pair groups first
    (their processes killed): only a group whose lock this process can take, held while it is
    removed; the names reclaimed."""
    reclaimed: list[str] = []
    try:
        entries = sorted(own.iterdir())
    except OSError:
        return reclaimed
    for entry in entries:
        if not is_parent_name(entry.name) or entry.name == parent_name():
            continue
        try:
            fd = _lock(entry, wait=False)
        except OSError:  # gone meanwhile, or not a directory
            continue
        if fd is None:  # its harness is alive, in whatever pid namespace
            continue
        try:
            with contextlib.suppress(OSError):
                for pair in sorted(p for p in entry.iterdir() if p.is_dir()):
                    remove_group(pair)
            if remove_group(entry) is None:
                reclaimed.append(entry.name)
        finally:
            os.close(fd)
    return reclaimed


def counters(path: Path) -> dict[str, int]:
    """A cgroup file of ``name value`` lines (``*.events``, ``memory.oom_control``) as a dict;
    empty when it cannot be read (the group is gone)."""
    try:
        text = path.read_text()
    except OSError:
        return {}
    pairs = (line.split() for line in text.splitlines())
    return {p[0]: int(p[1]) for p in pairs if len(p) == 2 and p[1].isdigit()}
