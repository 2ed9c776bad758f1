"""What ``/proc`` says about processes: the process table, a tree's processes and threads, and
the memory the watchdog counts for a tree (design §5.5 "Limits"; ``supervise.resources`` uses
it). A process that is gone, or a file of it that cannot be read, counts nothing. Imported by
the reaper: standard library only (``supervise.reaper``).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Iterator

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
    """pid -> threads of every process below ``root``, through the kernel's
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


def tree_pids(root: int) -> list[int]:
    """Every process below ``root``."""
    if _WALKABLE:
        return list(_tree(root))
    return descendants(root, process_table())


def tree_usage(root: int) -> tuple[int, int, list[int]]:
    """(memory bytes, tasks, pids) of the tree below ``root``; tasks count threads."""
    if _WALKABLE:
        threads = _tree(root)
    else:  # kernels without CONFIG_PROC_CHILDREN: one pass over every process
        table = process_table()
        threads = {pid: table[pid][1] for pid in descendants(root, table)}
    pids = list(threads)
    memory = (sum(map(process_memory, pids)) + private_tmpfs(pids) + held_memfds(pids)
              + sysv_segments(pids))
    return memory, sum(threads.values()), pids


def process_memory(pid: int) -> int:
    """``Pss_Anon + Pss_Shmem`` (else ``Pss - Pss_File``): shared anonymous memory, memfds and
    mapped ``/dev/shm`` files count once across their sharers, mapped files not at all."""
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
    """Resident minus shared (blind to shared memory): only where smaps_rollup cannot be read."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open(f"/proc/{pid}/statm", "rb") as f:
            fields = f.read().split()
        return max(0, int(fields[1]) - int(fields[2])) * _PAGE
    return 0


_OWN_MNT = os.readlink("/proc/self/ns/mnt") if os.path.exists("/proc/self/ns/mnt") else ""


def private_tmpfs(pids: list[int], proc: str = "/proc") -> int:
    """Bytes every tmpfs of the tree's own mount namespaces holds, wherever it is mounted
    (Lake's ``/tmp``, ``/home``, ``/root``, the wrapper's masks, ...), each once (a page also
    mapped counts twice: on the safe side). A mount counts only when the directory
    opened through ``/proc/<pid>/root`` is on the device ``mountinfo`` names (bwrap changes a
    sandbox's root between the two reads) and no tmpfs of the harness's own has that device (a
    host ``/dev/shm`` a fresh namespace still shows)."""
    namespaces = _foreign_namespaces(pids, "mnt", _OWN_MNT, proc)
    if not namespaces:
        return 0
    seen = {device for _, device in _tmpfs_mounts(f"{proc}/self", None)}  # the host's tmpfs
    used = 0
    for pid in namespaces.values():
        for point, device in _tmpfs_mounts(f"{proc}/{pid}", None):
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


def _tmpfs_mounts(process: str, points: tuple[str, ...] | None,
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


def held_memfds(pids: list[int], proc: str = "/proc") -> int:
    """Bytes of the memfds the tree's processes hold open, each once: a memfd filled with
    ``write()`` and never mapped is in no process's ``Pss`` (one also mapped counts twice)."""
    seen: set[tuple[int, int]] = set()
    used = 0
    for path in open_descriptors(pids, proc):
        try:
            if not os.readlink(path).startswith("/memfd:"):
                continue
            st = os.stat(path)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            used += st.st_blocks * 512
    return used


def open_descriptors(pids: Iterable[int], proc: str = "/proc") -> Iterator[str]:
    """The ``/proc/<pid>/fd/<n>`` path of each descriptor ``pids`` hold (a process that ended
    meanwhile has none)."""
    for pid in pids:
        try:
            fds = os.listdir(f"{proc}/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            yield f"{proc}/{pid}/fd/{fd}"


_OWN_IPC = os.readlink("/proc/self/ns/ipc") if os.path.exists("/proc/self/ns/ipc") else ""
_CLONE_NEWIPC = 0x08000000


def sysv_segments(pids: list[int], proc: str = "/proc") -> int:
    """Bytes (resident and swapped) of the SysV shared memory segments in the tree's own IPC
    namespaces, attached or not. ``/proc/sysvipc/shm`` shows the reader's namespace, so the
    reaper joins each for one read (``setns`` needs CAP_SYS_ADMIN over it: a root harness; an
    unprivileged one counts nothing here, SECURITY.md)."""
    namespaces = _foreign_namespaces(pids, "ipc", _OWN_IPC, proc)
    return sum(_segments_in(f"{proc}/{pid}/ns/ipc") for pid in namespaces.values())


def _segments_in(namespace: str) -> int:
    import ctypes  # only when a tree has an IPC namespace of its own

    libc = ctypes.CDLL(None, use_errno=True)
    try:
        own = os.open("/proc/self/ns/ipc", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        try:
            target = os.open(namespace, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return 0
        try:
            if libc.setns(target, _CLONE_NEWIPC) != 0:
                return 0
        finally:
            os.close(target)
        try:
            with open("/proc/sysvipc/shm", "rb") as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            lines = []
        finally:
            libc.setns(own, _CLONE_NEWIPC)
    finally:
        os.close(own)
    used = 0
    for line in lines:
        fields = line.split()
        with contextlib.suppress(ValueError, IndexError):
            used += int(fields[14]) + int(fields[15])  # rss, swap (bytes)
    return used


def _foreign_namespaces(pids: list[int], kind: str, own: str, proc: str) -> dict[str, int]:
    """Each namespace of ``kind`` (``mnt``, ``ipc``) a process of ``pids`` is in, other than the
    harness's ``own``, with one of its pids (a process that ended meanwhile is left out)."""
    namespaces: dict[str, int] = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            namespace = os.readlink(f"{proc}/{pid}/ns/{kind}")
            if namespace != own:
                namespaces.setdefault(namespace, pid)
    return namespaces
