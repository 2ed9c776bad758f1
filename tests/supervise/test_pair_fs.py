"""A pair's own filesystem and the watchdog's fail-closed accounting (issue 30 item 2): the
tmpfs mount and its count, its reclaim, removal that never crosses a mount, the walk by
directory descriptor and the run's disk ledger. End to end: tests/e2e/test_disk_attacks.py."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lean_eval.supervise import disk, disk_ledger, lock, pair_fs, resources, tree_removal
from lean_eval.supervise.resources import PairLimits

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

MIB = 1 << 20


@pytest.fixture
def can_mount() -> None:
    why = pair_fs.unavailable_reason()
    if why is not None:
        pytest.skip(why)


@pytest.fixture
def cleanup(tmp_path: Path) -> Iterator[None]:
    yield
    pair_fs.unmount_below(tmp_path)


@pytest.mark.usefixtures("can_mount", "cleanup")
def test_a_pair_filesystem_refuses_writes_past_its_budget_and_counts_what_no_walk_sees(
        tmp_path: Path) -> None:
    root = tmp_path / "pair"
    root.mkdir(mode=0o700)
    pair_fs.mount(root, 4 * MIB, 100)
    assert str(root) in pair_fs.own_mounts()
    assert (root.stat().st_mode & 0o7777, root.stat().st_uid) == (0o700, os.getuid())
    assert pair_fs.exceeded(str(root), 4 * MIB, 100) is None
    held = open(root / "held", "wb")  # noqa: SIM115 - held open past its unlink
    held.write(b"\1" * (3 * MIB))
    held.flush()
    os.unlink(root / "held")
    assert pair_fs.use(str(root)).bytes >= 3 * MIB  # type: ignore[union-attr]
    with pytest.raises(OSError, match="No space left"), open(root / "more", "wb") as f:
        f.write(b"\1" * (4 * MIB))  # the kernel's own refusal
    assert pair_fs.exceeded(str(root), 4 * MIB, 100) is not None
    held.close()
    assert pair_fs.unmount(root) and str(root) not in pair_fs.own_mounts()
    assert not pair_fs.unmount(root)  # nothing there any more: a no-op


def _optional_fields(point: Path) -> list[str]:
    """The propagation tags (``shared:N``, ``master:N``) of the mount at ``point``."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, _ = line.partition(" - ")
        fields = left.split()
        if fields[4] == str(point):
            return fields[6:]
    raise AssertionError(f"{point} is not mounted")


@pytest.mark.usefixtures("can_mount", "cleanup")
def test_a_pair_filesystem_is_private_so_its_unmount_never_reaches_a_sandbox_that_copied_it(
        tmp_path: Path) -> None:
    # A shared pair mount and its unmount would propagate into the namespace of every sandbox
    # started meanwhile (where / is shared, as systemd makes it).
    root = tmp_path / "pair"
    root.mkdir(mode=0o700)
    parent_shared = any(tag.startswith("shared:") for tag in _optional_fields(Path("/")))
    pair_fs.mount(root, 4 * MIB, 100)
    assert not [tag for tag in _optional_fields(root) if tag.startswith("shared:")], (
        "the pair filesystem joined a peer group" + (" (/ is shared here)" if parent_shared
                                                      else ""))


@pytest.mark.usefixtures("can_mount", "cleanup")
def test_a_pair_filesystem_out_of_inodes_is_over_the_file_budget(tmp_path: Path) -> None:
    root = tmp_path / "pair"
    root.mkdir()
    pair_fs.mount(root, 4 * MIB, 8)
    for name in ("workspace", "state"):
        (root / name).mkdir()
    made = 0
    while made < 100:
        try:
            (root / "workspace" / f"f{made}").touch()
        except OSError:
            break
        made += 1
    assert 8 <= made < 100
    assert pair_fs.exceeded(str(root), 4 * MIB, 8) == ("disk_files", made)


def test_mountinfo_paths_are_unescaped_and_only_pair_filesystems_listed(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(
        "1 0 0:1 / / rw - ext4 /dev/sda rw\n"
        "2 1 0:2 / /w/a\\040b rw,nosuid - tmpfs lean-eval-pair rw,size=1024k\n"
        "3 1 0:3 / /w/a\\040b/deeper/x rw - tmpfs lean-eval-pair rw\n"
        "4 1 0:4 / /w/other rw - tmpfs tmpfs rw\n")
    assert pair_fs.own_mounts(str(info)) == ["/w/a b/deeper/x", "/w/a b"]


@pytest.mark.usefixtures("can_mount", "cleanup")
def test_reclaim_unmounts_a_dead_runs_pair_filesystems_before_removing_its_tree(
        tmp_path: Path) -> None:
    dead = tmp_path / f"{lock.RUN_PREFIX}dead"
    pair_root = dead / "sub" / "problem"
    pair_root.mkdir(parents=True)
    (dead / ".owner").touch()
    pair_fs.mount(pair_root, MIB, 16)
    (pair_root / "left").write_bytes(b"x")
    assert lock.reclaim(tmp_path, tree_removal.remove_tree) == [dead]
    assert not dead.exists() and pair_fs.own_mounts() == [
        p for p in pair_fs.own_mounts() if not p.startswith(str(tmp_path))]


@pytest.mark.usefixtures("can_mount")
def test_removal_never_crosses_into_a_mount(tmp_path: Path) -> None:
    """A mount below the tree (or the tree itself being one) is left and reported, with what
    it holds untouched."""
    tree = tmp_path / "tree"
    inner = tree / "a" / "mounted"
    inner.mkdir(parents=True)
    (tree / "a" / "file").write_bytes(b"x")
    pair_fs.mount(inner, MIB, 16)
    try:
        (inner / "kept").write_bytes(b"y")
        left = tree_removal.remove_tree(tree)
        assert any("a mount point, not crossed" in item for item in left), left
        assert (inner / "kept").read_bytes() == b"y"
        assert not (tree / "a" / "file").exists()
        top = tree_removal.remove_tree(inner)
        assert top == (f"{inner}: a mount point, not crossed",)
        assert (inner / "kept").exists()
    finally:
        pair_fs.unmount(inner)
    assert tree_removal.remove_tree(tree) == () and not tree.exists()


def test_the_walk_reaches_below_path_max_and_fails_closed_past_its_depth(tmp_path: Path) -> None:
    here = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i in range(20):  # 20 x 250 characters: no string path reaches the bottom
            name = f"{i:02d}" + "d" * 248
            os.mkdir(name, dir_fd=here)
            below = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=here)
            os.close(here)
            here = below
        fd = os.open("fill", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=here)
        os.posix_fallocate(fd, 0, 4 * MIB)
        os.close(fd)
    finally:
        os.close(here)
    used = disk.usage([str(tmp_path)])
    assert used.readable and used.files == 21 and used.bytes >= 4 * MIB
    deep = tmp_path / "deep"
    deep.mkdir()
    here = os.open(deep, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(disk.MAX_DEPTH + 1):
        os.mkdir("d", dir_fd=here)
        below = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=here)
        os.close(here)
        here = below
    os.close(here)
    too_deep = disk.usage([str(deep)])
    assert not too_deep.readable
    assert disk.exceeded_by(too_deep, 1 << 40, None) == "disk_bytes"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every directory")
def test_a_directory_the_walk_cannot_read_puts_the_pair_over(tmp_path: Path) -> None:
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "f").write_bytes(b"x")
    hidden.chmod(0)
    try:
        assert disk.exceeded_by(disk.usage([str(tmp_path)]), 1 << 40, None) == "disk_bytes"
    finally:
        hidden.chmod(0o700)


def test_space_no_walk_explains_is_charged_to_a_pair_holding_a_socket(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two pairs on one filesystem that lost 40 MiB beyond their walks: the one whose processes
    hold a socket is charged it, the other is not; each entry is gone once forgotten."""
    ledger = tmp_path / "ledger"
    ledger.mkdir()
    ws = {name: tmp_path / name for name in ("good", "hostile")}
    for path in ws.values():
        path.mkdir()
    fs_used = [100 * MIB]
    monkeypatch.setattr(disk_ledger, "filesystem_used", lambda path: fs_used[0])
    device = os.stat(tmp_path).st_dev
    pairs = {name: (PairLimits(None, None, "watchdog", 16 * MIB, None, (str(ws[name]),),
                               disk_ledger=str(ledger)), resources._WatchState(), sockets)
             for name, sockets in (("good", False), ("hostile", True))}

    def look(name: str) -> tuple[int, bool]:
        limits, state, sockets = pairs[name]
        monkeypatch.setattr(resources, "_watch", state)
        return resources._charged(limits, {device}, MIB, sockets)

    assert look("good") == look("hostile") == (MIB, True)  # the baselines: all explained
    fs_used[0] += 40 * MIB
    assert look("hostile") == (41 * MIB, True)
    assert look("good") == (MIB, False)
    for path in ws.values():
        disk_ledger.forget(str(ledger), str(path))
    assert os.listdir(ledger) == []


def test_held_descriptors_say_whether_a_socket_is_among_them() -> None:
    a, b = socket.socketpair()
    try:
        found = disk.held([os.getpid()], set())
        assert found.sockets and found.bytes == 0
    finally:
        a.close()
        b.close()


def test_the_disk_budget_is_best_effort_without_a_pair_filesystem(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pair_fs, "unavailable_reason", lambda: "not root")
    warning = pair_fs.best_effort(16 * MIB, 100, keep_work=False)
    assert warning is not None and "best-effort" in warning and "(not root)" in warning
    assert pair_fs.best_effort(None, None, keep_work=False) is None
    monkeypatch.setattr(pair_fs, "unavailable_reason", lambda: None)
    assert pair_fs.best_effort(16 * MIB, 100, keep_work=False) is None
    assert "--keep-work" in (pair_fs.best_effort(16 * MIB, 100, keep_work=True) or "")
    assert "--disk-limit" in (pair_fs.best_effort(None, 100, keep_work=False) or "")


def test_the_mount_size_is_the_budget_and_a_margin_in_whole_pages() -> None:
    size = pair_fs.size_for(16 * MIB)
    assert size % os.sysconf("SC_PAGE_SIZE") == 0
    assert 16 * MIB + pair_fs.MARGIN <= size < 16 * MIB + pair_fs.MARGIN + 4096 * 16
