"""How a run stops early (design §5.5 "Resume"): SIGINT/SIGTERM handlers, installed in the main
thread only and restored when the run ends, that never kill the harness outright. A signal is
recorded, stops admission and SIGTERMs the pairs' reapers, so the run still writes its summary
and exits 128 + the signal."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from lean_eval.supervise import procfs


class Stop:
    """Set by SIGINT/SIGTERM (or a fault): no more admissions."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signum: int | None = None
        self.fault: str | None = None

    def handle(self, signum: int, frame: FrameType | None) -> None:
        del frame
        if self.signum is None:
            self.signum = signum
        self.event.set()
        terminate_children()


def terminate_children() -> None:
    """SIGTERM every direct child of this process (read from /proc): the pairs' reapers."""
    me = os.getpid()
    for pid, (parent, _) in procfs.process_table().items():
        if parent == me:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)


@contextmanager
def signals(stop: Stop) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, stop.handle) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
