"""run-eval --jobs: the default is the CPU count lowered to what memory allows. Pairs running
at once under real bubblewrap are in tests/e2e/test_parallel.py.
"""

from __future__ import annotations

import os

import pytest

from lean_eval.scoring import sizing


def test_default_jobs_is_the_cpus_lowered_to_what_memory_allows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    cpus = len(os.sched_getaffinity(0))
    monkeypatch.setattr(sizing, "mem_available", lambda: 64 << 30)
    assert sizing.default_jobs(1 << 30) == cpus
    monkeypatch.setattr(sizing, "mem_available", lambda: 9 << 30)
    assert sizing.default_jobs(8 << 30) == 1
    monkeypatch.setattr(sizing, "mem_available", lambda: 1 << 30)
    assert sizing.default_jobs(8 << 30) == 1
