"""What ``/proc`` says about processes: the process table, a tree's processes and threads, and
the memory a tree and its sandboxes hold as the watchdog counts it (design §5.5 Limits;
lean_eval.supervise.resources enforces the limits with it).

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
- A mount counts only when the directory opened through ``/proc/<pid>/root`` is on the device
  its ``mountinfo`` line names, and only when no tmpfs of the harness's own namespace has that
  device. A sandbox being set up changes its root between the two reads (bwrap mounts its base
  tmpfs at ``/tmp`` before it pivots), so without the first check the path reaches the disk and
  the disk's usage is counted as the pair's memory; without the second, a host tmpfs (such as
  ``/dev/shm``) that a fresh namespace still shows is counted as the pair's.
- A process that is gone, or a file of it that cannot be read, counts nothing.
- This module imports no third-party package: the reaper imports it through
lean_eval.supervise.resources.
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


def private_tmpfs(pids: list[int], proc: str = "/proc") -> int:
    """Bytes the tmpfs mounts of the tree's own mount namespaces hold (each mount once), see the
    module invariants; a namespace that cannot be inspected counts nothing. ``proc`` is where
    procfs is mounted (a test gives a tree of its own)."""
    namespaces: dict[str, int] = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            namespace = os.readlink(f"{proc}/{pid}/ns/mnt")
            if namespace != _OWN_MNT:
                namespaces.setdefault(namespace, pid)
    if not namespaces:
        return 0
    seen = {device for _, device in _tmpfs_mounts(f"{proc}/self", None)}  # the host's tmpfs
    used = 0
    for pid in namespaces.values():
        for point, device in _tmpfs_mounts(f"{proc}/{pid}"):
            if device not in seen:
                found = _tmpfs_used(f"{proc}/{pid}/root/{point}", device)
                if found is not None:
                    seen.add(device)
                    used += found
    return used


def _tmpfs_used(path: str, device: int) -> int | None:
    """Bytes stored in the filesystem at ``path`` if it is on ``device`` (fstat and fstatvfs of
    one open directory, so both describe the same mount), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if os.fstat(fd).st_dev != device:
            return None
        st = os.fstatvfs(fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def _tmpfs_mounts(process: str, points: tuple[str, ...] | None = PRIVATE_TMPFS,
                  ) -> list[tuple[str, int]]:
    """(mount point, device) of the tmpfs mounts at ``points`` (None: anywhere) in the mount
    namespace of the process whose ``/proc`` directory is ``process``."""
    try:
        with open(f"{process}/mountinfo", "rb") as f:
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        left, _, right = line.partition(" - ")
        fields = left.split()
        if len(fields) > 4 and right.split()[:1] == ["tmpfs"]:
            point = fields[4].lstrip("/")
            major, _, minor = fields[2].partition(":")
            if (points is None or point in points) and major.isdigit() and minor.isdigit():
                found.append((point, os.makedev(int(major), int(minor))))
    return found
