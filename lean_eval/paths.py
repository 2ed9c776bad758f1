"""Path containment, defined once: whether a path lies in (or is) another once symlinks are
resolved. Component-wise, so ``/a/b`` is inside ``/a`` but ``/ab`` is not, and every absolute
path is inside ``/``. Used wherever the harness refuses overlapping or nested directories
(writable roots and tools, inputs and outputs, a replay's record, merge shards)."""

from __future__ import annotations

import os

StrPath = str | os.PathLike[str]


def inside(inner: StrPath, outer: StrPath) -> bool:
    """Whether ``inner`` is ``outer`` or lies below it, after resolving symlinks."""
    inner_s, outer_s = os.path.realpath(inner), os.path.realpath(outer)
    return inner_s == outer_s or inner_s.startswith(outer_s.rstrip("/") + "/")


def overlap(a: StrPath, b: StrPath) -> bool:
    """Whether either path holds the other (or they are the same)."""
    return inside(a, b) or inside(b, a)
