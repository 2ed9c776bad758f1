"""The per-pair disk budget and the free-space reserve (design §5.5 Disk, issue 12 item 1):
accounting, the reserve, the limits spec, the resume key, the watchdog on a plain process tree
and short-of-space verdicts. Batches on a small filesystem are in tests/e2e/test_disk.py.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from support import (
    make_verdict,
)

from lean_eval.records.verdict import Preflight, ResourceLimits, Verdict
from lean_eval.scoring import pair, resume, shard
from lean_eval.scoring.options import RunOptions
from lean_eval.supervise import disk, process
from lean_eval.supervise.resources import PairLimits

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

P = "two_plus_two"
ENV = {"PATH": "/usr/bin:/bin"}
MIB = 1 << 20


# --- accounting (pure and on a real directory) --------------------------------------------------


def test_usage_counts_allocated_blocks_and_entries_once_and_stops_at_the_file_budget(
        tmp_path: Path) -> None:
    (tmp_path / "d" / "e").mkdir(parents=True)
    with open(tmp_path / "d" / "big", "wb") as f:
        os.posix_fallocate(f.fileno(), 0, 4 * MIB)  # allocated, never written: still counted
    os.link(tmp_path / "d" / "big", tmp_path / "d" / "e" / "again")  # one inode, counted once
    (tmp_path / "d" / "link").symlink_to("/")  # never followed
    used = disk.usage([str(tmp_path)])
    assert used.complete and used.files == 5
    assert 4 * MIB <= used.bytes < 5 * MIB
    for i in range(50):
        (tmp_path / f"f{i}").touch()
    stopped = disk.usage([str(tmp_path)], max_files=10)
    assert not stopped.complete and stopped.files == 11  # the walk costs the budget, no more
    assert disk.exceeded_by(stopped, None, 10) == "disk_files"
    assert disk.exceeded_by(used, 4 * MIB, None) == "disk_bytes"
    assert disk.exceeded_by(used, None, None) is None


def test_short_of_space_is_below_the_reserve_or_nearly_full_without_one() -> None:
    assert disk.is_short(disk.Room(10 * MIB, 1000), 20 * MIB)
    assert not disk.is_short(disk.Room(30 * MIB, 1000), 20 * MIB)
    assert disk.is_short(disk.Room(MIB // 2, 1000), 0)
    assert disk.is_short(disk.Room(30 * MIB, 3), 0)  # out of inodes
    assert not disk.is_short(None, 20 * MIB)  # unknown: never blamed on the host


def test_the_limits_spec_round_trips_to_the_reaper() -> None:
    limits = PairLimits(1 << 30, 64, "watchdog", 16 * MIB, 1000, ("/a", "/b"))
    assert PairLimits.from_spec(limits.to_spec()) == limits
    assert limits.watches_disk() and not PairLimits(None, None).any()


def limited(options: RunOptions, **limits: int | None) -> RunOptions:
    return options._replace(pair_limits=options.pair_limits._replace(**limits))


def test_the_disk_limits_are_in_the_resume_key_and_the_options_digest(tmp_path: Path) -> None:
    base = RunOptions(out_dir=tmp_path, timeout=60)
    preflight = Preflight(skipped=True, toolchain_path="/t", bwrap_path="/b",
                          bwrap_version="0.8.0", bwrap_sha256="0" * 64)
    digests = {shard.options_digest(resume.verdict_options(o, preflight)) for o in (
        base, limited(base, disk_limit=MIB), limited(base, disk_files=10),
        limited(base, disk_limit=None))}
    assert len(digests) == 4
    # the reserve decides when a pair starts and whether a failure is the host's: not keyed
    assert resume.verdict_options(base._replace(disk_reserve=1), preflight) == \
        resume.verdict_options(base, preflight)


@pytest.mark.parametrize(("limits", "which"), [
    (PairLimits(None, None, "watchdog", 8 * MIB, None), "disk_bytes"),
    (PairLimits(None, None, "watchdog", None, 200), "disk_files"),
])
def test_the_watchdog_ends_a_tree_that_writes_past_its_disk_budget(
        tmp_path: Path, limits: PairLimits, which: str) -> None:
    work = tmp_path / "w"
    work.mkdir()
    script = ("import os, time\n"
              "for i in range(100000):\n"
              "    with open(f'f{i}', 'wb') as f: os.posix_fallocate(f.fileno(), 0, 1 << 18)\n"
              "    time.sleep(0.001)\n")
    out = process.run((sys.executable, "-c", script), env=ENV, cwd=work, timeout=120,
                      limits=limits._replace(disk_paths=(str(work),)))
    assert out.limit_exceeded == which, out
    assert out.limits_mechanism == "watchdog"
    assert len(os.listdir(work)) < 100000  # killed, not finished


def _verdict(outcome: str, cleanup: tuple[str, ...] = ()) -> Verdict:
    return make_verdict("s", P, outcome, execution="completed", code="build_failed",
                        message="ENOSPC", cleanup=cleanup,
                        limits=ResourceLimits(memory_bytes=None, max_processes=None,
                                              mechanism="none"))


def test_a_failure_while_short_of_space_is_error_and_an_acceptance_stays() -> None:
    rejected = pair._short_of_space(_verdict("rejected"))
    assert (rejected.verdict, rejected.execution, rejected.reason.code) == (
        "error", "harness_error", "disk_short")
    assert rejected.limits is not None and rejected.limits.short_of_space
    accepted = pair._short_of_space(_verdict("accepted"))
    assert accepted.verdict == "accepted" and accepted.limits and accepted.limits.short_of_space
    left = pair._short_of_space(_verdict("accepted", cleanup=("x: EACCES",)))
    assert left.verdict == "error"  # its cleanup failed while short: not a clean acceptance


def _looks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
           seen: list[tuple[bool, int]], reserve: int = 8 * MIB) -> list[tuple[str, int] | None]:
    """``resources.disk_exceeded`` at each (short?, bytes used) in turn, with no grace."""
    from lean_eval.supervise import resources

    monkeypatch.setattr(resources, "_watch", resources._WatchState())
    monkeypatch.setattr(resources, "DISK_SHORT_GRACE", 0.0)
    limits = PairLimits(None, None, "watchdog", 1 << 40, None, (str(tmp_path),), reserve)
    found = []
    for short, used in seen:
        monkeypatch.setattr(disk, "room", lambda path, s=short: disk.Room(
            MIB if s else 1 << 40, 1 << 20))
        monkeypatch.setattr(disk, "usage", lambda paths, files, u=used: disk.Usage(u, 1))
        resources._watch.due = resources._watch.soon = 0.0  # a walk at every look
        found.append(resources.disk_exceeded(limits, list))
    return found


def test_a_pair_that_keeps_its_filesystem_short_is_over_its_disk_budget_whether_or_not_it_grew(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue 23 item 4, issue 30 item 2: within a budget of 1 TiB, a pair holding more than
    disk.SHORT_BYTES in a filesystem short of its reserve is stopped once the grace is over,
    whether it grew then or filled it before; one holding less, one whose files would not give
    the filesystem its reserve back (the host filled it), or a host short of space before the
    pair had room, is not."""
    grew = _looks(monkeypatch, tmp_path, [(False, MIB), (True, 10 * MIB), (True, 10 * MIB)])
    assert grew == [None, None, ("disk_bytes", 10 * MIB)]
    held = _looks(monkeypatch, tmp_path, [(False, 10 * MIB), (True, 10 * MIB),
                                          (True, 10 * MIB)])
    assert held == [None, None, ("disk_bytes", 10 * MIB)]
    small = _looks(monkeypatch, tmp_path, [(False, MIB), (True, MIB), (True, MIB)])
    assert small == [None, None, None]
    filled = _looks(monkeypatch, tmp_path, [(False, 10 * MIB), (True, 10 * MIB),
                                            (True, 10 * MIB)], reserve=64 * MIB)
    assert filled == [None, None, None]
    host = _looks(monkeypatch, tmp_path, [(True, MIB), (True, 10 * MIB), (True, 10 * MIB)])
    assert host == [None, None, None]
