"""What a finished run left behind: surviving processes, and markers to find them by."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

from support.places import PROBLEM
from support.runs import Run


def batch_ok(run: Run, base: Path, good: str = "good") -> None:
    """The correct pair is accepted, the summary exists, no traceback, nothing survives."""
    output = run.result.output
    assert "Traceback" not in output, output
    assert run.result.exception is None or isinstance(run.result.exception, SystemExit), output
    assert run.verdict(good, PROBLEM)["verdict"] == "accepted", output
    assert (run.out / "summary.json").is_file(), output
    no_survivor(base)


def survivors(marker: str) -> list[str]:
    """Processes (other than this one) whose command line or working directory mentions
    ``marker``: what a run left behind under its inputs, outputs or work dir."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                "utf-8", "replace")
            cwd = os.readlink(f"/proc/{name}/cwd")
        except OSError:
            continue
        if marker in cmdline or marker in cwd:
            found.append(f"{name}: {cmdline.strip()[:200]} (cwd {cwd})")
    return found


def no_survivor(marker: Path) -> None:
    """Nothing of a finished run is alive (waiting, up to a generous bound, for the kernel to
    reap: a loaded machine may take a while, a survivor never goes)."""
    deadline = time.monotonic() + 30
    while survivors(str(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert survivors(str(marker)) == []


def unique_marker() -> str:
    """A sleep duration no other process on the machine carries in its command line."""
    return f"9{secrets.randbelow(10**9):09d}.{secrets.randbelow(10**6):06d}"


def processes_with(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line contains marker."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            stat = (entry / "stat").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and stat[stat.rfind(b")") + 2 :][:1] != b"Z":
            found.append(int(entry.name))
    return found
