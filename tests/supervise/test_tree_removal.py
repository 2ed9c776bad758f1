"""tree_removal.remove_tree removes what a build left, whatever it did to the tree (design
§6.11): depth past PATH_MAX, modes, links (removed, never followed), entries vanishing; what it
cannot remove is reported, never raised. Inputs live under ``outside``. The batch-level twins
are in tests/e2e/test_hostile_batch.py.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from lean_eval.supervise import tree_removal

# --- item 2: cleanup no build can defeat ------------------------------------------------------


def _deep_tree(root: Path, depth: int, name: str = "d" * 40) -> None:
    root.mkdir(parents=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i in range(depth):
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
            if i % 300 == 0:
                os.close(os.open("f", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


def test_remove_tree_copes_with_depth_permissions_links_and_vanishing(outside: Path) -> None:
    root = outside / "pair"
    _deep_tree(root / "workspace" / ".lake" / "deep", 1500)  # 1500 x 41 bytes > PATH_MAX
    locked = root / "workspace" / ".lake" / "locked"
    (locked / "inner").mkdir(parents=True)
    (locked / "inner" / "f").write_text("x")
    (locked / "inner").chmod(0)
    locked.chmod(0o500)
    victim = outside / "victim"
    victim.mkdir()
    (victim / "keep").write_text("keep")
    (root / "workspace" / ".lake" / "link").symlink_to(victim)
    assert tree_removal.remove_tree(root) == ()
    assert not root.exists()
    assert (victim / "keep").read_text() == "keep"  # the link was removed, not followed
    assert tree_removal.remove_tree(root) == ()  # already gone: nothing to do, no error


def test_negative_control_shutil_rmtree_fails_on_the_same_tree(outside: Path) -> None:
    root = outside / "pair"
    _deep_tree(root, 1500)
    with pytest.raises((RecursionError, OSError)):
        shutil.rmtree(root)
    assert tree_removal.remove_tree(root) == ()


def test_remove_tree_reports_what_it_cannot_remove_and_never_raises(outside: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root may remove anything; the unprivileged batch test covers the rest")
    root = outside / "pair"
    (root / "sub").mkdir(parents=True)
    os.chmod(outside, 0o500)  # nothing under it can be unlinked, not even by chmod of the tree
    try:
        left = tree_removal.remove_tree(root)
    finally:
        os.chmod(outside, 0o755)  # noqa: S103 - restoring the fixture's own mode
    assert left and str(root) in left[0]
