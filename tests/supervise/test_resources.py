"""Per-pair memory and process limits (design §5.5 Limits): cgroup v2, else cgroup v1, else the
watchdog; a pair over a limit ends resource_exhausted and nothing of it survives."""

from __future__ import annotations

import os
import secrets
import subprocess  # noqa: TID251 - a bare holder of shared pages, measured from outside
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import (
    kernel_mechanism,
    leftover_groups,
    processes_with,
    require_kernel,
    unique_marker,
)

from lean_eval.errors import ProcessStartError
from lean_eval.supervise import cgroup, cgroup_tree, process, procfs, resources
from lean_eval.supervise.resources import PairLimits

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

PY = sys.executable
ENV = {"PATH": "/usr/bin:/bin"}
MECHANISMS = ["watchdog", "cgroup_v2", "cgroup_v1"]


def hog(marker: str, size: int = 1 << 30, hold: float = 30) -> str:
    """Python that touches ``size`` bytes and holds them (its argv carries the marker)."""
    return f"{PY} -c 'b = bytearray({size}); import time; time.sleep({hold})' {marker}"


def storm(marker: str, count: int = 400) -> str:
    """A fork storm bounded at ``count`` sleepers, so a broken limit cannot harm the machine."""
    return (f"i=0; while [ $i -lt {count} ]; do sleep {marker} & i=$((i+1)); done; wait")


def _run(script: str, limits: PairLimits | None, timeout: float = 60) -> process.ProcessResult:
    return process.run(("/bin/sh", "-c", script), env=ENV, cwd=Path("/"), timeout=timeout,
                       limits=limits)


# --- pure parts -------------------------------------------------------------------------------


@given(memory=st.integers(0, 1 << 40), tasks=st.integers(0, 10**5),
       limit_m=st.one_of(st.none(), st.integers(1, 1 << 40)),
       limit_p=st.one_of(st.none(), st.integers(1, 10**5)))
def test_exceeded_by_names_the_limit_passed(memory: int, tasks: int, limit_m: int | None,
                                            limit_p: int | None) -> None:
    which = resources.exceeded_by(PairLimits(limit_m, limit_p), memory, tasks)
    over_m = limit_m is not None and memory > limit_m
    over_p = limit_p is not None and tasks > limit_p
    assert which == ("memory" if over_m else "processes" if over_p else None)


def test_descendants_follow_parent_links_only() -> None:
    table = {2: (1, 1), 3: (2, 1), 4: (3, 5), 5: (1, 1), 6: (99, 1)}
    assert sorted(procfs.descendants(2, table)) == [3, 4]
    assert sorted(procfs.descendants(1, table)) == [2, 3, 4, 5]


WALK = """
import os, sys
sys.path.insert(0, sys.argv[1])
from lean_eval.supervise import procfs as r
root = os.getppid()  # the shell, with its sleepers and this process below it
table = r.process_table()
print(sorted(r.tree_usage(root)[2]) == sorted(r.descendants(root, table)),
      len(r.descendants(root, table)))
"""


def test_walking_the_tree_finds_what_a_full_scan_finds(tmp_path: Path) -> None:
    script = tmp_path / "walk.py"
    script.write_text(WALK)
    repo = Path(procfs.__file__).resolve().parents[2]
    out = _run(f"for i in 1 2 3 4 5; do sleep 5 & done; {PY} {script} {repo}; kill $(jobs -p)",
               None)
    assert out.stdout.split() == [b"True", b"6"], out


def test_defaults() -> None:
    assert PairLimits() == PairLimits(8 << 30, 512, "auto")
    assert not PairLimits(None, None).any()


# --- cgroup v2 files, against a stand-in directory laid out like a group ----------------------


def _fake_group(base: Path, controllers: str = "memory pids cpu") -> Path:
    base.mkdir(parents=True, exist_ok=True)
    (base / "cgroup.controllers").write_text(controllers + "\n")
    (base / "cgroup.subtree_control").write_text("")
    return base


def test_parent_group_enables_memory_and_pids(tmp_path: Path) -> None:
    own = _fake_group(tmp_path / "own")
    (own / cgroup_tree.parent_name()).mkdir()
    _fake_group(own / cgroup_tree.parent_name(), "memory pids")
    parent = cgroup.make_parent(own)
    assert parent == own / cgroup_tree.parent_name()
    assert (own / "cgroup.subtree_control").read_text() == "+memory +pids"
    assert (parent / "cgroup.subtree_control").read_text() == "+memory +pids"


def _busy_until(monkeypatch: pytest.MonkeyPatch, own: Path, moved: bool) -> None:
    """Enabling controllers in ``own`` fails while it holds processes (the kernel's EBUSY):
    here, until the harness has moved to its leaf (or forever, when others live there too)."""
    enable = cgroup._enable

    def fake(group: Path) -> None:
        leaf = own / cgroup_tree.leaf_name() / "cgroup.procs"
        if group == own and not (moved and leaf.exists()):
            raise OSError(16, "Device or resource busy")
        enable(group)

    monkeypatch.setattr(cgroup, "_enable", fake)


def test_a_harness_in_a_busy_group_moves_itself_into_a_leaf(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own = _fake_group(tmp_path / "own")
    _fake_group(own / cgroup_tree.parent_name(), "memory pids")
    _busy_until(monkeypatch, own, moved=True)
    parent = cgroup.make_parent(own)
    leaf = own / cgroup_tree.leaf_name()
    assert (leaf / "cgroup.procs").read_text() == str(os.getpid())
    assert (own / "cgroup.subtree_control").read_text() == "+memory +pids"
    assert parent == own / cgroup_tree.parent_name()


def test_a_group_shared_with_others_gives_up_and_moves_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own = _fake_group(tmp_path / "own")
    _busy_until(monkeypatch, own, moved=False)
    with pytest.raises(OSError, match="busy"):
        cgroup.make_parent(own)
    assert (own / "cgroup.procs").read_text() == str(os.getpid())  # back where it was
    assert not (own / cgroup_tree.parent_name()).exists()


def test_a_group_without_the_controllers_is_refused(tmp_path: Path) -> None:
    own = _fake_group(tmp_path / "own", "hugetlb")
    with pytest.raises(OSError, match="does not offer memory and pids"):
        cgroup.make_parent(own)


def test_pair_group_limits_and_events(tmp_path: Path) -> None:
    parent = tmp_path / "parent"
    parent.mkdir()
    group = cgroup.make_pair_group(cgroup.Parent(cgroup.V2, (parent,)), 1 << 28, 64)
    assert (group.path / "memory.max").read_text() == str(1 << 28)
    assert (group.path / "pids.max").read_text() == "64"
    assert group.exceeded() is None
    (group.path / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    assert group.exceeded() == "memory"
    (group.path / "memory.events").write_text("max 3\noom_kill 0\n")
    (group.path / "pids.events").write_text("max 2\n")
    assert group.exceeded() == "processes"


# --- real processes: both mechanisms ----------------------------------------------------------


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_memory_hog_is_killed_as_over_its_memory_limit(mechanism: str) -> None:
    if mechanism != "watchdog":
        require_kernel(mechanism)
    marker = unique_marker()
    out = _run(hog(marker), PairLimits(256 << 20, 64, mechanism))
    assert out.limit_exceeded == "memory"
    assert out.limits_mechanism == mechanism
    assert not out.timed_out  # ended by the limit, not by the deadline or its own end
    assert processes_with(marker) == []
    assert leftover_groups() == []


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_fork_storm_is_stopped_at_its_process_limit(mechanism: str) -> None:
    if mechanism != "watchdog":
        require_kernel(mechanism)
    marker = unique_marker()
    out = _run(storm(marker), PairLimits(1 << 30, 50, mechanism))
    assert out.limit_exceeded == "processes"
    assert out.limits_mechanism == mechanism
    assert not out.timed_out
    assert processes_with(marker) == []


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_tree_within_its_limits_is_left_alone(mechanism: str) -> None:
    if mechanism != "watchdog":
        require_kernel(mechanism)
    marker = unique_marker()
    out = _run(f"{hog(marker, 32 << 20, 0.5)} & {storm('0.3', 5)}",
               PairLimits(512 << 20, 64, mechanism))
    assert (out.returncode, out.limit_exceeded, out.limits_mechanism) == (0, None, mechanism)


def test_limited_runs_from_several_threads_keep_to_their_own_trees() -> None:
    """A batch's pool: each run() judges only its own tree (the reapers never share one)."""
    marker = unique_marker()
    scripts = {"hog": hog(marker), "storm": storm(marker), "calm": f"{storm('0.5', 5)}"}
    with ThreadPoolExecutor(max_workers=3) as pool:
        done = dict(zip(scripts, pool.map(
            lambda s: _run(s, PairLimits(256 << 20, 50, "watchdog")), scripts.values()),
            strict=True))
    assert done["hog"].limit_exceeded == "memory"
    assert done["storm"].limit_exceeded == "processes"
    assert (done["calm"].returncode, done["calm"].limit_exceeded) == (0, None)
    assert processes_with(marker) == []


def test_without_limits_the_same_hog_and_storm_run_to_the_end() -> None:
    """Negative control: the tests above see a limit, not something else, end the tree."""
    marker = unique_marker()
    start = time.monotonic()
    out = _run(f"{hog(marker, 1 << 30, 1)} & {storm(marker, 60).replace(marker, '1')}", None)
    assert (out.returncode, out.limit_exceeded, out.limits_mechanism) == (0, None, None)
    assert time.monotonic() - start >= 1


@pytest.mark.parametrize("forced", ["cgroup_v2", "cgroup_v1"])
def test_forcing_a_kernel_mechanism_this_harness_does_not_use_says_why(forced: str) -> None:
    if kernel_mechanism() == forced:
        pytest.skip(f"{forced} is what this harness uses")
    with pytest.raises(ProcessStartError, match=forced):
        _run("true", PairLimits(1 << 30, 64, forced))


def test_an_unknown_mechanism_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="mechanism"):
        _run("true", PairLimits(1 << 30, 64, "ulimit"))


# --- end to end: real bubblewrap, the stand-in, one batch -------------------------------------


def _writable_cgroup2() -> Path | None:
    try:
        own = cgroup.own_cgroup2()
    except OSError:
        return None
    return own if os.access(own / "cgroup.procs", os.W_OK) and os.access(own, os.W_OK) else None


@pytest.mark.skipif(_writable_cgroup2() is None, reason="no writable cgroup2 group here")
def test_the_child_joins_its_pair_group_before_exec_and_the_group_is_removed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The cgroup plumbing on the real cgroup2 filesystem, even where it offers no memory or pids
    controller to enforce with: the child is inside the pair's group from its first
    instruction, and the group is gone when run() returns."""
    own = _writable_cgroup2()
    assert own is not None
    parent = own / f"lean-eval-test-{os.getpid()}-{secrets.token_hex(4)}"
    parent.mkdir()
    try:
        def bare_group(under: cgroup.Parent, memory: int | None,
                       processes: int | None) -> cgroup.PairGroup:
            (under.paths[0] / "pair").mkdir()
            return cgroup.PairGroup((under.paths[0] / "pair",))

        monkeypatch.setattr(cgroup, "cgroup_parent",
                            lambda: cgroup.Parent(cgroup.V2, (parent,)))
        monkeypatch.setattr(cgroup, "make_pair_group", bare_group)
        out = process.run(("/bin/cat", "/proc/self/cgroup"), env={}, cwd=Path("/"), timeout=30,
                          limits=PairLimits(1 << 30, 64))
        mine = next(ln for ln in Path("/proc/self/cgroup").read_text().splitlines()
                    if ln.startswith("0::"))
        inside = os.path.join(mine[3:], parent.name, "pair")
        assert f"0::{inside}\n".encode() in out.stdout, out.stdout
        assert (out.limits_mechanism, out.limit_exceeded) == ("cgroup_v2", None)
        assert not (parent / "pair").exists()
    finally:
        parent.rmdir()


# --- shared memory (issue 12 item 2): MAP_SHARED, memfd, /dev/shm ---------------------------

SHARED_HOLDERS = {
    "map_shared": "import mmap; m = mmap.mmap(-1, {n}); m.write(b'x' * {n})",
    "memfd": "import mmap, os; fd = os.memfd_create('m'); os.ftruncate(fd, {n}); "
             "m = mmap.mmap(fd, {n}); m.write(b'x' * {n})",
}


@pytest.mark.parametrize("kind", sorted(SHARED_HOLDERS))
def test_shared_pages_a_process_touches_are_counted_and_were_invisible_before(
        kind: str) -> None:
    """The watchdog's measure counts shared anonymous and memfd pages; the old one (resident
    minus shared, kept as ``statm_private``) is the negative control: it misses them."""
    size = 256 << 20
    code = SHARED_HOLDERS[kind].format(n=size) + "; print('ready', flush=True); input()"
    with subprocess.Popen((PY, "-c", code), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          env=ENV) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == b"ready\n"
            assert procfs.process_memory(holder.pid) >= size
            assert procfs.statm_private(holder.pid) < size // 4  # what the old one saw
        finally:
            holder.kill()


def test_the_watchdog_alone_makes_limits_best_effort(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 23 item 2: a warning whenever only the watchdog enforces memory and processes."""
    assert resources.best_effort(PairLimits(None, None)) is None
    forced = resources.best_effort(PairLimits(1 << 30, 64, "watchdog"))
    assert forced is not None and forced.startswith(resources.BEST_EFFORT)
    monkeypatch.setattr(cgroup, "cgroup_parent", lambda: None)
    monkeypatch.setattr(cgroup, "unavailable_reason", lambda: "no cgroup here")
    assert resources.best_effort(PairLimits()) == f"{resources.BEST_EFFORT}: no cgroup here"
    monkeypatch.setattr(cgroup, "cgroup_parent", lambda: cgroup.Parent(cgroup.V1, ()))
    assert resources.best_effort(PairLimits()) is None
