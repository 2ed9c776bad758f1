"""Groups with limits the kernel enforces: the harness's parent group, made once, and one group
per pair (design §5.5 "Limits"; ``supervise.resources`` decides when they are used). cgroup v2
where a delegated subtree offers ``memory`` and ``pids``, else the v1 ``memory`` and ``pids``
hierarchies (``supervise.cgroup_v1``); parents an ended harness left are reclaimed
(``supervise.cgroup_tree``). Imported by the reaper: standard library only
(``supervise.reaper``).
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

from lean_eval.supervise import cgroup_tree, cgroup_v1

_CONTROLLERS = ("memory", "pids")
_REMOVE_WAIT = 5.0
V2, V1 = "cgroup_v2", "cgroup_v1"  # the mechanism names verdicts record


class Parent(NamedTuple):
    """The harness's parent group: one directory on v2, the memory and pids ones on v1."""

    version: str
    paths: tuple[Path, ...]


class PairGroup(NamedTuple):
    """One pair's cgroup: its directory (v2), or its memory and pids directories (v1)."""

    paths: tuple[Path, ...]
    version: str = V2

    @property
    def path(self) -> Path:
        return self.paths[0]

    @property
    def procs(self) -> tuple[Path, ...]:
        """The files a process joins the group through (every hierarchy's)."""
        return tuple(p / "cgroup.procs" for p in self.paths)

    def exceeded(self) -> str | None:
        """Which limit the kernel enforced so far: an OOM kill, or a fork refused at pids.max."""
        if self.version == V1:
            return cgroup_v1.exceeded(self.paths)
        memory = cgroup_tree.counters(self.path / "memory.events")
        if memory.get("oom_kill", 0) or memory.get("oom_group_kill", 0):
            return "memory"
        if cgroup_tree.counters(self.path / "pids.events").get("max", 0):
            return "processes"
        return None

    def kill(self) -> None:
        """SIGKILL everything in the group: at once on v2 (kernels >= 5.14), else each member
        (run again until none is left: what they forked meanwhile is born inside)."""
        if self.version == V1:
            for path in self.paths:
                cgroup_tree.kill_members(path)
            return
        with contextlib.suppress(OSError):
            (self.path / "cgroup.kill").write_text("1")

    def remove(self) -> str | None:
        """Kill what is left, wait until the group is empty, remove it; the error, if any."""
        if self.version == V1:
            errors = [e for e in map(cgroup_tree.remove_group, self.paths) if e]
            return "; ".join(errors) or None
        deadline = time.monotonic() + _REMOVE_WAIT
        while cgroup_tree.counters(self.path / "cgroup.events").get("populated", 0):
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


_counter = itertools.count()
_lock = threading.Lock()
_parent: list[Parent | str] = []  # [the harness's parent group] or [why there is none], once


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
        leaf = own / cgroup_tree.leaf_name()
        leaf.mkdir(exist_ok=True)
        (leaf / "cgroup.procs").write_text(str(os.getpid()))
        try:
            _enable(own)
        except OSError:  # others live in `own` too: go back, the watchdog will do
            (own / "cgroup.procs").write_text(str(os.getpid()))
            _remove_quietly(leaf)
            raise
    cgroup_tree.reclaim_stale(own)
    parent = cgroup_tree.hold(own)
    _enable(parent)
    atexit.register(_remove_quietly, parent)  # empty by then: every pair removes its own group
    return parent


def _remove_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.rmdir()


def _make_either() -> Parent:
    """A v2 parent where one can be made, else a v1 one; OSError saying why neither can."""
    try:
        return Parent(V2, (make_parent(),))
    except (OSError, ValueError) as exc:
        v2_reason = str(exc) or type(exc).__name__
    try:
        paths = cgroup_v1.make_parent()
    except (OSError, ValueError) as exc:
        raise OSError(f"{v2_reason}; cgroup v1: {exc or type(exc).__name__}") from exc
    for path in paths:
        atexit.register(_remove_quietly, path)
    return Parent(V1, paths)


def _decided() -> Parent | str:
    """The harness's parent group, or why there is none: decided once, under the lock."""
    with _lock:
        if not _parent:
            try:
                _parent.append(_make_either())
            except OSError as exc:
                _parent.append(str(exc) or type(exc).__name__)
        return _parent[0]


def cgroup_parent() -> Parent | None:
    """The harness's parent group, made on first use; None when only the watchdog can work."""
    found = _decided()
    return found if isinstance(found, Parent) else None


def unavailable_reason() -> str | None:
    """Why the cgroup mechanism is not used here (None when it is)."""
    found = _decided()
    return found if isinstance(found, str) else None


def make_pair_group(parent: Parent, memory: int | None, processes: int | None) -> PairGroup:
    """A fresh group for one pair with ``memory.max`` (bytes; no swap, and ``memory.oom.group``
    so an OOM kill takes the whole group) and ``pids.max`` (tasks), or their v1 counterparts
    (``cgroup_v1.make_pair_group``); None: no such limit."""
    name = f"pair-{next(_counter)}"
    if parent.version == V1:
        group = PairGroup(tuple(p / name for p in parent.paths), V1)
        try:
            cgroup_v1.make_pair_group(parent.paths, name, memory, processes)
        except OSError:
            group.remove()
            raise
        return group
    group = PairGroup((parent.paths[0] / name,))
    group.path.mkdir()
    try:
        if memory is not None:
            cgroup_tree.write_limit(group.path / "memory.max", memory, "memory")
            for name, value in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
                if (group.path / name).exists():
                    (group.path / name).write_text(value)
        if processes is not None:
            cgroup_tree.write_limit(group.path / "pids.max", processes, "processes")
    except OSError:
        group.remove()
        raise
    return group


LimitRefusedError = cgroup_tree.LimitRefusedError


def refused_value(memory: int | None, processes: int | None) -> LimitRefusedError | None:
    """Which of these limits the harness's kernel mechanism refuses, tried on a probe group
    made and removed now (None: it takes both, or there is no kernel mechanism, or the probe
    group could not be made for another reason, which the pair itself will then report)."""
    parent = cgroup_parent()
    if parent is None:
        return None
    try:
        make_pair_group(parent, memory, processes).remove()
    except LimitRefusedError as exc:
        return exc
    except OSError:
        return None
    return None
