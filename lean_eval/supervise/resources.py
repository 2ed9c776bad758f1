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
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

from lean_eval.errors import ProcessStartError
from lean_eval.supervise import cgroup, disk, disk_ledger, pair_fs, procfs

DEFAULT_MEMORY_LIMIT = 8 << 30
DEFAULT_MAX_PROCESSES = 512
MECHANISMS = ("auto", "cgroup_v2", "cgroup_v1", "watchdog")
WATCHDOG_INTERVAL = 0.1
DISK_INTERVAL = WATCHDOG_INTERVAL
DISK_SHORT_GRACE = 2.0  # seconds a pair may keep its filesystems short while it grows


BEST_EFFORT = ("limits are best-effort: no cgroup this harness may write offers memory and pids "
               "(v2 delegated, or v1), so a polling watchdog enforces --memory-limit and "
               "--max-processes and can miss memory the kernel charges to no process it reads "
               "(SECURITY.md, limits)")


class PairLimits(NamedTuple):
    """The limits of one pair's tree, one name each from option to supervisor (design §2.1);
    None: no such limit."""

    memory_limit: int | None = DEFAULT_MEMORY_LIMIT  # bytes
    max_processes: int | None = DEFAULT_MAX_PROCESSES  # tasks: processes and threads
    mechanism: str = "auto"  # one of MECHANISMS: any but "auto" forces it
    disk_limit: int | None = None  # blocks under disk_paths
    disk_files: int | None = None  # entries under disk_paths
    disk_paths: tuple[str, ...] = ()  # the pair's writable trees (none: the disk is not watched)
    keep_free: int | None = None  # --disk-reserve: free bytes its filesystems keep (None: 0)
    disk_mount: str | None = None  # the pair's own filesystem (supervise.pair_fs), if it has one
    disk_ledger: str | None = None  # the run's disk ledger directory (supervise.disk_ledger)

    def any(self) -> bool:
        return (self.memory_limit is not None or self.max_processes is not None
                or self.watches_disk())

    def watches_disk(self) -> bool:
        return bool(self.disk_paths) and (self.disk_limit is not None
                                          or self.disk_files is not None)

    def to_spec(self) -> list[object]:
        """JSON-able form for the reaper (``from_spec`` reads it back)."""
        return [self.memory_limit, self.max_processes, self.mechanism, self.disk_limit,
                self.disk_files, list(self.disk_paths), self.keep_free, self.disk_mount,
                self.disk_ledger]

    @classmethod
    def from_spec(cls, data: list[object]) -> PairLimits:
        memory, processes, mechanism, disk_limit, disk_files, paths, reserve, mount, ledger = data
        if not isinstance(paths, list):
            raise ValueError("malformed limits spec")
        return cls(memory, processes, str(mechanism), disk_limit, disk_files,  # type: ignore[arg-type]
                   tuple(str(p) for p in paths), reserve,  # type: ignore[arg-type]
                   None if mount is None else str(mount), None if ledger is None else str(ledger))


# The option that sets each limit the kernel mechanism may refuse
LIMIT_OPTIONS = {"memory": "--memory-limit", "processes": "--max-processes"}
_downgrades: list[str] = []  # why a pair's group could not be made, oldest first
_downgrades_lock = threading.Lock()


def refused(limits: PairLimits) -> str | None:
    """Why the kernel mechanism refuses one of ``limits``' values, naming its option, found on a
    probe group when the run starts (None: it takes them, or the watchdog will enforce them):
    the run refuses the setting up front rather than every pair falling back to the watchdog."""
    if limits.mechanism == "watchdog" or (limits.memory_limit is None
                                          and limits.max_processes is None):
        return None
    found = cgroup.refused_value(limits.memory_limit, limits.max_processes)
    if found is None:
        return None
    return (f"{LIMIT_OPTIONS[found.which]} {found.value}: the kernel refuses it ({found.file}: "
            f"{found.reason}); choose a value the {found.which} controller takes")


def downgrades() -> tuple[str, ...]:
    """Why each pair whose cgroup could not be made ran under the watchdog instead, in this
    process so far (``enforcement``)."""
    with _downgrades_lock:
        return tuple(_downgrades)


def downgrade_warning(pair: str) -> str:
    """The warning a run owes for ``pair``, which ran under the watchdog though the kernel
    mechanism was there, because its group could not be made."""
    found = downgrades()
    why = found[-1] if found else "its cgroup could not be made"
    return (f"{pair}: limits are best-effort for this pair: its cgroup could not be made "
            f"({why}), so a polling watchdog enforced --memory-limit and --max-processes "
            "(SECURITY.md, limits)")


def best_effort(limits: PairLimits) -> str | None:
    """The warning a run owes when only the watchdog will enforce ``limits``' memory and
    process limits (None: the kernel will, or there are none)."""
    if limits.memory_limit is None and limits.max_processes is None:
        return None
    if limits.mechanism == "watchdog":
        return f"{BEST_EFFORT}: the watchdog was asked for"
    if limits.mechanism == "auto" and cgroup.cgroup_parent() is None:
        return f"{BEST_EFFORT}: {cgroup.unavailable_reason()}"
    return None


def exceeded_by(limits: PairLimits, memory: int, tasks: int) -> str | None:
    """Which limit a measured tree is over ("memory" first), if any (pure)."""
    if limits.memory_limit is not None and memory > limits.memory_limit:
        return "memory"
    if limits.max_processes is not None and tasks > limits.max_processes:
        return "processes"
    return None


# --- the watchdog (runs in the reaper) -------------------------------------------------------


class _WatchState:
    """The reaper's watch of its one pair: when the next memory look and the next walk are due
    (``soon``: while its filesystems are short), since when they have been short of space,
    whether they had room at some walk, and what its filesystem held besides the pairs when
    the watch began (``baseline``: the disk ledger's reference)."""

    due = 0.0
    soon = 0.0
    short_since: float | None = None
    had_room = False  # False: never seen with room (a host short from the start)
    baseline: int | None = None
    memory_due = 0.0


_watch = _WatchState()


def watch_interval(limits: PairLimits) -> float:
    """How often the reaper looks: every ``disk.SPACE_INTERVAL`` while it watches a disk (the
    free-space sample, or the ``statvfs`` of its own filesystem, is cheap; walks and memory
    keep their own pace), else ``WATCHDOG_INTERVAL``."""
    return disk.SPACE_INTERVAL if limits.watches_disk() else WATCHDOG_INTERVAL


def disk_exceeded(limits: PairLimits, pids: Callable[[], list[int]]) -> tuple[str, int] | None:
    """Which disk limit the pair is over, and the count.

    On a filesystem of its own (``limits.disk_mount``) that is the filesystem's own count
    (``pair_fs.exceeded``), at every look. Else (the watchdog) its use is what a walk of its
    trees finds plus the unlinked files its processes (``pids()``) hold open plus, when they
    hold a socket, the space its filesystem lost that no pair's walk explains
    (``_charged``); a walk that cannot read an entry is over. A walk is due every
    ``DISK_INTERVAL`` and, while its filesystems are short of space, at every look (each never
    more often than four times the last walk's cost), so a fill-and-free pulse longer than
    ``disk.SPACE_INTERVAL`` is measured while it lasts. Filesystems that had room at some walk
    and stay short of the reserve for ``DISK_SHORT_GRACE`` end, as over ``disk_bytes``, the
    pair writing there that is charged the most (more than ``disk.SHORT_BYTES``, and enough
    that freeing it would give them their reserve back), whether or not its use grew: no pair
    holds a disk full for its deadline, and a host short of space before the pair started, or
    by its own doing, blames it for nothing."""
    if not limits.watches_disk():
        return None
    if limits.disk_mount is not None:
        return pair_fs.exceeded(limits.disk_mount, limits.disk_limit, limits.disk_files)
    now = time.monotonic()
    rooms = [disk.room(p) for p in disk.distinct_filesystems(limits.disk_paths)]
    short = any(disk.is_short(r, limits.keep_free or 0) for r in rooms)
    if not short:
        _watch.short_since = None
    if now < (_watch.soon if short else _watch.due):
        return None
    used = disk.usage(limits.disk_paths, limits.disk_files)
    devices = disk.devices(limits.disk_paths)
    held = disk.held(pids(), devices)
    mine = used.bytes + held.bytes
    charged, largest = _charged(limits, devices, mine, held.sockets)
    used = used._replace(bytes=charged)
    spent = time.monotonic() - now
    _watch.soon = time.monotonic() + 4 * spent
    _watch.due = max(_watch.soon, time.monotonic() + DISK_INTERVAL)
    which = disk.exceeded_by(used, limits.disk_limit, limits.disk_files)
    if not short:
        _watch.had_room = True
    elif which is None and _watch.had_room:
        if _watch.short_since is None:
            _watch.short_since = now
        elif (now - _watch.short_since >= DISK_SHORT_GRACE and largest
              and charged > disk.SHORT_BYTES and _would_restore(rooms, charged, limits)):
            which = "disk_bytes"
    if which is None:
        return None
    return which, used.bytes if which == "disk_bytes" else used.files


def _would_restore(rooms: list[disk.Room | None], charged: int, limits: PairLimits) -> bool:
    """Whether freeing what the pair is charged would give its filesystems their reserve back:
    a host that ran short by itself blames no pair for it."""
    free = min((r.bytes for r in rooms if r is not None), default=None)
    return free is not None and free + charged >= max(limits.keep_free or 0, disk.SHORT_BYTES)


def _charged(limits: PairLimits, devices: set[int], mine: int, sockets: bool
             ) -> tuple[int, bool]:
    """What the pair is charged on its filesystem, and whether no other pair there is charged
    more. Through the run's disk ledger: the space the filesystem lost since the watch began
    beyond what every pair's last walk found (less ``disk.SHORT_BYTES`` of noise: the
    harness's own files, a tree being copied in) is charged to a pair whose processes hold a
    socket, since only a descriptor in flight in one hides a file from every walk and every
    ``/proc/<pid>/fd``."""
    if limits.disk_ledger is None or len(devices) != 1 or not limits.disk_paths:
        return mine, True
    device = next(iter(devices))
    own = disk_ledger.entry_path(limits.disk_ledger, limits.disk_paths[0])
    others = disk_ledger.others(limits.disk_ledger, own, device)
    fs_used = disk_ledger.filesystem_used(limits.disk_paths[0])
    explained = mine + sum(e.used for e in others)
    charged = mine
    if fs_used is not None:
        if _watch.baseline is None:
            _watch.baseline = fs_used - explained
        lost = fs_used - _watch.baseline - explained
        if sockets and lost > disk.SHORT_BYTES:
            charged += lost
    disk_ledger.record(own, disk_ledger.Entry(device, mine, sockets, charged))
    return charged, all(charged >= e.charged for e in others)


def watch(limits: PairLimits, group: cgroup.PairGroup | None, emit: Callable[..., None]) -> bool:
    """In the reaper: one look at its tree against the limits; past one, report which (with
    ``emit``) and kill the whole tree. Whether it killed."""
    observed: int | None = None
    which: str | None = None
    pids: list[int] = []
    now = time.monotonic()
    if group is not None:  # the kernel enforces; a refused fork or an OOM kill ends the pair
        which = group.exceeded()
    elif (limits.memory_limit is not None or limits.max_processes is not None) \
            and now >= _watch.memory_due:
        _watch.memory_due = now + WATCHDOG_INTERVAL
        memory, tasks, pids = procfs.tree_usage(os.getpid())
        which = exceeded_by(limits, memory, tasks)
        observed = memory if which == "memory" else tasks
    if which is None:
        found = disk_exceeded(limits, lambda: pids or procfs.tree_pids(os.getpid()))
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
    without limits; ProcessStartError when a kernel mechanism is asked for and cannot work.
    Where the kernel mechanism is there but this pair's group cannot be made, the pair runs
    under the watchdog and the reason is kept (``downgrades``): its verdict's
    ``limits.mechanism`` says watchdog, and the run warns and records ``limits_best_effort``
    (never a silent downgrade)."""
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
            with _downgrades_lock:
                _downgrades.append(str(exc) or type(exc).__name__)
    elif forced:
        raise ProcessStartError(f"cannot limit {name!r} with {limits.mechanism}: "
                                f"{cgroup.unavailable_reason()}")
    return None, "watchdog"
