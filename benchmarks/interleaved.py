"""Timing shared by the per-pair cost benchmarks (cgroup_cost, identity_cost, disk_cost): the
variants of one figure take turns within each round, so a change in the machine's load falls on
all of them alike, and each figure is the mean over the rounds."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def mean_ms(runs: int, *steps: Callable[[], object]) -> list[float]:
    """The mean of each step in milliseconds over ``runs`` rounds, the steps taking turns."""
    times: list[list[float]] = [[] for _ in steps]
    for _ in range(runs):
        for step, kept in zip(steps, times, strict=True):
            start = time.perf_counter()
            step()
            kept.append(time.perf_counter() - start)
    return [statistics.mean(kept) * 1000 for kept in times]
