"""lock.reclaim removes only what a dead run of this user left (design §5.5 "Resume"); the
unprivileged twin, with a real directory of another user, is tests/e2e/test_shared_temp.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lean_eval.supervise import lock


def _run_dir(parent: Path, name: str, owner: bool = True) -> Path:
    path = parent / f"{lock.RUN_PREFIX}{name}"
    path.mkdir(mode=0o700)
    if owner:
        (path / ".owner").write_text("{}")
    return path


def test_reclaim_skips_a_directory_it_may_not_look_into(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Another user's scoring directory (mode 0700) answers EACCES to everything below it: it
    is skipped, a dead run's own directory beside it still reclaimed, a kept one left."""
    foreign = _run_dir(tmp_path, "foreign")
    dead = _run_dir(tmp_path, "dead")
    kept = _run_dir(tmp_path, "kept", owner=False)
    real_stat, real_lstat, real_open = os.stat, os.lstat, os.open

    def denied(path: object) -> None:
        if str(path).startswith(f"{foreign}/"):
            raise PermissionError(13, "Permission denied", str(path))

    def lstat(path: object, *args: object, **kwargs: object) -> os.stat_result:
        denied(path)
        return real_lstat(path, *args, **kwargs)  # type: ignore[arg-type]

    def stat(path: object, *args: object, **kwargs: object) -> os.stat_result:
        denied(path)
        return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

    def open_(path: object, *args: object, **kwargs: object) -> int:
        denied(path)
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(os, "lstat", lstat)
    monkeypatch.setattr(os, "open", open_)
    removed: list[Path] = []
    assert lock.reclaim(tmp_path, removed.append) == [dead]
    assert removed == [dead]
    assert foreign.is_dir() and kept.is_dir()


def test_reclaim_leaves_a_live_run_and_links(tmp_path: Path) -> None:
    live = lock.RunDir(tmp_path)
    target = _run_dir(tmp_path, "target")
    (tmp_path / f"{lock.RUN_PREFIX}link").symlink_to(target)
    removed: list[Path] = []
    try:
        assert lock.reclaim(tmp_path, removed.append) == [target]
    finally:
        live.release(keep=False)
    assert live.path not in removed
