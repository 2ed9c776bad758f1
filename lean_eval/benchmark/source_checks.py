"""What ``import-catalog`` checks of a git checkout beyond its files (issue 31 item 3): that
the commit ``provenance.json`` names holds what is imported, and that no problem's statement
changed since the commit that set its revision.

Invariants: an import whose work tree differs from its commit is refused naming every path
(``Uncommitted``) unless the maintainer allows it, and then the paths are recorded; a statement
changed under an unchanged revision is a warning naming the problem and the commits
(``revision_history``), never a refusal: the import is still the source's bytes, and
``import-catalog --check`` and ``validate-catalog`` refuse it against an earlier import.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from lean_eval.benchmark import gitread, provenance, revision_history
from lean_eval.errors import CatalogError


class Uncommitted(NamedTuple):
    """The paths where the checkout differs from its commit, and the warning naming them."""

    paths: tuple[str, ...]
    warnings: tuple[tuple[str, str], ...]


def uncommitted(src: Path, head: str | None, read: set[str], allow: bool) -> Uncommitted:
    """The paths where the checkout ``src`` differs from ``head`` in what the import takes
    (``read``: the source paths it reads; none without a checkout); a CatalogError naming them
    unless ``allow``."""
    if head is None:
        return Uncommitted((), ())
    dirty = provenance.uncommitted(src, read)
    if dirty and not allow:
        raise CatalogError(f"{src}: the work tree differs from its commit {head[:12]} in "
                           f"{len(dirty)} file(s), so provenance.json would name a commit that "
                           "does not hold what is imported: " + ", ".join(dirty)
                           + "; commit or discard the changes, or pass --allow-dirty to "
                           "import them and record these paths in provenance.json, every "
                           "verdict and every export")
    if not dirty:
        return Uncommitted((), ())
    why = (f"the work tree differs from its commit {head[:12]} in {len(dirty)} file(s), "
           "imported as they stand and recorded in provenance.json (--allow-dirty): "
           + ", ".join(dirty))
    return Uncommitted(dirty, ((".", why),))


def unbumped(src: Path, head: str, statements: dict[str, dict[str, str]],
             uncommitted: tuple[str, ...]) -> list[tuple[str, str]]:
    """(manifest path, warning) for each problem whose statement (``statements``: id ->
    revision -> digest, as imported, ``uncommitted`` paths taken from the work tree) changed
    since the commit that set its revision; one warning when git cannot read the history."""
    now = {pid: (int(rev), digest) for pid, by_rev in statements.items()
           for rev, digest in by_rev.items()}
    try:
        return revision_history.check_source(gitread.repository(src), head, now,
                                             frozenset(uncommitted))
    except CatalogError as exc:
        why = f"the source's history could not be read to check each statement's revision: {exc}"
        return [(".", why)]
