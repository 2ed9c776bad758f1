"""Archive intake (SPEC §4.3, §5.2): decode a tar submission in memory into intake's tree.

Security invariants (SPEC §6.1, §6.2), each exercised by tests/test_intake_archives.py:

- Nothing is extracted or written, and no link is followed or materialised: the archive is
  decoded in memory as one bounded stream (``tarfile`` mode ``r|``), member by member, and only
  regular members are ever read (``extractfile`` is never called on a link, whose target is
  never looked up). A symlink, hard link, device, FIFO or other special member becomes a leaf
  of that kind without data, which intake's classification treats like the same entry in a
  directory: inside a problem's read set it rejects that problem, elsewhere it is reported.
- Absolute or ``..`` member names, a member that duplicates another path (whatever their
  kinds) or lies under a non-directory, a corrupt stream and exceeded limits reject the whole
  submission.
- Members, depth and bytes are counted before they are used: every member counts as an entry,
  the declared size of every member with data counts toward ``max_total_bytes`` before any of
  it is decoded, and every byte the decoder yields (tar headers and pax records included) counts
  toward a cap derived from the limits, so a decompression bomb is not decompressed past it.
- The archive file itself is hashed in full for the digest but kept in memory only when it is
  small enough to decode within the limits.
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import zlib
from typing import IO, TYPE_CHECKING, cast

from lean_eval.limits import (
    CHUNK,
    MIB,
    SKIPPED_NAMES,
    Budget,
    IntakeLimits,
    LimitError,
    Node,
    RejectError,
    show,
)

if TYPE_CHECKING:
    from hashlib import _Hash

_MEMBER_OVERHEAD = 3072  # tar header, padding and a pax record per member
_MEMBER_KINDS = {tarfile.SYMTYPE: "symlink", tarfile.LNKTYPE: "hard link",
                 tarfile.CHRTYPE: "device", tarfile.BLKTYPE: "device", tarfile.FIFOTYPE: "FIFO"}


def read_archive(fd: int, limits: IntakeLimits, digest: _Hash) -> Node:
    """Hash the archive open at `fd` into `digest` and decode it into a tree; RejectError."""
    return _parse_archive(_read_raw(fd, _stream_cap(limits), digest), limits)


def _stream_cap(limits: IntakeLimits) -> int:
    """Most decompressed bytes a tar stream within the limits can need (data plus headers)."""
    headers = _MEMBER_OVERHEAD * (limits.max_files + 4) + 2 * tarfile.RECORDSIZE
    return limits.max_total_bytes + headers


def _read_raw(fd: int, stream_cap: int, digest: _Hash) -> bytes:
    """Hash the whole archive file; keep it only if small enough to decode within the limits."""
    raw_cap = stream_cap + stream_cap // 64 + 65536  # compression overhead on incompressible data
    kept: list[bytes] = []
    size = 0
    while chunk := os.read(fd, 1 * MIB):
        digest.update(chunk)
        size += len(chunk)
        if size <= raw_cap:
            kept.append(chunk)
    if size > raw_cap:
        raise LimitError(f"archive: {size} bytes, more than the limits allow ({raw_cap})")
    return b"".join(kept)


class _Bounded:
    """What tarfile's stream reader reads from: counts decoded bytes and stops at the cap."""

    def __init__(self, inner: io.BufferedIOBase, cap: int) -> None:
        self.inner, self.cap, self.used, self.where = inner, cap, 0, "at its start"

    def read(self, size: int = -1) -> bytes:
        room = self.cap + 1 - self.used
        data = self.inner.read(room if size < 0 else min(size, room))
        self.used += len(data)
        if self.used > self.cap:
            raise LimitError(f"archive expands beyond {self.cap} bytes {self.where}")
        return data


def _decoder(raw: bytes) -> io.BufferedIOBase:
    source = io.BytesIO(raw)
    return gzip.GzipFile(fileobj=source, mode="rb") if raw.startswith(b"\x1f\x8b") else source


def _member_parts(name: str) -> list[str]:
    if name.startswith("/"):
        raise RejectError(f"{show(name)}: absolute member name")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise RejectError(f"{show(name)}: member name has a '..' component")
    return parts


def _member_kind(member: tarfile.TarInfo) -> str:
    """The node kind: dir, file (regular, not sparse), or what else the member is."""
    if member.isdir():
        return "dir"
    if member.isreg() and not member.issparse():
        return "file"
    return _MEMBER_KINDS.get(member.type, f"special file (tar type {member.type!r})")


def _parse_archive(raw: bytes, limits: IntakeLimits) -> Node:
    root = Node("dir")
    budget = Budget(limits)
    stream = _Bounded(_decoder(raw), _stream_cap(limits))
    try:
        with tarfile.open(fileobj=cast("IO[bytes]", stream), mode="r|",
                          encoding="utf-8", errors="surrogateescape") as archive:
            for member in archive:
                shown = show(member.name)
                parts = _member_parts(member.name)
                budget.entry(shown, len(parts))
                node = Node(_member_kind(member))
                if member.isreg() or member.type not in tarfile.SUPPORTED_TYPES:
                    budget.data(shown, member.size)  # tarfile decodes this member's data
                if node.kind == "file":  # only regular members are read; links never are
                    handle = archive.extractfile(member)  # size is within the budget
                    if handle and not SKIPPED_NAMES.intersection(parts):
                        node.data = handle.read(member.size)
                        if len(node.data) != member.size:
                            raise RejectError(f"{shown}: member data is truncated")
                if parts:
                    _insert(root, parts, node, shown)
                elif node.kind != "dir":
                    raise RejectError(f"{shown}: names the archive root but is not a directory")
                stream.where = f"after member {shown}"
            while stream.read(CHUNK):  # to the end, so a gzip CRC or length error is seen
                pass
    except (tarfile.TarError, EOFError, OSError, zlib.error, ValueError) as exc:
        raise RejectError(f"archive: corrupt {stream.where}: {show(str(exc))}") from None
    return root


def _insert(root: Node, parts: list[str], node: Node, shown: str) -> None:
    """Place `node` at `parts`; a path is never given twice, nor anything under a non-directory.

    `.lake` and `.git` become one "skipped" node, as in the directory walk, unless the member
    named so is itself a link or special member: then it is kept, as the walk keeps a symlink.
    """
    current = root
    for depth, name in enumerate(parts):
        existing, last = current.children.get(name), depth == len(parts) - 1
        if name in SKIPPED_NAMES and (not last or node.kind in ("dir", "file")):
            if existing is None:
                current.children[name] = Node("skipped")
            elif existing.kind != "skipped":
                raise RejectError(f"{shown}: duplicate member" if last else
                                   f"{shown}: member lies under a member that is not a directory")
            return
        if last:
            if existing is None:
                current.children[name] = node
            elif not (existing.kind == node.kind == "dir"):
                raise RejectError(f"{shown}: duplicate member")
            return
        if existing is None:
            existing = current.children[name] = Node("dir")
        elif existing.kind != "dir":
            raise RejectError(f"{shown}: member lies under a member that is not a directory")
        current = existing
