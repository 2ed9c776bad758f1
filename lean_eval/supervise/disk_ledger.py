"""The run's disk ledger (design §5.5 "Disk", the watchdog): what each running pair's last walk
found on its filesystem, so that each pair's reaper can tell how much of the space its
filesystem lost no walk explains (files whose last descriptor is in flight in a socket, which
no ``/proc/<pid>/fd`` shows) and which pair holds the most.

- One entry per pair, named by its workspace, in a directory under the run's scoring root (which
  every sandbox masks: no build can write it). Its reaper alone writes it (whole, by rename);
  the harness removes it after the pair's tree, so a tree is explained for as long as it is on
  disk (``forget``).
Imported by the reaper: standard library only (``supervise.reaper``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from typing import NamedTuple

LEDGER = ".disk-ledger"  # under the run's scoring root


class Entry(NamedTuple):
    """One pair's last walk: its filesystem, what it holds, whether its processes hold a
    socket (through which a descriptor may be in flight) and its share of the unexplained."""

    device: int
    used: int
    sockets: bool
    charged: int  # what the pair is charged: ``used`` plus what it may be hiding


def entry_path(ledger: str, workspace: str) -> str:
    """Where the pair whose workspace is ``workspace`` records its walks (pure)."""
    name = hashlib.sha256(os.fsencode(workspace)).hexdigest()[:24]
    return os.path.join(ledger, name)


def record(path: str, entry: Entry) -> None:
    """Replace the entry at ``path`` (a fault is the harness's to notice: the entry is then
    stale, and the walks of the other pairs simply explain less)."""
    text = f"{entry.device} {entry.used} {int(entry.sockets)} {entry.charged}\n"
    temporary = f"{path}.tmp"
    with contextlib.suppress(OSError):
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
                     | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, text.encode("ascii"))
        finally:
            os.close(fd)
        os.replace(temporary, path)


def others(ledger: str, own: str, device: int) -> list[Entry]:
    """Every other pair's entry on ``device``; one that cannot be read is left out."""
    found: list[Entry] = []
    try:
        names = os.listdir(ledger)
    except OSError:
        return found
    for name in names:
        path = os.path.join(ledger, name)
        if name.endswith(".tmp") or path == own:
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                fields = os.read(fd, 256).split()
            finally:
                os.close(fd)
            entry = Entry(int(fields[0]), int(fields[1]), fields[2] == b"1", int(fields[3]))
        except (OSError, ValueError, IndexError):
            continue
        if entry.device == device:
            found.append(entry)
    return found


def filesystem_used(path: str) -> int | None:
    """Bytes in use on the filesystem holding ``path`` (None: it cannot be asked)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def forget(ledger: str, workspace: str) -> None:
    """Remove the pair's entry (after its tree): never raises."""
    path = entry_path(ledger, workspace)
    for name in (path, f"{path}.tmp"):
        with contextlib.suppress(OSError):
            os.unlink(name)
