"""The one writer of verdicts, summaries, logs and reports (design §4.4; SECURITY.md invariant 9).

A file is written under a private name beside it (``temporary_name``, ``O_EXCL|O_NOFOLLOW``),
fsynced, then renamed: readers see the old file or the new, never half, and nothing planted at
either name is written through. ``durable=False`` skips both fsyncs: a killed process still
leaves no half file, but a power loss before ``sync_filesystem`` may leave it empty or absent
(``scoring.summary.write_summary`` syncs before the summary names such files, design §5.5
"Unchanged pairs").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import json
import os
import secrets
from pathlib import Path
from typing import Any

from pydantic import BaseModel


@functools.cache
def file_umask() -> int:
    """The process umask, read without changing it (``os.umask`` would race other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            line = next(x for x in status if x.startswith("Umask:"))
        return int(line.split()[1], 8)
    except (OSError, StopIteration, ValueError):
        return 0o022


_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def temporary_name(path: Path) -> Path:
    """``.<name>.<random>.tmp`` beside ``path``: unguessable, so nothing can be planted there in
    advance (``lock.remove_stray_temps`` removes those a killed run left)."""
    return path.parent / f".{path.name}.{secrets.token_hex(8)}.tmp"


def write_bytes_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to ``path``, old or new but never half (the module docstring says what
    ``durable=False`` gives up); ``rename(2)`` replaces a link at ``path``, never its target."""
    tmp = temporary_name(path)
    try:
        fd = os.open(tmp, _TEMP_FLAGS, 0o666)  # through the umask, as open() would
    except FileNotFoundError:  # the first file of its directory (a mkdir per write is waste)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, _TEMP_FLAGS, 0o666)
    try:
        try:
            view = memoryview(data)
            while view:  # os.write may write less than asked (a full disk, a signal)
                view = view[os.write(fd, view):]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if not durable:
        return
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` (see ``write_bytes_atomic``)."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: Path, data: Any, *, durable: bool = True) -> None:
    """Write ``data`` as JSON to ``path`` (see ``write_bytes_atomic``)."""
    text = json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False) + "\n"
    write_bytes_atomic(path, text.encode("utf-8"), durable=durable)


def write_model(path: Path, model: BaseModel, *, durable: bool = True) -> None:
    """Write a document model as JSON (see ``write_bytes_atomic``)."""
    write_json_atomic(path, model.model_dump(mode="json"), durable=durable)


@functools.cache
def _syncfs() -> Any:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        return libc.syncfs
    except (OSError, AttributeError):  # no libc syncfs (not Linux): os.sync below
        return None


def sync_filesystem(path: Path) -> None:
    """``syncfs(2)`` of ``path``'s filesystem (``sync(2)`` where there is none): the barrier for
    ``durable=False`` writes, their data, renames and directory entries alike."""
    syncfs = _syncfs()
    if syncfs is None:
        os.sync()
        return
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if syncfs(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"syncfs {path}: {os.strerror(err)}")
    finally:
        os.close(fd)
