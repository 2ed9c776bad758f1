"""Bounded capture of a child's output: the first bytes, a rolling tail, and line timings.

Invariant: however much a child writes, at most ``cap`` bytes and ``2 * LINE_MARKS`` timed
lines of ``MARK_BYTES`` bytes each are kept per stream, so a flood cannot exhaust memory.
"""

from __future__ import annotations

import collections

HEAD_MAX = 64 * 1024  # bytes kept from the start of a stream; the rest of the cap is its tail
LINE_MARKS = 1024  # lines timed at each end of the stream
MARK_BYTES = 200  # bytes of each timed line kept


class Capture:
    """A stream's first bytes and a rolling tail, never more than `cap` bytes kept."""

    def __init__(self, cap: int) -> None:
        self.head_cap = min(HEAD_MAX, cap // 2)
        self.tail_cap = cap - self.head_cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.partial = bytearray()
        self.first_marks: list[tuple[float, bytes]] = []
        self.last_marks: collections.deque[tuple[float, bytes]] = collections.deque(
            maxlen=LINE_MARKS)

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data and self.tail_cap:
            self.tail += data
            if len(self.tail) > 2 * self.tail_cap:  # amortised: trim at most once per tail_cap
                del self.tail[: len(self.tail) - self.tail_cap]

    def mark_lines(self, data: bytes, at: float) -> None:
        """Note when each line of ``data`` completed (bounded, like the bytes themselves)."""
        pieces = data.split(b"\n")
        for piece in pieces[:-1]:
            line = bytes(self.partial + piece[: MARK_BYTES])[:MARK_BYTES]
            self.partial = bytearray()
            if len(self.first_marks) < LINE_MARKS:
                self.first_marks.append((at, line))
            else:
                self.last_marks.append((at, line))
        room = MARK_BYTES - len(self.partial)
        if room > 0:
            self.partial += pieces[-1][:room]

    def result(self) -> tuple[bytes, bool]:
        tail = bytes(self.tail[max(0, len(self.tail) - self.tail_cap) :])
        omitted = self.total - len(self.head) - len(tail)
        if omitted == 0:
            return bytes(self.head) + tail, False
        return bytes(self.head) + f"\n[... {omitted} bytes omitted ...]\n".encode() + tail, True
