"""Materialise the private scoring directory of one pair (design §5.3), and remove it.

Invariants (design §6.1-§6.2):
- A workspace holds the revision's trusted files, the starters, the overlay (checked by intake)
  replacing starters path by path, an empty ``.lake``, and nothing else.
- Every write is relative to a directory the harness created itself with ``O_EXCL``-style
  creation and ``O_NOFOLLOW``, and no overlay path can leave the workspace.
- The pair's filesystem of its own, where it gets one, is mounted on ``root`` after ``prepare``
  and before ``materialise`` (so the copy of the trusted files is inside it, and the hand-over
  of the writable trees comes after both), and unmounted by ``remove`` before anything is
  removed (``supervise.pair_fs``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from lean_eval.intake.reader import SubmissionFile
from lean_eval.sandbox import identity
from lean_eval.supervise import pair_fs, tree_removal

_OVERLAY_ROOTS = ("Submission.lean", "Submission")


class PairDirs(NamedTuple):
    """A pair's private directories: ``root`` holds ``workspace`` and harness-only ``state``."""

    root: Path
    workspace: Path
    state: Path


def pair_dirs(scoring_root: Path, submission_id: str, problem_id: str) -> PairDirs:
    """Where a pair lives; submission and problem ids are validated names, never paths."""
    root = scoring_root / submission_id / problem_id
    return PairDirs(root=root, workspace=root / "workspace", state=root / "state")


def _write_new(path: Path, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _safe_relpath(relpath: str) -> PurePosixPath:
    rel = PurePosixPath(relpath)
    if rel.is_absolute() or ".." in rel.parts or rel.parts[0] not in _OVERLAY_ROOTS:
        raise ValueError(f"overlay path {relpath!r} is not Submission.lean or under Submission/")
    if rel.parts[0] == "Submission.lean" and len(rel.parts) != 1:
        raise ValueError(f"overlay path {relpath!r} is not Submission.lean or under Submission/")
    return rel


def materialise(dirs: PairDirs, trusted: Mapping[str, bytes], starter: Mapping[str, bytes],
                overlay: Iterable[SubmissionFile], shared_packages: Path | None) -> None:
    """Fill ``dirs.workspace``, which must not exist yet (module invariants)."""
    dirs.workspace.mkdir(mode=0o755)
    dirs.state.mkdir(mode=0o700, exist_ok=True)
    for name, data in trusted.items():
        target = dirs.workspace / name
        target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        _write_new(target, data, 0o644)
    files = dict(starter)
    files.update((item.relpath, item.data) for item in overlay)
    for relpath, data in sorted(files.items()):
        rel = _safe_relpath(relpath)
        target = dirs.workspace.joinpath(*rel.parts)
        for depth in range(1, len(rel.parts)):
            parent = dirs.workspace.joinpath(*rel.parts[:depth])
            if parent.is_symlink():
                raise ValueError(f"overlay directory {parent} is a symlink")
            parent.mkdir(mode=0o755, exist_ok=True)
        _write_new(target, data, 0o644)
    lake_dir = dirs.workspace / ".lake"
    lake_dir.mkdir(mode=0o755)
    if shared_packages is not None:  # linked, never copied (design §5.3)
        (lake_dir / "packages").symlink_to(shared_packages, target_is_directory=True)


def hand_over(scoring_root: Path, dirs: PairDirs, user: tuple[int, int] | None) -> None:
    """Give the sandbox identity ``user`` (uid, gid; None: not switched, nothing to do) what
    it must write, once the workspace is in place: the workspace's ``.lake`` and the state's
    ``tmp``; everything else stays the harness's and read-only to it. The directories above
    are made passable but not listable (0711), so it reaches its own pair and names no other."""
    if user is None:
        return
    uid, gid = user
    for here in (scoring_root, dirs.root.parent, dirs.root, dirs.state):
        os.chmod(here, 0o711, follow_symlinks=False)  # noqa: S103 - passable, not listable
    lake_dir = dirs.workspace / ".lake"
    os.chown(lake_dir, uid, gid, follow_symlinks=False)
    tmp = dirs.state / "tmp"
    tmp.mkdir(mode=0o700)
    os.chown(tmp, uid, gid, follow_symlinks=False)
    who = identity.SandboxUser(uid, gid, str(uid), str(gid), switched=True)
    found = identity.blocked(tmp, who, identity.EXECUTE)  # a caller's scratch made 0700 above
    if found is not None:
        raise PermissionError(f"the sandbox identity (uid {uid}) cannot reach the pair's "
                              f"directories: {found.at} (mode {found.mode:04o}) blocks it")


def prepare(dirs: PairDirs) -> tuple[str, ...]:
    """Make ``dirs.root`` exist and hold nothing (a killed run may have left it); returns what
    could not be removed (then :func:`materialise` fails and the pair is a harness error)."""
    left = _unmount_and_remove(dirs)
    dirs.root.mkdir(mode=0o700, parents=True, exist_ok=True)
    return left


def own_filesystem(dirs: PairDirs, max_bytes: int | None, max_files: int | None) -> bool:
    """Give the pair (``prepare``d, not yet ``materialise``d) a size-capped filesystem of its
    own for the budget, where this harness may mount one; whether it has one. A refused mount
    leaves the pair to the watchdog (its verdict's ``limits.disk_mechanism`` says so)."""
    if max_bytes is None or pair_fs.unavailable_reason() is not None:
        return False
    try:
        pair_fs.mount(dirs.root, max_bytes, max_files)
    except OSError:
        return False
    return True


def remove(dirs: PairDirs) -> tuple[str, ...]:
    """Unmount the pair's own filesystem, if it has one, then delete its directory; never
    raises (``supervise.tree_removal``), returns leftovers."""
    return _unmount_and_remove(dirs)


def _unmount_and_remove(dirs: PairDirs) -> tuple[str, ...]:
    try:
        pair_fs.unmount(dirs.root)
    except OSError as exc:  # removal then stops at the mount (tree_removal never crosses one)
        return (f"{dirs.root}: {exc}",)
    return tree_removal.remove_tree(dirs.root)
