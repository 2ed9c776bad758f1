"""cgroup v1 groups with limits the kernel enforces, where no delegated cgroup v2 subtree offers
``memory`` and ``pids`` (design §5.5 "Limits"): the harness's parent group in the v1 ``memory``
hierarchy and one in the v1 ``pids`` hierarchy, each below the harness's own group there, and
one pair group in each. The memory group charges every page the pair touches (anonymous, tmpfs,
memfd, SysV), and ``memory.memsw`` caps memory plus swap where the kernel has it, so swap is no
way out. Imported by the reaper: standard library only (``supervise.reaper``).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from lean_eval.supervise import cgroup_tree

CONTROLLERS = ("memory", "pids")


def own_group(controller: str, proc: str = "/proc/self") -> Path:
    """The directory of this process's group in the v1 hierarchy of ``controller``; OSError
    when no writable hierarchy with it is mounted."""
    own = None
    for line in Path(f"{proc}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            own = path
    if own is None:
        raise OSError(f"this process is in no cgroup v1 {controller} hierarchy")
    for line in Path(f"{proc}/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        kind = right.split()
        if kind[:1] == ["cgroup"] and len(kind) > 2 and controller in kind[2].split(","):
            root, mount = left.split()[3:5]
            relative = os.path.relpath(own, root)
            if not relative.startswith(".."):
                return Path(os.path.normpath(os.path.join(mount, relative)))
    raise OSError(f"no cgroup v1 {controller} hierarchy is mounted")


def make_parent() -> tuple[Path, ...]:
    """The harness's parent groups (memory, then pids), made below its own groups after
    reclaiming what an ended harness left there; OSError when a hierarchy is not writable."""
    made: list[Path] = []
    try:
        for controller in CONTROLLERS:
            own = own_group(controller)
            if not os.access(own, os.W_OK):
                raise OSError(f"cgroup v1 {controller} group {own} is not writable")
            cgroup_tree.reclaim_stale(own)
            made.append(cgroup_tree.hold(own))
    except OSError:
        for path in made:
            cgroup_tree.remove_group(path)
        raise
    return tuple(made)


def make_pair_group(parents: tuple[Path, ...], name: str, memory: int | None,
                    processes: int | None) -> tuple[Path, ...]:
    """The pair's groups ``name`` below ``parents`` (memory, pids) with ``memory.limit_in_bytes``
    and ``memory.memsw.limit_in_bytes`` (else ``memory.swappiness`` 0) and ``pids.max``."""
    paths = tuple(parent / name for parent in parents)
    for path in paths:
        path.mkdir()
    memory_dir, pids_dir = paths
    if memory is not None:
        cgroup_tree.write_limit(memory_dir / "memory.limit_in_bytes", memory, "memory")
        memsw = memory_dir / "memory.memsw.limit_in_bytes"
        if memsw.exists():  # after the memory limit: memsw may never be below it
            cgroup_tree.write_limit(memsw, memory, "memory")
        else:  # no swap accounting: keep the group's pages out of swap as far as v1 can
            with contextlib.suppress(OSError):
                (memory_dir / "memory.swappiness").write_text("0")
    if processes is not None:
        cgroup_tree.write_limit(pids_dir / "pids.max", processes, "processes")
    return paths


def exceeded(paths: tuple[Path, ...]) -> str | None:
    """Which limit the kernel enforced so far: an OOM kill in the memory group, or a fork the
    pids group refused."""
    memory_dir, pids_dir = paths
    if cgroup_tree.counters(memory_dir / "memory.oom_control").get("oom_kill", 0):
        return "memory"
    if cgroup_tree.counters(pids_dir / "pids.events").get("max", 0):
        return "processes"
    return None
