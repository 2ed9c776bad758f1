"""The watchdog's tmpfs measure (lean_eval.supervise.procfs.private_tmpfs) counts the sandboxes' own
tmpfs mounts, wherever they are mounted, and nothing else: not the disk that a sandbox being set
up still reaches through ``/proc/<pid>/root``, not a host tmpfs that a fresh namespace still
shows.

Found in CI: a correct probe pair ended ``resource_exhausted`` over the default 8 GiB, because
one sample read a bwrap child's mountinfo before its pivot (a tmpfs at ``/tmp``) and its root
after it (``/tmp`` on the disk, with tens of GB used)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lean_eval.supervise import procfs

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

FOREIGN = "mnt:[4026599999]"  # a mount namespace other than this process's


def _line(device: int, point: str) -> str:
    return f"40 30 {os.major(device)}:{os.minor(device)} / {point} rw,relatime - tmpfs tmpfs rw\n"


def _fake_proc(tmp_path: Path, *, own: str, pair: str, root: Path) -> Path:
    """A procfs of two entries: ``self`` (the harness) and ``7`` (a sandboxed process whose
    namespace is FOREIGN and whose root is ``root``), with the given mountinfo texts."""
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "mountinfo").write_text(own)
    (proc / "7" / "ns").mkdir(parents=True)
    (proc / "7" / "ns" / "mnt").symlink_to(FOREIGN)
    (proc / "7" / "mountinfo").write_text(pair)
    (proc / "7" / "root").symlink_to(root)
    return proc


@pytest.fixture
def shm_file() -> Iterator[Path]:
    """1 MiB stored in this machine's /dev/shm (a tmpfs), removed afterwards."""
    shm = Path("/dev/shm")
    mounts = (line.split()[1:3] for line in Path("/proc/self/mounts").read_text().splitlines())
    if ["/dev/shm", "tmpfs"] not in mounts:
        pytest.skip("no tmpfs at /dev/shm here")
    held = shm / f"lean-eval-test-{os.getpid()}"
    held.write_bytes(b"x" * (1 << 20))
    yield shm
    held.unlink()


def test_a_root_that_reaches_another_device_than_the_mountinfo_names_counts_nothing(
        tmp_path: Path) -> None:
    """The race itself, made to stand still: mountinfo says ``/tmp`` is a tmpfs, the root's
    ``tmp`` is a directory on the disk. The old measure counted the disk's used bytes."""
    root = tmp_path / "root"
    (root / "tmp").mkdir(parents=True)
    proc = _fake_proc(tmp_path, own="", pair=_line(os.makedev(0, 999), "/tmp"), root=root)
    assert os.stat(root / "tmp").st_dev != os.makedev(0, 999)
    assert procfs.private_tmpfs([7], proc=str(proc)) == 0


def test_a_tmpfs_on_the_device_its_mountinfo_names_is_counted(tmp_path: Path,
                                                              shm_file: Path) -> None:
    root = tmp_path / "root"
    (root / "dev").mkdir(parents=True)
    (root / "dev" / "shm").symlink_to(shm_file)
    device = os.stat(shm_file).st_dev
    proc = _fake_proc(tmp_path, own="", pair=_line(device, "/dev/shm"), root=root)
    assert procfs.private_tmpfs([7], proc=str(proc)) >= 1 << 20


def test_a_tmpfs_the_harness_sees_too_is_not_the_pairs(tmp_path: Path, shm_file: Path) -> None:
    """A fresh namespace still shows the host's mounts until bwrap pivots: the host's /dev/shm is
    shared with everything else on the machine, not the pair's."""
    root = tmp_path / "root"
    (root / "dev").mkdir(parents=True)
    (root / "dev" / "shm").symlink_to(shm_file)
    device = os.stat(shm_file).st_dev
    proc = _fake_proc(tmp_path, own=_line(device, "/dev/shm"), pair=_line(device, "/dev/shm"),
                      root=root)
    assert procfs.private_tmpfs([7], proc=str(proc)) == 0


@pytest.mark.parametrize("point", ["/scratch", "/home", "/root", "/srv/masked/out-parent"])
def test_a_tmpfs_of_the_pair_counts_wherever_it_is_mounted(tmp_path: Path, shm_file: Path,
                                                           point: str) -> None:
    """Issue 23: Lake's ``/home`` and ``/root`` and the wrapper's masks are tmpfs mounts of the
    pair's too; the old measure read five fixed names only and counted none of these."""
    root = tmp_path / "root"
    (root / point.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
    (root / point.lstrip("/")).symlink_to(shm_file)
    proc = _fake_proc(tmp_path, own="", pair=_line(os.stat(shm_file).st_dev, point),
                      root=root)
    assert procfs.private_tmpfs([7], proc=str(proc)) >= 1 << 20
