"""Decode a tar submission in memory into intake's tree (design §5.2); ``archive_stream``
supplies the bytes.

Security invariants (design §6.2, §6.10):
- Headers (ustar, GNU, pax) are parsed here in linear time, not by ``tarfile``, whose pax
  parser is quadratic on some patch levels (CVE-2024-6232). Nothing is extracted: a link or
  special member is a data-less leaf, classified like the same entry in a directory; a
  hard-link member is a copy of the earlier ``.lean`` member it names, or refused (``links``).
- Absolute or ``..`` names, duplicate paths, a member under a non-directory and a corrupt
  stream reject the whole submission.
- Extension records, pax keys, extension headers per member and global headers are bounded
  before they are decoded; members and their data pass ``bounds``'s budget before any is kept.
"""

from __future__ import annotations

import re
import struct
import zlib
from typing import TYPE_CHECKING

from lean_eval.errors import UsageError
from lean_eval.intake.archive_stream import Stream, corrupt, read_raw, skip_nuls
from lean_eval.intake.bounds import (
    CHUNK,
    SKIPPED_NAMES,
    TOO_DEEP,
    Budget,
    IntakeLimits,
    LimitError,
    Node,
    RejectError,
    show,
    skip_allowance,
)
from lean_eval.intake.links import link_target

if TYPE_CHECKING:
    from hashlib import _Hash

BLOCK = 512
_ZERO = bytes(BLOCK)
_MEMBER_OVERHEAD = 3072  # tar header, padding and a pax record per member
_EXTENSIONS_PER_MEMBER = 4  # at most one each of pax, GNU long name, GNU long link, and one more
_MAX_GLOBAL_HEADERS = 64
_MEMBER_KINDS = {b"0": "file", b"\0": "file", b"7": "file", b"5": "dir", b"2": "symlink",
                 b"1": "hard link", b"3": "device", b"4": "device", b"6": "FIFO"}
_NO_DATA = frozenset({b"1", b"2", b"3", b"4", b"5", b"6"})
_PAX_TYPES = frozenset({b"x", b"X", b"g"})
_PAX_LENGTH = re.compile(rb"([0-9]{1,20}) ")
_SIGNED = struct.Struct("148b8x356b")


def read_archive(fd: int, budget: Budget, digest: _Hash, root: Node) -> None:
    """Hash the archive open at `fd` into `digest` and decode it into `root`; RejectError
    (then `root` holds what was decoded before it), or UsageError when the host cannot read it."""
    try:
        raw = read_raw(fd, budget, digest)
    except OSError as exc:  # the host's fault (EIO, ...), not the submitter's: refuse the run
        raise UsageError(f"archive: cannot be read: {exc.strerror}") from None
    stream = Stream(raw, stream_cap(budget.limits), budget)
    try:
        _Parser(stream, budget, root).parse()
    except (zlib.error, ValueError) as exc:  # nothing expected; never let one escape
        raise corrupt(stream.where, show(str(exc))) from None


def stream_cap(limits: IntakeLimits) -> int:
    """Most decompressed bytes a tar stream within the limits can need (data plus headers)."""
    headers = _MEMBER_OVERHEAD * (limits.max_files + 4) + 2 * 10240
    return limits.max_total_bytes + headers + skip_allowance(limits)


def _number(field: bytes, where: str) -> int:
    if field[:1] == b"\x80":  # GNU base-256 (sizes of 8 GiB and more)
        return int.from_bytes(field[1:], "big")
    text = field.split(b"\0", 1)[0].strip(b" ")
    if not text:
        return 0
    if not text.isdigit() or b"8" in text or b"9" in text:
        raise corrupt(where, f"bad number '{show(text.decode('latin-1'))}' in a tar header")
    return int(text, 8)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _nts(data: bytes) -> bytes:
    return data.split(b"\0", 1)[0]


class _Parser:
    """Reads headers and members in order, keeping only what intake's tree needs."""

    def __init__(self, stream: Stream, budget: Budget, root: Node) -> None:
        self.stream, self.budget, self.limits = stream, budget, budget.limits
        self.root = root
        self.globals: dict[str, str] = {}
        self.global_headers = 0

    def parse(self) -> None:
        stream, seen = self.stream, False
        pax: dict[str, str] | None = None
        long_name: bytes | None = None
        long_link: bytes | None = None
        extensions = 0
        while True:
            block = stream.read(BLOCK)
            if not block and not (seen or extensions):
                raise corrupt(stream.where, "empty archive")
            if not block and extensions:
                raise corrupt(stream.where, "ends after an extension header")
            if not block or block == _ZERO:
                break
            if len(block) != BLOCK:
                raise corrupt(stream.where, "a tar header is truncated")
            self._checksum(block)
            kind, size = block[156:157], _number(block[124:136], stream.where)
            if kind in _PAX_TYPES or kind in (b"L", b"K"):
                extensions += 1
                if extensions > _EXTENSIONS_PER_MEMBER:
                    raise LimitError(f"archive: more than {_EXTENSIONS_PER_MEMBER} extension "
                                     f"headers for one member {stream.where}")
                data = self._extension(kind, size)
                if kind == b"g":
                    self._global(data)
                elif kind in _PAX_TYPES:
                    pax = self._pax(data)
                elif kind == b"L":
                    long_name = _nts(data)
                else:
                    long_link = _nts(data)
                continue
            self._member(block, kind, size, pax or {}, (long_name, long_link))
            pax, long_name, long_link, extensions, seen = None, None, None, 0, True
        while stream.read(CHUNK):  # to the end, so a gzip CRC or length error is seen
            pass

    def _checksum(self, block: bytes) -> None:
        stored = _number(block[148:156], self.stream.where)
        unsigned = 256 + sum(block[:148]) + sum(block[156:])
        if stored not in (unsigned, 256 + sum(_SIGNED.unpack_from(block))):
            raise corrupt(self.stream.where, "bad tar header checksum")

    def _extension(self, kind: bytes, size: int) -> bytes:
        limit, where = self.limits.max_header_bytes, self.stream.where
        if size > limit:
            raise LimitError(f"archive: a {kind.decode('latin-1')!r} header record of {size} "
                             f"bytes {where}, over the limit of {limit}")
        data = self.stream.exact(size, "an extension header")
        self.stream.skip(-size % BLOCK, "padding")
        return data

    def _pax(self, data: bytes) -> dict[str, str]:
        """Parse "LEN key=value\\n" records in one linear pass, at most max_pax_keys of them."""
        out: dict[str, str] = {}
        pos, end, records, where = 0, len(data), 0, self.stream.where
        while pos < end:
            if data[pos] == 0:  # NUL padding after the last record
                if skip_nuls(data, pos) != end:
                    raise corrupt(where, "a pax header holds data after NUL padding")
                break
            match = _PAX_LENGTH.match(data, pos)
            length = int(match.group(1)) if match else 0
            stop = pos + length
            if not match or stop > end or stop < match.end() + 2 or data[stop - 1] != 0x0A:
                raise corrupt(where, "a pax record is malformed")
            key, eq, value = data[match.end():stop - 1].partition(b"=")
            if not eq or not key:
                raise corrupt(where, "a pax record has no key")
            records += 1
            if records > self.limits.max_pax_keys:
                raise LimitError(f"archive: a pax header with more than "
                                 f"{self.limits.max_pax_keys} keys {where}")
            out[_text(key)] = _text(value)
            pos = stop
        return out

    def _global(self, data: bytes) -> None:
        self.global_headers += 1
        if self.global_headers > _MAX_GLOBAL_HEADERS:
            raise LimitError(f"archive: more than {_MAX_GLOBAL_HEADERS} pax global headers "
                             f"{self.stream.where}")
        for key, value in self._pax(data).items():
            if value:
                self.globals[key] = value
            else:
                self.globals.pop(key, None)
        if len(self.globals) > self.limits.max_pax_keys:
            raise LimitError(f"archive: more than {self.limits.max_pax_keys} pax global keys "
                             f"{self.stream.where}")

    def _member(self, block: bytes, kind: bytes, size: int, pax: dict[str, str],
                longs: tuple[bytes | None, bytes | None]) -> None:
        stream, where = self.stream, self.stream.where
        merged = dict(self.globals)
        for key, value in pax.items():
            if value:
                merged[key] = value
            else:
                merged.pop(key, None)
        long_name, long_link = longs
        raw_name = _nts(block[0:100])
        prefix = _nts(block[345:500]) if block[257:263] == b"ustar\0" else b""
        name = _text(long_name if long_name is not None else
                     prefix + b"/" + raw_name if prefix else raw_name)
        name = merged.get("path", name)
        if "size" in merged:
            if not merged["size"].isdigit() or len(merged["size"]) > 20:
                raise corrupt(where, "a pax size is not a number")
            size = int(merged["size"])
        node_kind = _MEMBER_KINDS.get(kind, f"special file (tar type {kind!r})")
        if kind == b"\0" and name.endswith("/"):
            node_kind = "dir"
        if any(key.startswith("GNU.sparse.") for key in merged) or kind == b"S":
            node_kind = "special file (sparse)"
        if kind == b"S":
            self._sparse_extensions(block)
        if kind in _NO_DATA and size:
            raise corrupt(where, f"{show(name)}: a link, device or directory member with data")
        shown = show(name.rstrip("/") if node_kind == "dir" else name)
        parts = _member_parts(name)
        self.budget.walking = tuple(parts[:-1])
        self.budget.entry(shown)
        if len(parts) > self.limits.max_depth:  # a leaf at the first depth past the limit
            parts, node_kind = parts[: self.limits.max_depth + 1], TOO_DEEP
        node = Node(node_kind)
        if node_kind == "hard link":
            node = self._copy(parts, merged.get("linkpath", _text(
                long_link if long_link is not None else _nts(block[157:257]))), shown)
        kept = node_kind == "file" and not SKIPPED_NAMES.intersection(parts)
        if node_kind == "file" and size > self.limits.max_file_bytes:  # refused from its size
            self.budget.skip(shown, size)  # before any of it is decoded; never in the total
            node.oversize, kept = size, False
        else:
            self.budget.data(shown, size)  # before any of it is decoded
        if kept:
            node.data = stream.exact(size, f"{shown}: member data")
        else:
            stream.skip(size, f"{shown}: member data")
        stream.skip(-size % BLOCK, "padding")
        if parts:
            _insert(self.root, parts, node, shown)
        elif node_kind != "dir":
            raise RejectError(f"{shown}: names the archive root but is not a directory")
        stream.where = f"after member {shown}"

    def _copy(self, parts: list[str], linkname: str, shown: str) -> Node:
        """A hard-link member: a copy of the earlier member it names, or refused."""
        node = link_target(parts, linkname, self.root)
        if node.kind == "file" and not node.oversize:
            self.budget.data(shown, len(node.data))  # a copy's bytes count again
        return node

    def _sparse_extensions(self, block: bytes) -> None:
        """Skip old-GNU sparse map blocks; each counts toward the decoded-byte cap."""
        extended = block[482]
        while extended:
            extended = self.stream.exact(BLOCK, "a sparse map")[504]


def _member_parts(name: str) -> list[str]:
    if name.startswith("/"):
        raise RejectError(f"{show(name)}: absolute member name")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise RejectError(f"{show(name)}: member name has a '..' component")
    return parts


def _insert(root: Node, parts: list[str], node: Node, shown: str) -> None:
    """Place `node` at `parts`, refusing a duplicate or a path under a non-directory; `.lake`
    and `.git` are skipped as in the directory walk (a link or special one is kept)."""
    current = root
    for depth, name in enumerate(parts):
        existing, last = current.children.get(name), depth == len(parts) - 1
        if existing is not None and existing.kind == TOO_DEEP and node.kind == TOO_DEEP:
            return  # one leaf stands for everything past the depth limit below it
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

