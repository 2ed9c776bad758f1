"""What Lake sees of the harness (design §5.4 steps 3 and 4): an allowlisted environment and a
filtered search path."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

from lean_eval.files.paths import inside_any


def _world_writable_chain(path: str) -> bool:
    current = path
    while True:
        try:
            mode = os.stat(current).st_mode
        except OSError:
            return True
        if mode & stat.S_IWOTH and not mode & stat.S_ISVTX:
            return True
        parent = os.path.dirname(current)
        if parent == current:
            return False
        current = parent


def filter_search_path(value: str, writable_roots: Sequence[Path]) -> tuple[str, ...]:
    """The entries of a search path Lake may use, in order, without repeats: absolute, existing,
    inside no writable root before or after resolving symlinks, and under no world-writable
    directory without the sticky bit (SECURITY.md invariant 8)."""
    roots = [os.path.realpath(r) for r in writable_roots]
    roots += [os.path.abspath(r) for r in writable_roots]
    kept: list[str] = []
    for entry in value.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        real = os.path.realpath(entry)
        if (not os.path.isdir(real) or inside_any(os.path.normpath(entry), roots)
                or inside_any(real, roots)):
            continue
        if _world_writable_chain(real) or entry in kept:
            continue
        kept.append(entry)
    return tuple(kept)


ENV_ALLOWLIST = ("PATH", "HOME", "LANG", "TMPDIR", "COMPARATOR_BWRAP")


def lake_environment(caller: Mapping[str, str], *, search_path: Sequence[str], tmpdir: Path,
                     wrapper: Path) -> dict[str, str]:
    """The whole environment Lake gets: the allowlist and nothing else of the caller's."""
    env = {
        "PATH": os.pathsep.join(search_path),
        "TMPDIR": str(tmpdir),
        "COMPARATOR_BWRAP": str(wrapper),
        "HOME": caller.get("HOME", str(tmpdir)),
    }
    if caller.get("LANG"):
        env["LANG"] = caller["LANG"]
    return env
