"""Path containment, defined once: whether a path is or lies in another once symlinks are
resolved, component-wise (``/a/b`` is inside ``/a``, ``/ab`` is not; everything is inside ``/``)."""

from __future__ import annotations

import os
from collections.abc import Iterable

StrPath = str | os.PathLike[str]


def inside(inner: StrPath, outer: StrPath) -> bool:
    """Whether ``inner`` is ``outer`` or lies below it, after resolving symlinks."""
    return resolved_inside(os.path.realpath(inner), os.path.realpath(outer))


def resolved_inside(inner: str, outer: str) -> bool:
    """``inside`` for two paths already resolved by ``os.path.realpath`` (pure)."""
    return inner == outer or inner.startswith(outer.rstrip("/") + "/")


def inside_any(inner: str, roots: Iterable[str]) -> bool:
    """Whether ``inner`` is or lies below one of ``roots``, compared as they are (pure)."""
    return any(resolved_inside(inner, root) for root in roots)


def overlap(a: StrPath, b: StrPath) -> bool:
    """Whether either path holds the other (or they are the same)."""
    return resolved_overlap(os.path.realpath(a), os.path.realpath(b))


def resolved_overlap(a: str, b: str) -> bool:
    """``overlap`` for two paths already resolved by ``os.path.realpath`` (pure)."""
    return resolved_inside(a, b) or resolved_inside(b, a)
