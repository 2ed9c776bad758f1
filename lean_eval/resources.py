"""Per-pair memory and process limits: a cgroup v2 group where the harness can make one, else a
watchdog over the pair's process tree (design §5.5 Limits).

Invariants:
- A pair's limits hold for its whole tree: the child joins its cgroup between fork and exec (it
  writes ``0`` to ``cgroup.procs`` in its pre-exec hook), so every process Lake, bwrap or a
  submission starts is born inside it; the watchdog measures every descendant of the pair's
  reaper, which is a child subreaper, so no descendant can leave the tree it measures.
- The cgroup mechanism needs a cgroup2 hierarchy that offers ``memory`` and ``pids`` to a group
  the harness may write; the harness makes its own parent group ``lean-eval-<pid>`` under its
  cgroup and, when that cgroup holds processes (the no-internal-process rule refuses to enable
  controllers then), first moves itself into a leaf ``lean-eval-harness-<pid>``. Anything short
  of that (cgroup v1, controllers not delegated, read-only) falls back to the watchdog, and
  ``unavailable_reason()`` says why. Exceeding a limit never yields ``rejected``.
- The watchdog counts tasks (threads included, like ``pids.max``) and memory: each process's
  proportional anonymous and shared-memory pages (``Pss_Anon + Pss_Shmem`` of
  ``/proc/<pid>/smaps_rollup``, so ``MAP_SHARED`` anonymous mappings, memfds and mapped
  ``/dev/shm`` files count, once across the processes sharing them, while mapped files such as
  .olean do not), plus what the tmpfs mounts private to the pair's sandboxes hold (``/dev``
  with its ``/dev/shm``, ``/tmp``, ``/run``, ``/var`` of every mount namespace in the tree other
  than the harness's own, by ``statvfs``, each mount once). A tmpfs page both stored and mapped
  counts twice: the error is on the safe side. It samples every ``WATCHDOG_INTERVAL`` seconds,
  walking only the pair's own tree (so its cost does not grow with the batch): a tree can
  overshoot a limit by what it allocates or forks in one interval. ``RLIMIT_NPROC`` is per user
  and is not used. The cgroup's ``memory.max`` charges shmem and tmpfs pages to the group that
  touched them, so the cgroup path needs no extra accounting.
- Disk (lean_eval.disk): the pair's writable trees (``disk_paths``) are walked by the same
  watchdog whatever the memory mechanism (the harness sets no filesystem quota), at most every
  ``DISK_INTERVAL`` seconds and never more often than four times the last walk's cost; past
  ``disk_bytes`` or ``disk_files`` the whole tree is killed and the limit is named.
- This module imports no third-party package: the reaper (lean_eval.process) imports it.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from lean_eval import disk
from lean_eval import memory as memory_of
from lean_eval.errors import ProcessStartError

DEFAULT_MEMORY_LIMIT = 8 << 30
DEFAULT_MAX_PROCESSES = 512
MECHANISMS = ("auto", "cgroup_v2", "watchdog")
WATCHDOG_INTERVAL = 0.1
DISK_INTERVAL = WATCHDOG_INTERVAL
_CONTROLLERS = ("memory", "pids")
_REMOVE_WAIT = 5.0


class PairLimits(NamedTuple):
    """What one run() enforces over its child's tree; None means no such limit."""

    memory: int | None = DEFAULT_MEMORY_LIMIT  # bytes
    processes: int | None = DEFAULT_MAX_PROCESSES  # tasks: processes and threads
    mechanism: str = "auto"  # one of MECHANISMS: "watchdog" forces it
    disk_bytes: int | None = None  # blocks under disk_paths
    disk_files: int | None = None  # entries under disk_paths
    disk_paths: tuple[str, ...] = ()  # the pair's writable trees

    def any(self) -> bool:
        return self.memory is not None or self.processes is not None or self.watches_disk()

    def watches_disk(self) -> bool:
        return bool(self.disk_paths) and (self.disk_bytes is not None
                                          or self.disk_files is not None)

    def to_spec(self) -> list[object]:
        """JSON-able form for the reaper (``from_spec`` reads it back)."""
        return [self.memory, self.processes, self.mechanism, self.disk_bytes, self.disk_files,
                list(self.disk_paths)]

    @classmethod
    def from_spec(cls, data: list[object]) -> PairLimits:
        memory, processes, mechanism, disk_bytes, disk_files, paths = data
        if not isinstance(paths, list):
            raise ValueError("malformed limits spec")
        return cls(memory, processes, str(mechanism), disk_bytes, disk_files,  # type: ignore[arg-type]
                   tuple(str(p) for p in paths))


def exceeded_by(limits: PairLimits, memory: int, tasks: int) -> str | None:
    """Which limit a measured tree is over ("memory" first), if any (pure)."""
    if limits.memory is not None and memory > limits.memory:
        return "memory"
    if limits.processes is not None and tasks > limits.processes:
        return "processes"
    return None


# --- the watchdog's measurements (run in the reaper) -------------------------------------------


def process_table() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, number of threads) of every live process, from /proc/<pid>/stat."""
    table: dict[int, tuple[int, int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 17 and fields[0] not in (b"Z", b"X"):
            table[int(entry.name)] = (int(fields[1]), int(fields[17]))
    return table


def descendants(root: int, table: dict[int, tuple[int, int]]) -> list[int]:
    """Every process below ``root`` in ``table`` (pure)."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: list[int] = []
    frontier = [root]
    while frontier:
        below = [c for p in frontier for c in children.get(p, ())]
        found += below
        frontier = below
    return found


def _tree(root: int) -> dict[int, int]:
    """pid -> number of threads of every process below ``root``, walking the kernel's
    ``/proc/<pid>/task/<tid>/children`` lists: the cost is the tree's, not the machine's."""
    found: dict[int, int] = {}
    frontier = [root]
    while frontier:
        below: list[int] = []
        for pid in frontier:
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            if pid != root:
                found[pid] = len(tids)
            for tid in tids:
                with (contextlib.suppress(OSError, ValueError),
                      open(f"/proc/{pid}/task/{tid}/children", "rb") as f):
                    below += map(int, f.read().split())
        frontier = [pid for pid in below if pid not in found]
    return found


_WALKABLE = os.path.exists(f"/proc/self/task/{threading.get_native_id()}/children")


def tree_usage(root: int) -> tuple[int, int, list[int]]:
    """(memory bytes as the module invariants count it, tasks, pids) of the tree below ``root``."""
    if _WALKABLE:
        threads = _tree(root)
    else:  # kernels without CONFIG_PROC_CHILDREN: one pass over every process
        table = process_table()
        threads = {pid: table[pid][1] for pid in descendants(root, table)}
    pids = list(threads)
    memory = sum(map(memory_of.process_memory, pids)) + memory_of.private_tmpfs(pids)
    return memory, sum(threads.values()), pids


_disk_due = [0.0]  # the reaper's next disk walk (one pair per reaper process)


def disk_exceeded(limits: PairLimits) -> tuple[str, int] | None:
    """When a disk walk is due: which disk limit the pair's trees are over, and the count."""
    now = time.monotonic()
    if not limits.watches_disk() or now < _disk_due[0]:
        return None
    used = disk.usage(limits.disk_paths, limits.disk_files)
    spent = time.monotonic() - now
    _disk_due[0] = time.monotonic() + max(DISK_INTERVAL, 4 * spent)
    which = disk.exceeded_by(used, limits.disk_bytes, limits.disk_files)
    if which is None:
        return None
    return which, used.bytes if which == "disk_bytes" else used.files


def watch(limits: PairLimits, group: PairGroup | None, emit: Callable[..., None]) -> bool:
    """In the reaper: one look at its tree against the limits; past one, report which (with
    ``emit``) and kill the whole tree. Whether it killed."""
    observed: int | None
    if group is not None:  # the kernel enforces; a refused fork or an OOM kill ends the pair
        which = group.exceeded()
        observed = None
    elif limits.memory is None and limits.processes is None:
        which = observed = None
    else:
        memory, tasks, _ = tree_usage(os.getpid())
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
        found = descendants(root, process_table())
        if not found:
            return
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.001)


# --- cgroup v2 ---------------------------------------------------------------------------------


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
    """The harness's own parent group with memory and pids enabled below it, or OSError."""
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


def make_pair_group(parent: Path, limits: PairLimits) -> PairGroup:
    """A fresh group for one pair with its limits written (no swap: memory.max means RAM)."""
    group = PairGroup(parent / f"pair-{next(_counter)}")
    group.path.mkdir()
    try:
        if limits.memory is not None:
            (group.path / "memory.max").write_text(str(limits.memory))
            for name, value in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
                if (group.path / name).exists():
                    (group.path / name).write_text(value)
        if limits.processes is not None:
            (group.path / "pids.max").write_text(str(limits.processes))
    except OSError:
        group.remove()
        raise
    return group


def enforcement(name: str, limits: PairLimits | None) -> tuple[PairGroup | None, str | None]:
    """How run() enforces ``limits`` for ``name``: the pair's fresh cgroup (None for the
    watchdog) and the mechanism's name; (None, None) without limits."""
    if limits is None or not limits.any():
        return None, None
    if limits.mechanism not in MECHANISMS:
        raise ValueError(f"unknown limits mechanism {limits.mechanism!r}")
    if limits.mechanism == "watchdog":
        return None, "watchdog"
    parent = cgroup_parent()
    if parent is not None:
        try:
            return make_pair_group(parent, limits), "cgroup_v2"
        except OSError as exc:
            if limits.mechanism == "cgroup_v2":
                raise ProcessStartError(f"cannot limit {name!r}: {exc}") from exc
    elif limits.mechanism == "cgroup_v2":
        raise ProcessStartError(
            f"cannot limit {name!r} with cgroup v2: {unavailable_reason()}")
    return None, "watchdog"
