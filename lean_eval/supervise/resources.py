"""Per-pair memory, process and disk limits (design §5.5 "Limits", "Disk"): what a pair may use,
how ``run()`` enforces it (``enforcement``: the pair's cgroup, v2 or v1, where the harness has a
parent group, else the watchdog) and the watchdog (``watch``), which the reaper runs over its
own descendants, a tree none can leave, every ``WATCHDOG_INTERVAL`` seconds: a tree can
overshoot a limit by what it allocates or forks in one interval. Imported by the reaper:
standard library only (``supervise.reaper``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from typing import NamedTuple

from lean_eval.errors import ProcessStartError
from lean_eval.supervise import cgroup, disk, procfs

DEFAULT_MEMORY_LIMIT = 8 << 30
DEFAULT_MAX_PROCESSES = 512
MECHANISMS = ("auto", "cgroup_v2", "cgroup_v1", "watchdog")
WATCHDOG_INTERVAL = 0.1
DISK_INTERVAL = WATCHDOG_INTERVAL


class PairLimits(NamedTuple):
    """The limits of one pair's tree, one name each from option to supervisor (design §2.1);
    None: no such limit."""

    memory_limit: int | None = DEFAULT_MEMORY_LIMIT  # bytes
    max_processes: int | None = DEFAULT_MAX_PROCESSES  # tasks: processes and threads
    mechanism: str = "auto"  # one of MECHANISMS: any but "auto" forces it
    disk_limit: int | None = None  # blocks under disk_paths
    disk_files: int | None = None  # entries under disk_paths
    disk_paths: tuple[str, ...] = ()  # the pair's writable trees (none: the disk is not watched)

    def any(self) -> bool:
        return (self.memory_limit is not None or self.max_processes is not None
                or self.watches_disk())

    def watches_disk(self) -> bool:
        return bool(self.disk_paths) and (self.disk_limit is not None
                                          or self.disk_files is not None)

    def to_spec(self) -> list[object]:
        """JSON-able form for the reaper (``from_spec`` reads it back)."""
        return [self.memory_limit, self.max_processes, self.mechanism, self.disk_limit,
                self.disk_files, list(self.disk_paths)]

    @classmethod
    def from_spec(cls, data: list[object]) -> PairLimits:
        memory, processes, mechanism, disk_limit, disk_files, paths = data
        if not isinstance(paths, list):
            raise ValueError("malformed limits spec")
        return cls(memory, processes, str(mechanism), disk_limit, disk_files,  # type: ignore[arg-type]
                   tuple(str(p) for p in paths))


def exceeded_by(limits: PairLimits, memory: int, tasks: int) -> str | None:
    """Which limit a measured tree is over ("memory" first), if any (pure)."""
    if limits.memory_limit is not None and memory > limits.memory_limit:
        return "memory"
    if limits.max_processes is not None and tasks > limits.max_processes:
        return "processes"
    return None


# --- the watchdog (runs in the reaper) -------------------------------------------------------


_disk_due = [0.0]  # the reaper's next disk walk (one pair per reaper process)


def disk_exceeded(limits: PairLimits) -> tuple[str, int] | None:
    """Which disk limit the pair's trees are over, and the count, when a walk is due: at most
    every ``DISK_INTERVAL`` and never more often than four times the last walk's cost."""
    now = time.monotonic()
    if not limits.watches_disk() or now < _disk_due[0]:
        return None
    used = disk.usage(limits.disk_paths, limits.disk_files)
    spent = time.monotonic() - now
    _disk_due[0] = time.monotonic() + max(DISK_INTERVAL, 4 * spent)
    which = disk.exceeded_by(used, limits.disk_limit, limits.disk_files)
    if which is None:
        return None
    return which, used.bytes if which == "disk_bytes" else used.files


def watch(limits: PairLimits, group: cgroup.PairGroup | None, emit: Callable[..., None]) -> bool:
    """In the reaper: one look at its tree against the limits; past one, report which (with
    ``emit``) and kill the whole tree. Whether it killed."""
    observed: int | None
    if group is not None:  # the kernel enforces; a refused fork or an OOM kill ends the pair
        which = group.exceeded()
        observed = None
    elif limits.memory_limit is None and limits.max_processes is None:
        which = observed = None
    else:
        memory, tasks, _ = procfs.tree_usage(os.getpid())
        which = exceeded_by(limits, memory, tasks)
        observed = memory if which == "memory" else tasks
    if which is None:
        found = disk_exceeded(limits)
        if found is None:
            return False
        which, observed = found
    emit(event="limit", which=which, observed=observed)
    if group is not None:
        group.kill()
    kill_tree(os.getpid())
    return True


def kill_tree(root: int) -> None:
    """SIGKILL every process below ``root`` until none is left alive (a fork storm included:
    each pass kills all it saw, so only what they forked meanwhile is left for the next)."""
    for _ in range(1000):
        found = procfs.descendants(root, procfs.process_table())
        if not found:
            return
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.001)


def enforcement(name: str, limits: PairLimits | None) -> tuple[cgroup.PairGroup | None, str | None]:
    """The pair's fresh cgroup (None: the watchdog) and the mechanism's name, (None, None)
    without limits; ProcessStartError when a kernel mechanism is asked for and cannot work."""
    if limits is None or not limits.any():
        return None, None
    if limits.mechanism not in MECHANISMS:
        raise ValueError(f"unknown limits mechanism {limits.mechanism!r}")
    if limits.mechanism == "watchdog":
        return None, "watchdog"
    forced = limits.mechanism != "auto"
    parent = cgroup.cgroup_parent()
    if parent is not None and forced and parent.version != limits.mechanism:
        raise ProcessStartError(f"cannot limit {name!r} with {limits.mechanism}: this harness "
                                f"uses {parent.version}")
    if parent is not None:
        try:
            group = cgroup.make_pair_group(parent, limits.memory_limit, limits.max_processes)
            return group, parent.version
        except OSError as exc:
            if forced:
                raise ProcessStartError(f"cannot limit {name!r}: {exc}") from exc
    elif forced:
        raise ProcessStartError(f"cannot limit {name!r} with {limits.mechanism}: "
                                f"{cgroup.unavailable_reason()}")
    return None, "watchdog"
