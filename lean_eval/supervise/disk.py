"""Disk accounting for the watchdog (design §5.5 "Disk"; a pair with a filesystem of its own is
measured by that filesystem instead, ``supervise.pair_fs``): what a pair's writable trees hold
and how much room a filesystem has, both measured by the harness, never read from a pair's
output. ``usage`` walks by directory descriptor, stops past ``max_files`` entries (one look
costs at most the budget whatever a build left) and fails closed; ``held`` adds the files a
pair's processes hold open after unlinking them; a ``SpaceWatch`` sample every
``SPACE_INTERVAL`` seconds can miss a faster fill-and-free (the reaper's own samples,
``supervise.resources``, catch a pair that repeats one).
Imported by the reaper: standard library only (``supervise.reaper``).
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from lean_eval.supervise import procfs

DEFAULT_DISK_BYTES = 4 << 30  # a pair's trees: sources, .lake build outputs, Lake's temp files
DEFAULT_DISK_FILES = 100_000  # entries; also bounds what removing a pair's tree costs
DEFAULT_DISK_RESERVE = 1 << 30  # free space admission keeps on the scoring and output fs
SHORT_BYTES = 1 << 20  # "short of space" with the reserve off: less than this left
SHORT_FILES = 64  # ... or fewer inodes than this
SPACE_INTERVAL = 0.02
_BLOCK = 512  # st_blocks unit


class Usage(NamedTuple):
    """What the walked trees hold; ``complete`` is False when the walk stopped at max_files,
    ``readable`` False when an entry could not be read (then the pair is over its budget:
    the walk fails closed)."""

    bytes: int
    files: int
    complete: bool = True
    readable: bool = True


_DIR_OPEN = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_DEPTH = 256  # directory levels the walk descends (two descriptors each); deeper: over


class _UnreadableError(Exception):
    pass


def usage(paths: Iterable[str], max_files: int | None = None) -> Usage:
    """Allocated bytes (``st_blocks``) and entries under ``paths``, links not followed and a
    hard-linked inode once; missing paths are empty. Every directory is opened relative to its
    parent's descriptor, so no depth of names reaches ``PATH_MAX``; an entry that vanishes
    meanwhile is skipped, one that cannot be read (or lies deeper than ``MAX_DEPTH``) makes the
    result unreadable."""
    seen: set[tuple[int, int]] = set()
    count = [0, 0]  # bytes, files
    try:
        for top in paths:
            if not _walk(os.fspath(top), seen, count, max_files):
                return Usage(count[0], count[1], complete=False)
    except _UnreadableError:
        return Usage(count[0], count[1], readable=False)
    return Usage(count[0], count[1])


def _walk(top: str, seen: set[tuple[int, int]], count: list[int], max_files: int | None) -> bool:
    """Add what ``top`` holds to ``count``; False when it passed ``max_files``."""
    try:
        fd = os.open(top, _DIR_OPEN)
    except FileNotFoundError:
        return True
    except OSError as exc:
        raise _UnreadableError from exc
    stack: list[tuple[int, Iterator[os.DirEntry[str]]]] = []
    try:
        stack.append((fd, _entries(fd)))
        while stack:
            here, entries = stack[-1]
            entry = next(entries, None)
            if entry is None:
                stack.pop()
                _close(here, entries)
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise _UnreadableError from exc
            count[1] += 1
            if max_files is not None and count[1] > max_files:
                return False
            if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):
                if (st.st_dev, st.st_ino) in seen:
                    continue
                seen.add((st.st_dev, st.st_ino))
            count[0] += st.st_blocks * _BLOCK
            if stat.S_ISDIR(st.st_mode):
                if len(stack) >= MAX_DEPTH:
                    raise _UnreadableError
                try:
                    child = os.open(entry.name, _DIR_OPEN, dir_fd=here)
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    raise _UnreadableError from exc
                stack.append((child, _entries(child)))
    finally:
        for here, entries in stack:
            _close(here, entries)
    return True


def _entries(fd: int) -> Iterator[os.DirEntry[str]]:
    """The entries of the directory open at ``fd`` (a lazy scan: a huge directory costs what
    is read of it)."""
    try:
        with os.scandir(fd) as it:
            yield from it
    except OSError as exc:
        raise _UnreadableError from exc


def _close(fd: int, entries: Iterator[os.DirEntry[str]]) -> None:
    close = getattr(entries, "close", None)
    if close is not None:
        close()
    with contextlib.suppress(OSError):
        os.close(fd)


class Held(NamedTuple):
    """What a tree's processes hold open: unlinked files' bytes, and whether any socket (a
    descriptor in flight in one is found by no ``/proc/<pid>/fd``: ``disk_ledger``)."""

    bytes: int
    sockets: bool


def held(pids: Iterable[int], devices: set[int], proc: str = "/proc") -> Held:
    """Allocated bytes of the files on ``devices`` that ``pids`` hold open with no name left
    (``st_nlink`` 0): a walk of the trees no longer sees them, the filesystem still holds them.
    Each inode once; the descriptors are found through ``/proc/<pid>/fd``."""
    seen: set[tuple[int, int]] = set()
    total = 0
    sockets = False
    for path in procfs.open_descriptors(pids, proc):
        try:
            st = os.stat(path)
        except OSError:
            continue
        if stat.S_ISSOCK(st.st_mode):
            sockets = True
            continue
        key = (st.st_dev, st.st_ino)
        if st.st_nlink == 0 and st.st_dev in devices and key not in seen \
                and stat.S_ISREG(st.st_mode):
            seen.add(key)
            total += st.st_blocks * _BLOCK
    return Held(total, sockets)


def held_unlinked(pids: Iterable[int], devices: set[int], proc: str = "/proc") -> int:
    """The bytes of :func:`held`."""
    return held(pids, devices, proc).bytes


def devices(paths: Iterable[str]) -> set[int]:
    """The devices (``st_dev``) holding ``paths``; missing ones are left out."""
    found: set[int] = set()
    for path in paths:
        with contextlib.suppress(OSError):
            found.add(os.stat(path).st_dev)
    return found


def exceeded_by(used: Usage, max_bytes: int | None, max_files: int | None) -> str | None:
    """Which disk limit ``used`` is over ("disk_bytes" first, and for a walk that could not
    read an entry), if any (pure)."""
    if not used.readable:
        return "disk_bytes"
    if max_bytes is not None and used.bytes > max_bytes:
        return "disk_bytes"
    if max_files is not None and used.files > max_files:
        return "disk_files"
    return None


class Room(NamedTuple):
    """What an unprivileged writer can still use on one filesystem."""

    bytes: int
    files: int


def room(path: str) -> Room | None:
    """Free bytes and inodes of the filesystem holding ``path`` (None when it cannot be asked)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    # f_files == 0: the filesystem does not count inodes (btrfs and the like): never short of them
    files = st.f_favail if st.f_files else 1 << 62
    return Room(st.f_bavail * st.f_frsize, files)


def is_short(found: Room | None, reserve: int) -> bool:
    """Whether ``found`` is short of space for a reserve of ``reserve`` bytes (pure)."""
    if found is None:
        return False
    return found.bytes < max(reserve, SHORT_BYTES) or found.files < SHORT_FILES


def distinct_filesystems(paths: Sequence[str]) -> tuple[str, ...]:
    """One path per filesystem among ``paths`` (by ``st_dev``), in order."""
    seen: set[int] = set()
    kept: list[str] = []
    for path in paths:
        with contextlib.suppress(OSError):
            dev = os.stat(path).st_dev
            if dev not in seen:
                seen.add(dev)
                kept.append(path)
    return tuple(kept)


class SpaceWatch:
    """Samples the given filesystems until ``close``; counts the samples that found one short."""

    def __init__(self, paths: Sequence[str], reserve: int,
                 interval: float = SPACE_INTERVAL) -> None:
        self.paths, self.reserve, self.interval = distinct_filesystems(paths), reserve, interval
        self._short = 0
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="space-watch", daemon=True)
        self._thread.start()

    def sample(self) -> bool:
        """Look once now; whether some filesystem is short (and count it)."""
        short = any(is_short(room(p), self.reserve) for p in self.paths)
        if short:
            with self._lock:
                self._short += 1
        return short

    def _loop(self) -> None:
        while not self._closed.wait(self.interval):
            self.sample()

    def mark(self) -> int:
        """A token for ``short_since``: the number of short samples so far."""
        with self._lock:
            return self._short

    def short_since(self, token: int) -> bool:
        """Whether a filesystem was short at some sample after ``mark()`` returned ``token``, or
        is short now."""
        now = self.sample()
        with self._lock:
            return now or self._short > token

    def close(self) -> None:
        self._closed.set()
        self._thread.join()
