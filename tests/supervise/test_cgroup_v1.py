"""cgroup v1 groups and the reclaiming of parent groups an ended harness left (issue 23):
file layouts against stand-in directories; the real hierarchies in tests/supervise/
test_resources.py and tests/e2e/test_kernel_limits.py."""

from __future__ import annotations

import os
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


def test_only_the_groups_of_ended_harnesses_are_reclaimed(tmp_path: Path) -> None:
    dead = 2**22 + 7  # above any pid_max default: no such process
    mine = cgroup_tree.parent_name()
    reused = f"lean-eval-{os.getpid()}-1"  # this pid, another start time: its harness ended
    names = [f"lean-eval-{dead}-100", mine, reused, "lean-eval-test-1-x", "other"]
    for name in names:
        (tmp_path / name / "pair-0").mkdir(parents=True)
    reclaimed = cgroup_tree.reclaim_stale(tmp_path)
    assert sorted(reclaimed) == sorted([f"lean-eval-{dead}-100", reused])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [mine, "lean-eval-test-1-x", "other"])
    assert (tmp_path / mine / "pair-0").is_dir()  # a live harness's pair is never touched
