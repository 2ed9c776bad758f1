"""cgroup v2 groups with limits the kernel enforces: the harness's parent group, made once, and
one group per pair (design §5.5 "Limits"; ``supervise.resources`` decides when they are used).
Imported by the reaper: standard library only (``supervise.reaper``).
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import threading
import time
from pathlib import Path
from typing import NamedTuple

_CONTROLLERS = ("memory", "pids")
_REMOVE_WAIT = 5.0


class PairGroup(NamedTuple):
    """One pair's cgroup: its directory and the limits written into it."""

    path: Path

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    def exceeded(self) -> str | None:
        """Which limit the kernel enforced so far: an OOM kill, or a fork refused at pids.max."""
        memory = _events(self.path / "memory.events")
        if memory.get("oom_kill", 0) or memory.get("oom_group_kill", 0):
            return "memory"
        if _events(self.path / "pids.events").get("max", 0):
            return "processes"
        return None

    def kill(self) -> None:
        """SIGKILL everything in the group at once (kernels >= 5.14)."""
        with contextlib.suppress(OSError):
            (self.path / "cgroup.kill").write_text("1")

    def remove(self) -> str | None:
        """Kill what is left, wait until the group is empty, remove it; the error, if any."""
        deadline = time.monotonic() + _REMOVE_WAIT
        while _events(self.path / "cgroup.events").get("populated", 0):
            if time.monotonic() >= deadline:
                return f"cgroup {self.path} still holds processes"
            self.kill()
            time.sleep(0.01)
        try:
            self.path.rmdir()
        except FileNotFoundError:
            return None
        except OSError as exc:
            return f"cannot remove cgroup {self.path}: {exc}"
        return None


def _events(path: Path) -> dict[str, int]:
    try:
        text = path.read_text()
    except OSError:
        return {}
    pairs = (line.split() for line in text.splitlines())
    return {p[0]: int(p[1]) for p in pairs if len(p) == 2 and p[1].isdigit()}


_counter = itertools.count()
_lock = threading.Lock()
_parent: list[Path | str] = []  # [the harness's parent group] or [why there is none], once


def own_cgroup2() -> Path:
    """The cgroup2 directory this process is in (the first cgroup2 mount that holds it)."""
    own = next((line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines()
                if line.startswith("0::")), None)
    if own is None:
        raise OSError("this process is in no cgroup2 hierarchy")
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        if right.split()[:1] == ["cgroup2"]:
            mount = left.split()[4]
            root = left.split()[3]
            relative = os.path.relpath(own, root) if own.startswith(root) else None
            if relative is not None and not relative.startswith(".."):
                return Path(os.path.normpath(os.path.join(mount, relative)))
    raise OSError("no cgroup2 hierarchy is mounted")


def _enable(group: Path) -> None:
    have = set((group / "cgroup.subtree_control").read_text().split())
    missing = [c for c in _CONTROLLERS if c not in have]
    if missing:
        (group / "cgroup.subtree_control").write_text(" ".join("+" + c for c in missing))


def make_parent(base: Path | None = None) -> Path:
    """The harness's own parent group with memory and pids enabled below it, or OSError; the
    harness first moves itself into a leaf when its cgroup holds processes."""
    own = base or own_cgroup2()
    offered = set((own / "cgroup.controllers").read_text().split())
    lacking = [c for c in _CONTROLLERS if c not in offered]
    if lacking:
        raise OSError(f"cgroup2 group {own} does not offer {' and '.join(lacking)} "
                      "(not delegated, or bound to a cgroup v1 hierarchy)")
    try:
        _enable(own)
    except OSError:  # processes in `own` (no-internal-process rule): leave it for a leaf
        leaf = own / f"lean-eval-harness-{os.getpid()}"
        leaf.mkdir(exist_ok=True)
        (leaf / "cgroup.procs").write_text(str(os.getpid()))
        try:
            _enable(own)
        except OSError:  # others live in `own` too: go back, the watchdog will do
            (own / "cgroup.procs").write_text(str(os.getpid()))
            _remove_quietly(leaf)
            raise
    parent = own / f"lean-eval-{os.getpid()}"
    parent.mkdir(exist_ok=True)
    _enable(parent)
    atexit.register(_remove_quietly, parent)  # empty by then: every pair removes its own group
    return parent


def _remove_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.rmdir()


def cgroup_parent() -> Path | None:
    """The harness's parent group, made on first use; None when only the watchdog can work."""
    with _lock:
        if not _parent:
            try:
                _parent.append(make_parent())
            except (OSError, ValueError) as exc:
                _parent.append(str(exc) or type(exc).__name__)
        found = _parent[0]
    return found if isinstance(found, Path) else None


def unavailable_reason() -> str | None:
    """Why the cgroup mechanism is not used here (None when it is)."""
    cgroup_parent()
    return _parent[0] if isinstance(_parent[0], str) else None


def make_pair_group(parent: Path, memory: int | None, processes: int | None) -> PairGroup:
    """A fresh group for one pair with ``memory.max`` (bytes; no swap, and ``memory.oom.group``
    so an OOM kill takes the whole group) and ``pids.max`` (tasks); None: no such limit."""
    group = PairGroup(parent / f"pair-{next(_counter)}")
    group.path.mkdir()
    try:
        if memory is not None:
            (group.path / "memory.max").write_text(str(memory))
            for name, value in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
                if (group.path / name).exists():
                    (group.path / name).write_text(value)
        if processes is not None:
            (group.path / "pids.max").write_text(str(processes))
    except OSError:
        group.remove()
        raise
    return group
