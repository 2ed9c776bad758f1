"""Remove a directory tree whatever a build left in it (design §5.3, §6.10): any depth, with at
most ``_KEEP_OPEN`` directory descriptors open (deeper levels are re-opened, each checked to be
the directory first seen there), entries without permissions (we own the tree and grant
ourselves what removal needs), entries vanishing. It never follows a link (directories are
opened ``O_NOFOLLOW`` relative to their parent's descriptor, so no path reaches ``PATH_MAX``),
never crosses into another filesystem (a mount point below ``path``, or ``path`` itself when
it is one, is left and reported: the pair filesystems are unmounted before removal,
``supervise.pair_fs``) and never raises.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import NamedTuple

_DIR_OPEN = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_KEEP_OPEN = 64  # descriptors kept for the path being removed; deeper ones are re-opened
LEFTOVER_CAP = 20


def _open_dir(name: str, dir_fd: int) -> int:
    """Open a subdirectory, granting ourselves search and read permission if needed."""
    try:
        return os.open(name, _DIR_OPEN, dir_fd=dir_fd)
    except PermissionError:
        handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                         dir_fd=dir_fd)
        try:
            os.chmod(f"/proc/self/fd/{handle}", 0o700)
        finally:
            os.close(handle)
        return os.open(name, _DIR_OPEN, dir_fd=dir_fd)


def _unlink(name: str, dir_fd: int, is_dir: bool) -> None:
    """Remove one entry; a parent without write permission gets it (we own the tree)."""
    def attempt() -> None:
        if is_dir:
            os.rmdir(name, dir_fd=dir_fd)
        else:
            os.unlink(name, dir_fd=dir_fd)
    try:
        attempt()
    except PermissionError:
        os.fchmod(dir_fd, 0o700)
        attempt()


class _Level(NamedTuple):
    fd: int | None  # None: closed to bound open descriptors; re-opened from the parent
    name: str  # name of this directory in its parent
    ident: tuple[int, int]  # (st_dev, st_ino): re-opening must find the same directory


def _reopen(levels: list[_Level], index: int, top_fd: int) -> int:
    """The descriptor of ``levels[index]``, re-opening closed levels from the nearest open
    ancestor down (iteratively), each checked to be the directory first seen there."""
    start = index
    while start >= 0 and levels[start].fd is None:
        start -= 1
    found = top_fd if start < 0 else levels[start].fd
    fd = top_fd if found is None else found
    for i in range(start + 1, index + 1):
        level = levels[i]
        child = _open_dir(level.name, fd)
        st = os.fstat(child)
        if (st.st_dev, st.st_ino) != level.ident:
            os.close(child)
            raise OSError(f"directory {level.name!r} was replaced while being removed")
        levels[i] = level._replace(fd=child)
        fd = child
    return fd


def _climb(child_fd: int, levels: list[_Level]) -> None:
    """Re-open the closed parent level through ``..`` of its child, if it is still the same."""
    up = os.open("..", _DIR_OPEN, dir_fd=child_fd)
    st = os.fstat(up)
    if (st.st_dev, st.st_ino) != levels[-1].ident:
        os.close(up)  # moved meanwhile: _reopen walks down from the top instead
        return
    levels[-1] = levels[-1]._replace(fd=up)


def remove_tree(path: Path) -> tuple[str, ...]:
    """Remove ``path`` and everything under it; the paths left behind (at most
    ``LEFTOVER_CAP``), each with the error that kept it."""
    left: list[str] = []
    try:
        _remove_tree(path, left)
    except Exception as exc:  # noqa: BLE001 - removal reports, never raises
        left.append(f"{path}: {type(exc).__name__}: {exc}")
    if len(left) > LEFTOVER_CAP:
        left[LEFTOVER_CAP:] = [f"... and {len(left) - LEFTOVER_CAP} more"]
    return tuple(left)


def _remove_tree(path: Path, left: list[str]) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    parent_fd = os.open(path.parent, _DIR_OPEN)
    try:
        if stat.S_ISDIR(st.st_mode) and os.fstat(parent_fd).st_dev != st.st_dev:
            left.append(f"{path}: a mount point, not crossed")
            return
        if not stat.S_ISDIR(st.st_mode):
            _unlink(path.name, parent_fd, is_dir=False)
            return
        _remove_dir(parent_fd, path, left)
    finally:
        os.close(parent_fd)


def _remove_dir(top_fd: int, path: Path, left: list[str]) -> None:
    """Depth-first removal of ``path`` (a directory in ``top_fd``) with an explicit stack."""
    fd = _open_dir(path.name, top_fd)
    st = os.fstat(fd)
    levels = [_Level(fd, path.name, (st.st_dev, st.st_ino))]
    given_up: set[tuple[int, int]] = set()  # directories that keep an entry we could not remove
    failed_files: set[tuple[int, int]] = set()
    try:
        while levels:
            here = _reopen(levels, len(levels) - 1, top_fd)
            child = _next_subdir(here, levels, path, given_up, failed_files, left)
            if child is not None:
                _descend(here, child, levels, path, given_up, left)
            else:
                _ascend(top_fd, levels, path, given_up, left)
    finally:
        for level in levels:
            if level.fd is not None:
                os.close(level.fd)


def _descend(here: int, child: tuple[str, tuple[int, int]], levels: list[_Level], path: Path,
             given_up: set[tuple[int, int]], left: list[str]) -> None:
    name, ident = child
    index = len(levels) - _KEEP_OPEN
    if index > 0:
        closing = levels[index].fd
        if closing is not None:  # bound open descriptors; _climb re-opens on the way up
            os.close(closing)
            levels[index] = levels[index]._replace(fd=None)
    try:
        child_fd = _open_dir(name, here)
    except FileNotFoundError:
        return
    except OSError as exc:
        given_up.add(ident)
        left.append(f"{_shown(path, levels, name)}: {type(exc).__name__}: {exc}")
        return
    levels.append(_Level(child_fd, name, ident))


def _ascend(top_fd: int, levels: list[_Level], path: Path, given_up: set[tuple[int, int]],
            left: list[str]) -> None:
    """The deepest level is empty (or gave up): close it and remove it from its parent."""
    done = levels.pop()
    if levels and levels[-1].fd is None and done.fd is not None:
        _climb(done.fd, levels)  # O(1) instead of re-opening from the top
    if done.fd is not None:
        os.close(done.fd)
    parent = top_fd if not levels else _reopen(levels, len(levels) - 1, top_fd)
    if done.ident not in given_up:
        try:
            _unlink(done.name, parent, is_dir=True)
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            left.append(f"{_shown(path, levels, done.name)}: {type(exc).__name__}: {exc}")
    if levels:
        given_up.add(levels[-1].ident)


def _shown(path: Path, levels: list[_Level], name: str) -> str:
    parts = [path.parent.as_posix(), *(lv.name for lv in levels), name]
    text = "/".join(parts)
    return text if len(text) <= 300 else text[:140] + "/.../" + text[-155:]


def _next_subdir(here: int, levels: list[_Level], path: Path, given_up: set[tuple[int, int]],
                 failed_files: set[tuple[int, int]], left: list[str]
                 ) -> tuple[str, tuple[int, int]] | None:
    """Unlink every non-directory of ``here``; return the first subdirectory still to empty."""
    try:
        names = os.listdir(here)
    except PermissionError:
        os.fchmod(here, 0o700)
        names = os.listdir(here)
    for name in names:
        try:
            st = os.stat(name, dir_fd=here, follow_symlinks=False)
        except FileNotFoundError:
            continue
        ident = (st.st_dev, st.st_ino)
        if stat.S_ISDIR(st.st_mode):
            if st.st_dev != levels[-1].ident[0] and ident not in given_up:  # a mount point
                given_up.update((ident, levels[-1].ident))
                left.append(f"{_shown(path, levels, name)}: a mount point, not crossed")
            if ident not in given_up:
                return name, ident
            continue
        if ident in failed_files:
            continue
        try:
            _unlink(name, here, is_dir=False)
        except FileNotFoundError:
            continue
        except OSError as exc:
            failed_files.add(ident)
            given_up.add(levels[-1].ident)
            left.append(f"{_shown(path, levels, name)}: {type(exc).__name__}: {exc}")
    return None
