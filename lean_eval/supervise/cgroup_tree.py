"""Cgroup directories as the harness makes and leaves them, on either hierarchy (design §5.5
"Limits"): a harness's parent group is named for its pid and start time, so the next harness
can tell one whose owner is gone and reclaim it (kill what is left in it, remove its pair
groups, then it). A live pair never joins such a group: each harness makes its own parent.
Imported by the reaper: standard library only (``supervise.reaper``).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from pathlib import Path

PARENT_PREFIX = "lean-eval-"
_PARENT = re.compile(r"^lean-eval-(\d+)-(\d+)$")  # lean-eval-<pid>-<start time in ticks>
_REMOVE_WAIT = 5.0


def start_ticks(pid: int | str = "self") -> int | None:
    """The start time of process ``pid`` in clock ticks since boot (None: no such process)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()
    return int(fields[19]) if len(fields) > 19 else None


def parent_name() -> str:
    """This harness's parent group name: ``lean-eval-<pid>-<start ticks>``."""
    return f"{PARENT_PREFIX}{os.getpid()}-{start_ticks() or 0}"


def members(group: Path) -> list[int]:
    """The processes in ``group`` (its ``cgroup.procs``; none when it cannot be read)."""
    try:
        text = (group / "cgroup.procs").read_text()
    except OSError:
        return []
    return [int(word) for word in text.split() if word.isdigit()]


def kill_members(group: Path) -> None:
    """SIGKILL every process in ``group`` once (cgroup v1 has no ``cgroup.kill``)."""
    for pid in members(group):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def remove_group(group: Path) -> str | None:
    """Kill what is left in ``group``, wait until it is empty, remove it; the error, if any."""
    deadline = time.monotonic() + _REMOVE_WAIT
    while members(group):
        if time.monotonic() >= deadline:
            return f"cgroup {group} still holds processes"
        kill_members(group)
        time.sleep(0.01)
    try:
        group.rmdir()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot remove cgroup {group}: {exc}"
    return None


def is_stale(name: str) -> bool:
    """Whether ``name`` is a harness parent group whose harness has ended (pure but for /proc:
    its pid is gone, or now belongs to a process started at another time)."""
    found = _PARENT.match(name)
    if found is None:
        return False
    pid, ticks = int(found.group(1)), int(found.group(2))
    return start_ticks(pid) != ticks


def reclaim_stale(own: Path) -> list[str]:
    """Remove every parent group under ``own`` that a harness that has ended left behind, its
    pair groups first (their processes killed); the names reclaimed."""
    reclaimed: list[str] = []
    with contextlib.suppress(OSError):
        for entry in sorted(own.iterdir()):
            if not entry.is_dir() or not is_stale(entry.name):
                continue
            with contextlib.suppress(OSError):
                for pair in sorted(p for p in entry.iterdir() if p.is_dir()):
                    remove_group(pair)
            if remove_group(entry) is None:
                reclaimed.append(entry.name)
    return reclaimed


def counters(path: Path) -> dict[str, int]:
    """A cgroup file of ``name value`` lines (``*.events``, ``memory.oom_control``) as a dict;
    empty when it cannot be read (the group is gone)."""
    try:
        text = path.read_text()
    except OSError:
        return {}
    pairs = (line.split() for line in text.splitlines())
    return {p[0]: int(p[1]) for p in pairs if len(p) == 2 and p[1].isdigit()}
