"""cgroup v1 groups and the reclaiming of parent groups an ended harness left (issue 23):
file layouts against stand-in directories; the real hierarchies in tests/supervise/
test_resources.py and tests/e2e/test_kernel_limits.py."""

from __future__ import annotations

import os
import subprocess  # noqa: TID251 - a second lock holder is a real process
import sys
from pathlib import Path

import pytest

from lean_eval.supervise import cgroup, cgroup_tree, cgroup_v1


def _fake_proc(tmp_path: Path) -> Path:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cgroup").write_text("9:name=systemd:/\n8:pids:/\n4:memory:/jobs/one\n0::/\n")
    (proc / "mountinfo").write_text(
        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
        "36 31 0:33 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
        "39 31 0:36 /jobs /srv/cg/pids rw,relatime - cgroup cgroup rw,pids\n")
    return proc


def test_own_group_follows_the_mount_of_each_controller(tmp_path: Path) -> None:
    proc = str(_fake_proc(tmp_path))
    assert cgroup_v1.own_group("memory", proc) == Path("/sys/fs/cgroup/memory/jobs/one")
    with pytest.raises(OSError, match="no cgroup v1 pids hierarchy"):  # "/" lies outside /jobs
        cgroup_v1.own_group("pids", proc)
    with pytest.raises(OSError, match="no cgroup v1 blkio"):
        cgroup_v1.own_group("blkio", proc)


def test_pair_groups_get_memory_memsw_and_pids_limits(tmp_path: Path) -> None:
    parents = (tmp_path / "memory" / "p", tmp_path / "pids" / "p")
    for path in parents:
        path.mkdir(parents=True)
    group = cgroup.PairGroup(tuple(p / "pair-1" for p in parents), cgroup.V1)
    cgroup_v1.make_pair_group(parents, "pair-1", 1 << 27, 64)
    memory, pids = group.paths
    assert (memory / "memory.limit_in_bytes").read_text() == str(1 << 27)
    assert (memory / "memory.swappiness").read_text() == "0"  # no memsw file here
    assert (pids / "pids.max").read_text() == "64"
    assert group.exceeded() is None
    (memory / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
    assert group.exceeded() == "memory"
    (memory / "memory.oom_control").write_text("oom_kill 0\n")
    (pids / "pids.events").write_text("max 3\n")
    assert group.exceeded() == "processes"


def _held_elsewhere(path: Path) -> subprocess.Popen[str]:
    """Another live process holding ``path``'s lock, as another harness (in whatever pid
    namespace) holds its parent group's; it says "held" once it has it."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time; "
         "fd = os.open(sys.argv[1], os.O_RDONLY); fcntl.flock(fd, fcntl.LOCK_EX); "
         "print('held', flush=True); time.sleep(120)",
         str(path)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline() == "held\n"
    return child


def test_only_the_groups_of_ended_harnesses_are_reclaimed(tmp_path: Path) -> None:
    """A group whose lock nobody holds is reclaimed; one a live process holds (a harness in
    another pid namespace: its pid in the name means nothing here), this harness's own, and
    the earlier naming, which carries no lock, are left with their pairs."""
    mine = cgroup_tree.hold(tmp_path)
    live_elsewhere = f"lean-eval-4026531999-1-{cgroup_tree.start_ticks(1) or 1}"
    dead = f"lean-eval-{cgroup_tree.pid_namespace()}-{os.getpid()}-1"  # this pid, another start
    old = f"lean-eval-{2**22 + 7}-100"  # the earlier naming: no proof of life possible
    names = [live_elsewhere, dead, old, "lean-eval-test-1-x", "other"]
    for name in names:
        (tmp_path / name / "pair-0").mkdir(parents=True)
    (mine / "pair-0").mkdir()
    holder = _held_elsewhere(tmp_path / live_elsewhere)
    try:
        assert cgroup_tree.reclaim_stale(tmp_path) == [dead]
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            [mine.name, live_elsewhere, old, "lean-eval-test-1-x", "other"])
        for name in (mine.name, live_elsewhere, old):  # a live harness's pair is never touched
            assert (tmp_path / name / "pair-0").is_dir()
    finally:
        holder.kill()
        holder.communicate()
    assert cgroup_tree.reclaim_stale(tmp_path) == [live_elsewhere]  # its harness has ended


def test_a_parent_group_is_made_again_when_a_reclaim_takes_it_before_its_lock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Between ``mkdir`` and ``flock`` another harness's reclaim may take the fresh, unlocked
    group: ``hold`` then makes it again and locks the one at the path."""
    real = cgroup_tree._lock
    taken: list[Path] = []

    def reclaimed_first(path: Path, wait: bool) -> int | None:
        if not taken:
            taken.append(path)
            path.rmdir()
            path.mkdir()  # the same name, another directory: not the one this fd would lock
            fd = real(path, wait)
            path.rmdir()
            return fd
        return real(path, wait)

    monkeypatch.setattr(cgroup_tree, "_lock", reclaimed_first)
    held = cgroup_tree.hold(tmp_path)
    assert taken == [held] and held.is_dir()
    assert cgroup_tree._lock(held, wait=False) is None  # locked by this process
