"""What ``/proc`` says about processes: the process table, a tree's processes and threads, and
the memory a tree and its sandboxes hold as the watchdog counts it (design §5.5 Limits;
lean_eval.resources enforces the limits with it).

Invariants:
- A tree is walked through the kernel's ``/proc/<pid>/task/<tid>/children`` lists, so its cost
  is the tree's, not the machine's; kernels without them (no CONFIG_PROC_CHILDREN) get one pass
  over ``/proc/<pid>/stat`` of every process. Zombies are never listed. Tasks count threads,
  like ``pids.max``.
- A process counts its anonymous and shared-memory pages proportionally to their sharers
  (``Pss_Anon + Pss_Shmem`` of ``/proc/<pid>/smaps_rollup``): ``MAP_SHARED`` anonymous
  mappings, memfds and mapped ``/dev/shm`` files count, once across the processes sharing them;
  mapped files such as .olean do not. ``statm_private`` (resident minus shared, which misses all
  shared memory) is only the fallback where smaps_rollup cannot be read.
- ``private_tmpfs`` adds what the tmpfs mounts private to the pair's sandboxes hold
  (PRIVATE_TMPFS of every mount namespace in the tree other than the harness's own, by
  ``statvfs``, each mount once): pages stored there and mapped by no process count too. A tmpfs
  page both stored and mapped counts twice: the error is on the safe side.
- A process that is gone, or a file of it that cannot be read, counts nothing.
- This module imports no third-party package: the reaper imports it through lean_eval.resources.
"""

from __future__ import annotations

import contextlib
import os
import threading

PRIVATE_TMPFS = ("dev", "dev/shm", "tmp", "run", "var")  # tmpfs mounts of Lake's sandbox steps
_PAGE = os.sysconf("SC_PAGE_SIZE")


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
    memory = sum(map(process_memory, pids)) + private_tmpfs(pids)
    return memory, sum(threads.values()), pids


def process_memory(pid: int) -> int:
    """Bytes of ``pid``'s anonymous and shared-memory pages, proportionally to its sharers
    (``Pss_Anon + Pss_Shmem``); kernels before 5.x lack those fields: ``Pss`` less ``Pss_File``
    where given, else all of ``Pss``. 0 for a process that is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            text = f.read()
    except OSError:
        return statm_private(pid)
    kb: dict[bytes, int] = {}
    for line in text.splitlines()[1:]:
        name, _, rest = line.partition(b":")
        with contextlib.suppress(ValueError, IndexError):
            kb[name] = int(rest.split()[0])
    if b"Pss_Anon" in kb:
        return (kb[b"Pss_Anon"] + kb.get(b"Pss_Shmem", 0)) * 1024
    return max(0, kb.get(b"Pss", 0) - kb.get(b"Pss_File", 0)) * 1024


def statm_private(pid: int) -> int:
    """The old measure (resident minus shared), only where smaps_rollup cannot be read."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open(f"/proc/{pid}/statm", "rb") as f:
            fields = f.read().split()
        return max(0, int(fields[1]) - int(fields[2])) * _PAGE
    return 0


_OWN_MNT = os.readlink("/proc/self/ns/mnt") if os.path.exists("/proc/self/ns/mnt") else ""


def private_tmpfs(pids: list[int]) -> int:
    """Bytes the tmpfs mounts of the tree's own mount namespaces hold (each mount once), see the
    module invariants; a namespace that cannot be inspected counts nothing."""
    namespaces: dict[str, int] = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            namespace = os.readlink(f"/proc/{pid}/ns/mnt")
            if namespace != _OWN_MNT:
                namespaces.setdefault(namespace, pid)
    used, seen = 0, set()
    for pid in namespaces.values():
        for point in _tmpfs_points(pid):
            path = f"/proc/{pid}/root/{point}"
            with contextlib.suppress(OSError):
                dev = os.stat(path).st_dev
                if dev in seen:
                    continue
                seen.add(dev)
                st = os.statvfs(path)
                used += (st.f_blocks - st.f_bfree) * st.f_frsize
    return used


def _tmpfs_points(pid: int) -> list[str]:
    """Which of PRIVATE_TMPFS are tmpfs mount points in ``pid``'s mount namespace."""
    try:
        with open(f"/proc/{pid}/mountinfo", "rb") as f:
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        left, _, right = line.partition(" - ")
        fields = left.split()
        if len(fields) > 4 and right.split()[:1] == ["tmpfs"]:
            point = fields[4].lstrip("/")
            if point in PRIVATE_TMPFS:
                found.append(point)
    return found
