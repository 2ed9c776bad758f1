"""What a walk of ``/proc`` maps or a walk of the trees misses, and the watchdog now counts
(issue 23): a memfd filled with ``write()`` and never mapped, SysV segments touched and
detached in the pair's own IPC namespace, and files unlinked while held open. Each test also
shows the old measure's blindness (its negative control)."""

from __future__ import annotations

import os
import shutil
import subprocess  # noqa: TID251 - a bare holder of hidden pages, measured from outside
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lean_eval.supervise import disk, procfs

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

MIB = 1 << 20
HOLDERS = {
    "memfd": "fd = os.memfd_create('m')\nfor _ in range(16): os.write(fd, b'x' * (1 << 20))\n",
    "sysv": ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
             "libc.shmat.restype = ctypes.c_void_p\n"
             "for _ in range(4):\n"
             "    sid = libc.shmget(0, 4 << 20, 0o1600)\n"
             "    addr = libc.shmat(sid, None, 0)\n"
             "    ctypes.memset(addr, 1, 4 << 20)\n"
             "    libc.shmdt(ctypes.c_void_p(addr))\n"),
    "unlinked": ("held = []\nfor i in range(2):\n"
                 "    f = open(f'held{i}', 'wb'); f.write(b'x' * (8 << 20)); f.flush()\n"
                 "    os.unlink(f'held{i}'); held.append(f)\n"),
}


def _holder(kind: str, cwd: Path, prefix: tuple[str, ...] = ()) -> Iterator[int]:
    script = f"import os, sys, time\n{HOLDERS[kind]}print('ready', flush=True)\ntime.sleep(60)\n"
    child = subprocess.Popen([*prefix, sys.executable, "-c", script], cwd=cwd,
                             stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
        yield child.pid
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()


def test_an_unmapped_memfd_is_counted_and_no_pss_shows_it(tmp_path: Path) -> None:
    for pid in _holder("memfd", tmp_path):
        assert procfs.held_memfds([pid]) >= 16 * MIB
        assert procfs.process_memory(pid) < 16 * MIB  # the old measure's blindness


def test_detached_sysv_segments_of_the_trees_ipc_namespace_are_counted(tmp_path: Path) -> None:
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        pytest.skip("joining another IPC namespace needs a root harness (SECURITY.md)")
    for pid in _holder("sysv", tmp_path, (unshare, "--ipc")):
        assert procfs.sysv_segments([pid]) >= 16 * MIB
        assert procfs.process_memory(pid) < 16 * MIB
    assert os.readlink("/proc/self/ns/ipc") == procfs._OWN_IPC  # the reaper went back


def test_segments_of_the_harness_own_ipc_namespace_are_not_the_pairs(tmp_path: Path) -> None:
    for pid in _holder("memfd", tmp_path):
        assert procfs.sysv_segments([pid]) == 0


def test_files_unlinked_while_held_open_count_against_the_disk_budget(tmp_path: Path) -> None:
    for pid in _holder("unlinked", tmp_path):
        assert disk.usage([str(tmp_path)]).bytes < MIB  # invisible to the walk
        assert disk.held_unlinked([pid], disk.devices([str(tmp_path)])) >= 16 * MIB
        assert disk.held_unlinked([pid], {os.makedev(0, 1)}) == 0  # another filesystem's
