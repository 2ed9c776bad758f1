"""Documented claims pinned to the code they describe (issue 26, "Claims that promise more than
the code"): when either side changes, the other has to follow."""

from __future__ import annotations

import inspect

from support import REPO

from lean_eval.supervise import resources


def _flat(name: str) -> str:
    return " ".join((REPO / name).read_text(encoding="utf-8").split())


def test_security_md_says_how_often_the_disk_budget_is_walked() -> None:
    """Not "every 0.1 s": the next walk waits four times the last one when that is longer."""
    source = inspect.getsource(resources.disk_exceeded)
    assert resources.DISK_INTERVAL == 0.1
    assert "max(DISK_INTERVAL, 4 * spent)" in source
    text = _flat("SECURITY.md")
    assert ("walked by the watchdog at most every 0.1 s: the next walk waits `max(0.1 s, 4 x "
            "the last walk's duration)`") in text
    assert "walked by the watchdog every 0.1 s" not in text
