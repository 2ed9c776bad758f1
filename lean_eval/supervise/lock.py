"""Kernel locks (design §5.5 "Resume"): one run at a time per ``--out``, and scoring directories
owned by a live run.

- ``OutLock``'s file, ``<out>/.lean-eval.lock``, is never deleted: two runs could then lock two
  different files. The kernel frees the lock of a holder that died.
- A ``lean-eval-run-*`` directory whose ``.owner`` another process can lock belongs to a dead
  run and is reclaimed; one kept with ``--keep-work`` has no ``.owner`` and never is; one this
  user cannot look into or lock (another user's, mode 0700, in a shared temp dir) is skipped.
- Nothing here follows a symlink planted where the lock files go.
- A dead run's pair filesystems (``supervise.pair_fs``) are unmounted before its directory is
  removed; removal never crosses into any other mount (``supervise.tree_removal``).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import stat
import tempfile
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from lean_eval.errors import UsageError
from lean_eval.records import out_layout
from lean_eval.supervise import pair_fs

RUN_PREFIX = "lean-eval-run-"
_OWNER = ".owner"
_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


def _holder() -> bytes:
    return json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                       "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds")
                       }).encode()


def _try_lock(path: Path, create: bool = True) -> int | None:
    """An fd holding an exclusive flock on ``path``, or None when someone else holds it."""
    fd = os.open(path, _FLAGS if create else _FLAGS & ~os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _describe(path: Path) -> str:
    try:
        data = json.loads(path.read_bytes()[:4096])
        return f"pid {int(data['pid'])} on {str(data['host'])[:64]!r} since {data['started_at']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


class OutLock:
    """The exclusive right to write one output directory; release with ``close``."""

    def __init__(self, out_dir: Path, create: bool = True) -> None:
        path = out_dir / out_layout.LOCK
        self.out_dir = out_dir
        try:
            fd = _try_lock(path, create)
        except OSError as exc:
            if not create and isinstance(exc, (FileNotFoundError, NotADirectoryError)):
                raise  # no lock file yet: see if_present
            raise UsageError(f"--out {out_dir}: cannot lock {path}: {exc.strerror}") from None
        if fd is None:
            raise UsageError(f"--out {out_dir} is in use by {_describe(path)} (lock {path}); "
                             "wait for that run or pass another --out")
        os.ftruncate(fd, 0)
        os.pwrite(fd, _holder(), 0)
        self._fd: int | None = fd

    @classmethod
    def if_present(cls, out_dir: Path) -> OutLock | None:
        """The lock of an ``out_dir`` that already has a lock file, else None; creates nothing
        (design §5.5 "Order of checks")."""
        try:
            return cls(out_dir, create=False)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def close(self) -> None:
        """Release the lock (the kernel would on exit anyway)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class RunDir:
    """This run's scoring root: ``<parent>/lean-eval-run-*``, flocked while the run lives."""

    def __init__(self, parent: Path, exact: bool = False) -> None:
        if exact:  # the caller names the root (probes); it is neither locked nor reclaimed
            parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.path, self._fd = parent.resolve(), None
            return
        self.path = Path(tempfile.mkdtemp(prefix=RUN_PREFIX, dir=parent)).resolve()
        fd = _try_lock(self.path / _OWNER)
        if fd is None:  # nobody else can know this fresh name
            raise UsageError(f"cannot lock new scoring directory {self.path}")
        os.pwrite(fd, _holder(), 0)
        self._fd = fd

    _fd: int | None

    def release(self, keep: bool) -> None:
        """Give the directory up; ``keep`` leaves it for inspection, never to be reclaimed."""
        if self._fd is None:
            return
        if keep:
            (self.path / _OWNER).unlink(missing_ok=True)
        os.close(self._fd)
        self._fd = None


def _owner_lock(path: Path) -> int | None:
    """The lock of a dead run's scoring directory ``path``, or None: not a directory, kept on
    purpose (no ``.owner``), held by a live run, or not this user's to look into."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return None
        owner = path / _OWNER
        if not stat.S_ISREG(os.lstat(owner).st_mode):
            return None  # kept on purpose (--keep-work), a planted link, or not ours
        return _try_lock(owner, create=False)
    except OSError:  # gone meanwhile, or another user's directory (EACCES): not ours to judge
        return None


def reclaim(parent: Path, remove: Callable[[Path], object]) -> list[Path]:
    """Remove the scoring directories under ``parent`` left by runs that are no longer alive."""
    reclaimed: list[Path] = []
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return reclaimed
    for name in names:
        path = parent / name
        if not name.startswith(RUN_PREFIX):
            continue
        fd = _owner_lock(path)
        if fd is None:
            continue
        try:
            pair_fs.unmount_below(path)
            remove(path)
        finally:
            os.close(fd)
        reclaimed.append(path)
    return reclaimed


def _stray_temp(item: os.DirEntry[str]) -> bool:
    # ``.<name>.<random>.tmp``: atomic.temporary_name; ``<problem>.log.tmp``: the fixed name
    # older releases wrote logs through. Unlinking a planted symlink never follows it.
    named = (item.name.startswith(".") and item.name.endswith(".tmp")) or \
        item.name.endswith(".log.tmp")
    return named and (item.is_file(follow_symlinks=False) or item.is_symlink())


def remove_stray_temps(out_dir: Path) -> list[Path]:
    """Delete the temporaries (and links there) a killed run left in ``out_dir`` and one level
    down. Call only while holding the ``OutLock``: then no live writer owns them."""
    removed: list[Path] = []
    try:
        top = list(os.scandir(out_dir))
    except OSError:
        return removed
    for entry in top:
        candidates = [entry]
        if entry.is_dir(follow_symlinks=False):
            try:
                candidates = list(os.scandir(entry.path))
            except OSError:
                continue
        for item in candidates:
            if _stray_temp(item):
                Path(item.path).unlink(missing_ok=True)
                removed.append(Path(item.path))
    return removed
