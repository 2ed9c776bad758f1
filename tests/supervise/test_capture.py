"""lean_eval.supervise.capture: bounded head and tail, and phase lines timed without per-line
work."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st
from support import examples

from lean_eval.supervise import capture
from lean_eval.supervise.capture import MARK_BYTES, MARKS_PER_CHUNK, Capture

LINES = st.lists(st.sampled_from([
    b"Resolving dependencies", b"Building Solution", b"Exporting #[t] from Solution",
    b"Running nanoda kernel on solution", b"y", b"", b"noise Building x", b" Building y",
    b"Buil", b"Running" + b"x" * 300, b"x" * 500]), max_size=40)


def _reference(stream: bytes) -> list[bytes]:
    """Every complete line starting with a phase prefix, cut to MARK_BYTES (the old rule)."""
    return [line[:MARK_BYTES] for line in stream.split(b"\n")[:-1]
            if line.startswith(capture.PHASE_PREFIXES)]


def _marked(chunks: list[bytes]) -> list[bytes]:
    cap = Capture(1024)
    for i, chunk in enumerate(chunks):
        cap.feed(chunk)
        cap.mark_lines(chunk, float(i))
    return [line for _, line in (*cap.first_marks, *cap.last_marks)]


@settings(max_examples=examples(300), deadline=None)
@given(lines=LINES, tail=st.binary(max_size=30), cuts=st.lists(st.integers(0, 4000), max_size=8))
def test_phase_lines_are_found_however_the_stream_is_chunked(
        lines: list[bytes], tail: bytes, cuts: list[int]) -> None:
    stream = b"\n".join(lines) + (b"\n" if lines else b"") + tail.replace(b"\n", b"")
    bounds = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    chunks = [stream[a:b] for a, b in itertools.pairwise(bounds)]
    assert len(_reference(stream)) <= 40 < MARKS_PER_CHUNK * 3
    if all(len(_reference(c)) < MARKS_PER_CHUNK for c in chunks):
        assert _marked(chunks) == _reference(stream)


def test_a_chunk_of_look_alike_lines_keeps_its_first_and_last_ones() -> None:
    flood = b"".join(b"Building F%d\n" % i for i in range(10_000))
    marks = _marked([flood, b"Running nanoda kernel on solution\n"])
    # the line completing at the chunk's start, the next MARKS_PER_CHUNK ones, and the last one
    assert marks[:-2] == [b"Building F%d" % i for i in range(MARKS_PER_CHUNK + 1)]
    assert marks[-2:] == [b"Building F9999", b"Running nanoda kernel on solution"]


def test_marks_stay_bounded_over_many_chunks() -> None:
    cap = Capture(1024)
    chunk = b"".join(b"Building F%d\n" % i for i in range(100))
    for i in range(1000):
        cap.mark_lines(chunk, float(i))
    assert len(cap.first_marks) == capture.LINE_MARKS
    assert len(cap.last_marks) == capture.LINE_MARKS
    assert len(cap.partial) == 0
    assert all(len(line) <= MARK_BYTES for _, line in cap.first_marks)


def test_a_line_longer_than_any_chunk_is_kept_to_mark_bytes() -> None:
    cap = Capture(1024)
    cap.mark_lines(b"Building " + b"x" * 1000, 1.0)
    cap.mark_lines(b"y" * 5000, 2.0)
    assert cap.first_marks == []
    assert len(cap.partial) == MARK_BYTES
    cap.mark_lines(b"\nnext\n", 3.0)
    assert cap.first_marks == [(3.0, b"Building " + b"x" * (MARK_BYTES - 9))]


def test_head_and_tail_are_kept_within_the_cap() -> None:
    cap = Capture(100)
    for i in range(10_000):
        cap.feed(b"%05d\n" % i)
    out, cut = cap.result()
    assert cut
    assert out.startswith(b"00000\n")
    assert out.endswith(b"09999\n")
    assert len(cap.head) + len(cap.tail) <= 100 + 2 * 50
    assert f"[... {60_000 - 100} bytes omitted ...]".encode() in out
