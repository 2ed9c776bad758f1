"""The benchmark checkout a command works on: found, loaded and narrowed to a selection (for
the command line and the API; the catalog's ``warnings`` are the caller's to show).
"""

from __future__ import annotations

from pathlib import Path

from lean_eval.benchmark.catalog import Catalog, load_catalog
from lean_eval.benchmark.selection import select_catalog
from lean_eval.benchmark.sets import Selection
from lean_eval.errors import CatalogError


def default_benchmark() -> Path:
    """The top of the git work tree holding the current directory (the nearest directory with
    a ``.git`` entry, found as git finds it, without running git), else the current directory.
    Every command asks it (for its config file too), so it must cost no process."""
    cwd = Path.cwd()
    return next((place for place in (cwd, *cwd.parents) if (place / ".git").exists()), cwd)


def benchmark_root(given: Path | None) -> Path:
    """``given``, else :func:`default_benchmark`; CatalogError when it is no benchmark checkout."""
    root = given or default_benchmark()
    if root.is_dir() and not ((root / "lean-toolchain").is_file()
                              and ((root / "problems").is_dir()
                                   or (root / "workspaces").is_dir())):
        where = "--benchmark " if given else ""
        raise CatalogError(f"{where}{root} is not a benchmark checkout (no lean-toolchain, "
                           "problems/ or workspaces/); pass --benchmark DIR")
    return root


def load(benchmark: Path | None, revision: str | None = "HEAD",
         only: frozenset[str] | None = None) -> Catalog:
    """The catalog of ``benchmark`` (default :func:`default_benchmark`) at ``revision``."""
    return load_catalog(benchmark_root(benchmark), revision=revision, only=only)


def load_selected(benchmark: Path | None, revision: str | None, only: frozenset[str] | None,
                  selection: Selection) -> Catalog:
    """:func:`load`, narrowed to ``only`` (``--problem``) and ``selection`` together."""
    if selection.is_everything:
        return load(benchmark, revision, only)
    return select_catalog(load(benchmark, revision, None), selection, only)


def pinned_name(benchmark: Path) -> str | None:
    """The working tree's pinned release, for messages when the catalog cannot load."""
    try:
        return (benchmark / "lean-toolchain").read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return None
