"""How many pairs a run may score at once on this machine (design §5.5 "Admission")."""

from __future__ import annotations

import os


def mem_available() -> int | None:
    """``MemAvailable`` of /proc/meminfo in bytes (None when the kernel does not say)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def default_jobs(memory_limit: int | None) -> int:
    """CPUs, lowered so that jobs x memory limit fits in the memory available now."""
    cpus = len(os.sched_getaffinity(0)) or 1
    available = mem_available()
    if available is None or memory_limit is None:
        return cpus
    return max(1, min(cpus, available // max(memory_limit, 1)))


def memory_ok(limit: int | None) -> bool:
    """Whether ``MemAvailable`` is at least ``limit`` (True when the kernel does not say)."""
    available = mem_available()
    return available is None or limit is None or available >= limit
