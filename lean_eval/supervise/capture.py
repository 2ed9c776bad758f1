"""Bounded capture of a child's output: the first bytes, a rolling tail, and phase-line timings.
However much a child writes, at most ``cap`` bytes and ``2 * LINE_MARKS`` timed lines of
``MARK_BYTES`` bytes are kept per stream. No Python work per line: a chunk costs a fixed number
of C-speed operations plus at most ``MARKS_PER_CHUNK + 2`` timed lines, whatever the line shape:
a chunk's lines all complete at once, so its first ``MARKS_PER_CHUNK`` phase lines and its last
carry every phase's time.
"""

from __future__ import annotations

import collections

HEAD_MAX = 64 * 1024  # bytes kept from the start of a stream; the rest of the cap is its tail
LINE_MARKS = 1024  # timed lines kept at each end of the stream
MARK_BYTES = 200  # bytes of each timed line kept
MARKS_PER_CHUNK = 16  # timed lines taken from the start of one chunk (plus its last one)
# The lines `lake comparator` announces its phases with (design §5.4); nothing else is timed.
PHASE_PREFIXES = (b"Resolving dependencies", b"Building ", b"Exporting ", b"Running ")
_NEEDLES = tuple(b"\n" + prefix for prefix in PHASE_PREFIXES)


class Capture:
    """A stream's first bytes and a rolling tail, never more than `cap` bytes kept."""

    def __init__(self, cap: int) -> None:
        self.head_cap = min(HEAD_MAX, cap // 2)
        self.tail_cap = cap - self.head_cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.partial = bytearray()  # the first MARK_BYTES of the line not yet complete
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
        """Note when the phase-looking lines of ``data`` completed (bounded, like the bytes)."""
        first_nl = data.find(b"\n")
        if first_nl < 0:
            self.partial += data[: MARK_BYTES - len(self.partial)]
            return
        line = bytes(self.partial + data[: min(first_nl, MARK_BYTES)])[:MARK_BYTES]
        if line.startswith(PHASE_PREFIXES):
            self._mark(at, line)
        starts: set[int] = set()
        for needle in _NEEDLES:  # each found newline starts a phase-looking line after it
            pos = data.find(needle, first_nl)
            for _ in range(MARKS_PER_CHUNK):
                if pos < 0:
                    break
                starts.add(pos + 1)
                pos = data.find(needle, pos + 1)
            if pos >= 0:
                starts.add(data.rfind(needle, pos) + 1)
        chosen = sorted(starts)
        for start in (*chosen[:MARKS_PER_CHUNK], *chosen[MARKS_PER_CHUNK:][-1:]):
            end = data.find(b"\n", start, start + MARK_BYTES + 1)
            if end < 0 and data.find(b"\n", start) < 0:
                continue  # not complete yet: it is the partial line
            self._mark(at, data[start : start + MARK_BYTES] if end < 0 else data[start:end])
        last_nl = data.rfind(b"\n")
        self.partial = bytearray(data[last_nl + 1 : last_nl + 1 + MARK_BYTES])

    def _mark(self, at: float, line: bytes) -> None:
        if len(self.first_marks) < LINE_MARKS:
            self.first_marks.append((at, line))
        else:
            self.last_marks.append((at, line))

    def result(self) -> tuple[bytes, bool]:
        tail = bytes(self.tail[max(0, len(self.tail) - self.tail_cap) :])
        omitted = self.total - len(self.head) - len(tail)
        if omitted == 0:
            return bytes(self.head) + tail, False
        return bytes(self.head) + f"\n[... {omitted} bytes omitted ...]\n".encode() + tail, True
