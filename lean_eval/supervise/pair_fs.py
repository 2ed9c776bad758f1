"""A filesystem of a pair's own (design §5.5 "Disk"): a size-capped tmpfs mounted on the pair's
private scoring directory before the trusted workspace is copied in, so the kernel refuses a
write past the budget and ``statvfs`` of it measures everything the pair holds there (files
below any depth, unlinked ones, ones whose last descriptor is in flight in a socket).

- Mounted only where the harness may (``unavailable_reason`` tries once, on a probe directory:
  detected, never assumed), through mount(2) and umount2(2) (ctypes: no process start).
- Every mount carries the source name ``SOURCE``; only such tmpfs mounts are ever unmounted,
  and only at the directory the harness mounted it on or below a dead run's scoring directory
  (``supervise.lock.reclaim``). A build cannot make a mount anywhere: its sandbox has no
  capability and may create no user namespace (``sandbox.wrapper``).
- Its pages are memory, charged to the memory cgroup of the process that writes them: the
  pair's own group under a kernel mechanism (SECURITY.md).
Imported by the reaper: standard library only (``supervise.reaper``).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import tempfile
from pathlib import Path
from typing import NamedTuple

SOURCE = "lean-eval-pair"
MECHANISM = "filesystem"
MARGIN = 1 << 20  # bytes above the budget: the watch sees "over" before the kernel says ENOSPC
OWN_DIRECTORIES = 3  # the mount's root, workspace and state: inodes the walk never counted
_MS_NOSUID, _MS_NODEV = 2, 4
_MS_PRIVATE = 1 << 18
_MNT_DETACH, _UMOUNT_NOFOLLOW = 2, 8
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _raise(what: str, path: str) -> None:
    err = ctypes.get_errno()
    raise OSError(err, f"{what} {path}: {os.strerror(err)}")


def size_for(max_bytes: int) -> int:
    """The tmpfs ``size=`` for a budget of ``max_bytes``: the budget plus ``MARGIN``, whole
    pages (pure)."""
    return -(-(max_bytes + MARGIN) // _PAGE) * _PAGE


def mount(path: Path, max_bytes: int, max_files: int | None) -> None:
    """Mount a fresh tmpfs of the budget's size on the existing directory ``path``, with its
    mode and owner (the hand-over of the writable trees to the sandbox's user comes after);
    OSError when the kernel refuses."""
    st = os.stat(path, follow_symlinks=False)
    options = [f"size={size_for(max_bytes)}", f"mode={st.st_mode & 0o7777:o}",
               f"uid={st.st_uid}", f"gid={st.st_gid}"]
    if max_files is not None:
        options.append(f"nr_inodes={max_files + OWN_DIRECTORIES + 1}")
    target = os.fsencode(path)
    if _libc().mount(SOURCE.encode(), target, b"tmpfs", ctypes.c_ulong(_MS_NOSUID | _MS_NODEV),
                     ",".join(options).encode()) != 0:
        _raise("cannot mount a tmpfs on", str(path))
    # Private, out of its parent's peer group where / is shared (systemd's default): neither
    # the mount nor its unmount then propagates into the namespace of every sandbox started
    # meanwhile. (Removing the directory still detaches their copies; a sandbox caught in its
    # setup by that is scored again: scoring.pair.MOUNT_RACE.)
    if _libc().mount(None, target, None, ctypes.c_ulong(_MS_PRIVATE), None) != 0:
        err = ctypes.get_errno()
        unmount(path)
        raise OSError(err, f"cannot make the tmpfs on {path} private: {os.strerror(err)}")


def _unescape(field: str) -> str:
    """A mountinfo path field: spaces, tabs, newlines and backslashes are octal escapes."""
    for code in ("\\040", "\\011", "\\012", "\\134"):
        field = field.replace(code, chr(int(code[1:], 8)))
    return field


def own_mounts(mountinfo: str = "/proc/self/mountinfo") -> list[str]:
    """The mount points of every pair filesystem in this mount namespace (a tmpfs whose source
    is ``SOURCE``), deepest first."""
    try:
        with open(mountinfo, "rb") as f:
            lines = f.read().decode("utf-8", "surrogateescape").splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) > 4 and tail[:2] == ["tmpfs", SOURCE]:
            found.append(_unescape(fields[4]))
    return sorted(found, key=lambda p: p.count("/"), reverse=True)


def unmount(path: Path) -> bool:
    """Detach the pair filesystem at ``path`` (its pages are freed once nothing uses it);
    whether one was there. Never raises for a path without one."""
    point = os.fspath(path)
    try:  # the cheap look first: no mount there, no mountinfo read
        if os.lstat(point).st_dev == os.lstat(os.path.dirname(point)).st_dev:
            return False
    except OSError:
        return False
    if point not in own_mounts():
        return False
    while point in own_mounts():  # mounted twice on one directory: each is detached
        if _libc().umount2(os.fsencode(point), _MNT_DETACH | _UMOUNT_NOFOLLOW) != 0:
            _raise("cannot unmount", point)
    return True


def unmount_below(path: Path) -> list[str]:
    """Detach every pair filesystem at or below ``path`` (a dead run's scoring directory);
    the mount points detached. Other mounts there are left alone (``tree_removal`` never
    crosses into one)."""
    top = os.fspath(path).rstrip("/")
    done = []
    for point in own_mounts():
        if point == top or point.startswith(top + "/"):
            with contextlib.suppress(OSError):
                if _libc().umount2(os.fsencode(point), _MNT_DETACH | _UMOUNT_NOFOLLOW) == 0:
                    done.append(point)
    return done


@functools.cache
def unavailable_reason() -> str | None:
    """Why this harness cannot give a pair a filesystem of its own, or None: it tries, once,
    to mount (and unmount) one on a probe directory."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "mounting a size-capped filesystem per pair needs a root harness"
    try:
        probe = Path(tempfile.mkdtemp(prefix="lean-eval-fs-probe-"))
    except OSError as exc:
        return f"no probe directory for a test mount: {exc}"
    try:
        mount(probe, _PAGE, 16)
        unmount(probe)
    except OSError as exc:
        return str(exc)
    finally:
        with contextlib.suppress(OSError):
            probe.rmdir()
    return None


class Use(NamedTuple):
    """What a pair's own filesystem holds, and whether its blocks or its inodes ran out."""

    bytes: int
    files: int
    no_room: bool
    no_inodes: bool


def use(path: str) -> Use | None:
    """``statvfs`` of the pair filesystem at ``path`` (None: it cannot be asked)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    files = max(0, st.f_files - st.f_ffree - OWN_DIRECTORIES)
    return Use(used, files, st.f_bavail == 0, st.f_files > 0 and st.f_ffree == 0)


def exceeded(path: str, max_bytes: int | None, max_files: int | None) -> tuple[str, int] | None:
    """Which disk limit the pair filesystem at ``path`` is over, and the count: past the budget,
    or full (a full one is over whatever it holds, ``MARGIN`` above the budget). One that cannot
    be asked is over: this measure fails closed."""
    found = use(path)
    if found is None:
        return "disk_bytes", 0
    if found.no_room or (max_bytes is not None and found.bytes > max_bytes):
        return "disk_bytes", found.bytes
    if found.no_inodes or (max_files is not None and found.files > max_files):
        return "disk_files", found.files
    return None


def best_effort(max_bytes: int | None, max_files: int | None, keep_work: bool) -> str | None:
    """The warning a run owes when a polling watchdog, not a filesystem of the pair's own,
    enforces its disk budget (None: no budget, or the kernel enforces it)."""
    if max_bytes is None and max_files is None:
        return None
    why: str | None
    if max_bytes is None:
        why = "--disk-limit is off, and a pair filesystem needs a size"
    elif keep_work:
        why = "--keep-work keeps each pair's tree, which a filesystem of its own would not"
    else:
        why = unavailable_reason()
    if why is None:
        return None
    return ("the disk budget is best-effort: no pair gets a size-capped filesystem of its own "
            f"({why}), so a watchdog walks each pair's trees and samples free space and can "
            "miss what a pair writes between two looks (SECURITY.md, disk)")
