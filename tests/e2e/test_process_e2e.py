"""lean_eval.supervise.process against real child processes: deadlines, floods, orphans, env,
limits."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from support import processes_with, unique_marker

from lean_eval.supervise.process import run

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

PATH_ENV = {"PATH": "/usr/bin:/bin"}
PY = sys.executable
REPO = Path(__file__).resolve().parents[2]
# No assertion here bounds wall-clock time tightly: a machine four times slower and busy must
# pass. Lower bounds (nothing ends before its deadline or grace) are exact; upper bounds only say
# "ended by the harness, long before the child's own sleep would have ended" (LONG_SLEEP).


def _tool(name: str) -> str:
    found = shutil.which(name, path=PATH_ENV["PATH"])
    if found is None:
        pytest.skip(f"{name} not found")
    return found


# --- the process tree is gone on return --------------------------------------------------------


HARNESS_THREADS = r"""
import os, signal, sys, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from lean_eval.supervise.process import run
mode, sleep, bwrap, mark = sys.argv[2:6]
trees = [
    # ignores TERM (so only the KILL after grace ends it) and leaves a session-detached sleeper
    ("/bin/sh", "-c", f"trap '' TERM; setsid {sleep} {mark} & {sleep} {mark} & wait"),
    (bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all",
     "--die-with-parent", "--new-session", "--", "/bin/sh", "-c",
     f"{sleep} {mark} & {sleep} {mark} & wait"),
]
if mode == "reaper":  # the batch's way: run() from worker threads of a pool
    pool = ThreadPoolExecutor(max_workers=len(trees))
    for argv in trees:
        pool.submit(run, argv, env={}, cwd=Path("/"), timeout=None, grace=1.0)
else:  # negative control: the same trees started without a reaper
    for argv in trees:
        os.posix_spawn(argv[0], argv, {})
def alive():
    n = 0
    for pid in os.listdir("/proc"):
        try:
            if mark.encode() in open(f"/proc/{pid}/cmdline", "rb").read():
                n += open(f"/proc/{pid}/stat", "rb").read().rsplit(b")", 1)[1].split()[0] != b"Z"
        except (OSError, ValueError):
            pass
    return n
deadline = time.monotonic() + 60
while alive() < 5 and time.monotonic() < deadline:  # 3 sleepers + 2 sandboxed ones
    time.sleep(0.05)
os.kill(os.getpid(), signal.SIGKILL)
"""
COUNT_ALIVE = r"""
import os, sys, time
mark = os.environ["MARK"].encode()
def count():
    n = 0
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and int(pid) != os.getpid() and (
                    mark in open(f"/proc/{pid}/cmdline", "rb").read()):
                n += open(f"/proc/{pid}/stat", "rb").read().rsplit(b")", 1)[1].split()[0] != b"Z"
        except OSError:
            pass
    return n
deadline = time.monotonic() + float(sys.argv[1])  # wait for the reapers, not a fixed delay
while count() and time.monotonic() < deadline:
    time.sleep(0.05)
print(count())
"""


def _harness_killed(mode: str, marker: str) -> int:
    """Processes of the harness's trees still alive after it was SIGKILLed (counted before the
    outer run() sweeps them: the inner harness is a child of this subreaper's child). With
    reapers, the count waits (up to a minute) for them to finish their work; without, the
    survivors never end, so it counts after a second."""
    wait = 60 if mode == "reaper" else 1
    out = run(("/bin/sh", "-c", f'{PY} -I -c "$HARNESS" {REPO} {mode} {_tool("sleep")} '
               f'{_tool("bwrap")} "$MARK"; {PY} -I -c "$COUNT" {wait}'),
              env={"HARNESS": HARNESS_THREADS, "COUNT": COUNT_ALIVE, "MARK": marker},
              cwd=Path("/"), timeout=170.0, grace=1.0)
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


def test_a_sigkilled_harness_takes_every_pairs_tree_with_it() -> None:
    """Issue 7 item 1: run() called from pool threads; the harness is SIGKILLed. Each reaper
    (PR_SET_PDEATHSIG) kills its tree, a TERM-ignoring and session-detached one included, and
    bwrap's --die-with-parent takes the sandbox with it: nothing survives."""
    assert _harness_killed("reaper", unique_marker()) == 0
    marker = unique_marker()  # negative control: started without reapers, the detached ones survive
    assert _harness_killed("naive", marker) >= 2
    assert processes_with(marker) == []  # the outer run() swept them
