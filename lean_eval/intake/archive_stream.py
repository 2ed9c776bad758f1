"""The bytes of a submitted archive (design §5.2), for ``archive``'s parser: the file, read
within ``max_archive_bytes`` and hashed, then decoded in bounded steps up to a cap.

Invariant: at most CHUNK bytes are inflated per step, and every step counts toward the cap and
checks the deadline, so a decompression bomb stops at the cap. Concatenated gzip members and
NUL padding between them are read; anything else after the stream, or a truncated one, is
corrupt (tests/intake/test_intake_archives.py, test_intake_bounds.py).
"""

from __future__ import annotations

import os
import re
import zlib
from typing import TYPE_CHECKING

from lean_eval.intake.bounds import CHUNK, Budget, CorruptArchiveError, LimitError

if TYPE_CHECKING:
    from hashlib import _Hash

_NULS = re.compile(rb"\0*")


def read_raw(fd: int, budget: Budget, digest: _Hash) -> bytes:
    """The archive file, hashed into `digest`; LimitError past ``max_archive_bytes``, never
    read beyond (the digest then covers the bytes read and the size: enough to tell two apart)."""
    limit = budget.limits.max_archive_bytes
    size = os.fstat(fd).st_size
    kept: list[bytes] = []
    total = 0
    if size <= limit:
        while chunk := os.read(fd, min(1 << 20, limit + 1 - total)):
            budget.tick("archive")
            digest.update(chunk)
            total += len(chunk)
            kept.append(chunk)
            if total > limit:
                break
    if size > limit or total > limit:
        digest.update(b"\0oversized archive\0" + str(max(size, total)).encode())
        raise LimitError(f"archive: more than {limit} bytes (--max-archive-bytes)")
    return b"".join(kept)


def corrupt(where: str, why: str) -> CorruptArchiveError:
    return CorruptArchiveError(f"archive: corrupt {where}: {why}")


class Stream:
    """The decoded archive (gzip members inflated by zlib), read in bounded steps up to a cap."""

    def __init__(self, raw: bytes, cap: int, budget: Budget) -> None:
        self.raw, self.pos, self.cap, self.used, self.budget = raw, 0, cap, 0, budget
        self.gzip = raw.startswith(b"\x1f\x8b")
        self.inflater = zlib.decompressobj(31)
        self.buffer = bytearray()
        self.where = "at its start"

    def _more(self) -> bytes:
        """The next decoded bytes (at most CHUNK); b"" at the end of the archive file."""
        if not self.gzip:
            chunk = self.raw[self.pos:self.pos + CHUNK]
            self.pos += len(chunk)
            return chunk
        while True:
            inflater = self.inflater
            if inflater.eof:  # one gzip member done: padding, another member, or garbage
                self.pos -= len(inflater.unused_data)
                self.pos = skip_nuls(self.raw, self.pos)
                if self.pos >= len(self.raw):
                    return b""
                if self.raw[self.pos:self.pos + 2] != b"\x1f\x8b":
                    raise corrupt(self.where, "data after the gzip stream")
                self.inflater = inflater = zlib.decompressobj(31)
            data = inflater.unconsumed_tail
            if not data:
                data = self.raw[self.pos:self.pos + CHUNK]
                self.pos += len(data)
                if not data:
                    raise corrupt(self.where, "the gzip stream is truncated")
            try:
                out = inflater.decompress(data, CHUNK)
            except zlib.error as exc:
                raise corrupt(self.where, f"gzip: {exc}") from None
            if out:
                return out

    def read(self, size: int) -> bytes:
        """`size` decoded bytes, or fewer at the end; LimitError past the cap or the deadline."""
        while len(self.buffer) < size:
            more = self._more()
            if not more:
                break
            self.used += len(more)
            if self.used > self.cap:
                raise LimitError(f"archive expands beyond {self.cap} bytes {self.where}")
            self.budget.tick(f"archive {self.where}")
            self.buffer += more
        out = bytes(self.buffer[:size])
        del self.buffer[:size]
        return out

    def exact(self, size: int, what: str) -> bytes:
        data = self.read(size)
        if len(data) != size:
            raise corrupt(self.where, f"{what} is truncated")
        return data

    def skip(self, size: int, what: str) -> None:
        while size > 0:
            size -= len(self.exact(min(size, CHUNK), what))


def skip_nuls(data: bytes, pos: int) -> int:
    match = _NULS.match(data, pos)
    return match.end() if match else pos
