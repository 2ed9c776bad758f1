"""When each problem's current ``statement_revision`` was set, found in its source's git history,
and whether its trusted statement changed since without a new revision (issue 31 item 3: a
fresh ``import-catalog`` of a git checkout warns; ``audit-results`` names the commits).

Invariants:
- History is the first-parent chain of the commit asked about (``gitread.history``): the
  commit that set a revision is the oldest one of that chain from which the problem has had
  that revision without a break (a problem that was absent, or had another revision, in the
  state before it), so a merge that brought a revision in is named, not the side commit.
- A statement changed when ``provenance.statement_digest`` differs, the digest
  ``import-catalog --check`` compares; a change reverted later is no change.
- The walk reads the manifests of the chain's states in one batch and compares statement files
  by their blob names; a digest is computed only where a statement's verdict needs it, so the
  statement files read are the ones at each revision's origin and, for a problem whose
  statement moved, its later versions (``statements.Reader``). It stops at the oldest commit
  any problem still needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from lean_eval.benchmark import gitread, provenance, statements, upstream


class RevisionOrigin(NamedTuple):
    """Where a problem's current revision comes from, and what touched its statement since."""

    problem: str
    revision: int
    set_in: str  # the commit that set it
    then: statements.Listing  # the problem right after set_in
    # later commits that changed its statement files, oldest first: (commit, before, after)
    edits: tuple[tuple[str, statements.Listing, statements.Listing], ...]


class Unbumped(NamedTuple):
    """A problem whose statement now differs from the one its revision was set with."""

    origin: RevisionOrigin
    changed_in: tuple[str, ...]  # the commits that changed the digest, oldest first


_EVERY = "*"  # a change to the single-file manifest: every problem's


def _touched(change: gitread.Change) -> str | None:
    """The problem whose statement a changed path bears on (``_EVERY``: all; None: none)."""
    if change.path == upstream.SINGLE_FILE:
        return _EVERY
    parts = change.path.split("/")
    if len(parts) == 3 and parts[:2] == ["manifests", "problems"] and parts[2].endswith(".toml"):
        return parts[2].removesuffix(".toml")
    if len(parts) == 3 and parts[0] == "generated" and parts[2] in provenance.STATEMENT_FILES:
        return parts[1]
    return None


def origins(reader: statements.Reader, commits: Mapping[str, gitread.Commit], head: str,
            pids: set[str] | None = None) -> dict[str, RevisionOrigin]:
    """The origin of the revision each problem (``pids``, default all) has at ``head``. Reads
    the manifests of every state of the chain (one batch) and no statement file."""
    line = gitread.chain(commits, head)
    state = gitread.state_at(commits, head)
    every = statements.problem_ids(state) if pids is None else pids
    manifests = reader.manifest_blobs(state, every)
    for name in line:
        manifests.update(b for c in commits[name].changes if c.path.startswith("manifests/")
                         for b in (c.before, c.after) if b)
    reader.load(manifests)
    open_: dict[str, statements.Listing] = {}
    for pid in every:
        listing = reader.listing(state, pid)
        if listing is not None and listing.revision is not None:
            open_[pid] = listing
    edits: dict[str, list[tuple[str, statements.Listing, statements.Listing]]] = {
        pid: [] for pid in open_}
    found: dict[str, RevisionOrigin] = {}
    for name in line:
        if not open_:
            break
        before = dict(state)
        affected: set[str] = set()
        for change in commits[name].changes:
            if change.before is None:
                before.pop(change.path, None)
            else:
                before[change.path] = change.before
            owner = _touched(change)
            if owner == _EVERY:
                affected.update(open_)
            elif owner in open_:
                affected.add(owner)
        for pid in sorted(affected):
            after, prior = reader.listing(state, pid), reader.listing(before, pid)
            assert after is not None  # noqa: S101 - open_ holds only problems present here
            if prior is None or prior.revision != open_[pid].revision:
                found[pid] = RevisionOrigin(pid, after.revision or 0, name, after,
                                            tuple(reversed(edits.pop(pid))))
                del open_[pid]
            elif prior.files != after.files:
                edits[pid].append((name, prior, after))
        state = before
    return found


def changed_in(reader: statements.Reader, origin: RevisionOrigin) -> tuple[str, ...]:
    """The commits of ``origin.edits`` that changed the statement's digest (their blobs are
    read here, in one batch)."""
    reader.load(b for _, before, after in origin.edits for b in (*before.files, *after.files))
    return tuple(c for c, before, after in origin.edits
                 if reader.digest(before) != reader.digest(after))


def unbumped(reader: statements.Reader, commits: Mapping[str, gitread.Commit], head: str,
             now: Mapping[str, tuple[int, str]], uncommitted: frozenset[str] = frozenset()
             ) -> list[Unbumped]:
    """Each problem of ``now`` (id -> (revision, digest) as imported) whose revision ``head``
    also has and whose digest differs from the one that revision was set with. A problem
    whose statement files are the same blobs at ``head`` as at the origin, none of them among
    the ``uncommitted`` paths the import took from the work tree, is unchanged without a
    digest."""
    state = gitread.state_at(commits, head)
    found = []
    for pid, origin in sorted(origins(reader, commits, head, set(now)).items()):
        files = [f"generated/{pid}/{name}" for name in provenance.STATEMENT_FILES]
        same = tuple(state.get(f) for f in files) == origin.then.files
        if origin.revision == now[pid][0] and not (same and uncommitted.isdisjoint(files)):
            found.append(origin)
    reader.load(b for o in found for b in o.then.files)
    moved = [o for o in found if reader.digest(o.then) != now[o.problem][1]]
    reader.load(b for o in moved for _, x, y in o.edits for b in (*x.files, *y.files))
    return [Unbumped(o, changed_in(reader, o)) for o in moved]


def message(item: Unbumped, head: str) -> str:
    """The warning a fresh import prints for ``item``."""
    origin = item.origin
    where = (", ".join(c[:12] for c in item.changed_in) if item.changed_in
             else "the work tree (uncommitted)")
    return (f"the trusted statement of {origin.problem!r} changed in {where} without a new "
            f"statement_revision: revision {origin.revision} was set in {origin.set_in[:12]} "
            f"with another statement ({head[:12]} is imported), so results recorded under "
            f"revision {origin.revision} before the change were scored on the earlier "
            "statement; give the problem a new statement_revision, and see `lean-eval "
            "audit-results` for the records it concerns")


def check_source(src_git: gitread.Git, head: str, now: Mapping[str, tuple[int, str]],
                 uncommitted: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """(manifest path, warning) for each problem a fresh import of ``src_git`` at ``head``
    takes with a statement changed since its revision was set (``uncommitted``: the paths
    it took from the work tree); CatalogError when git cannot read the history."""
    reader = statements.Reader(src_git, gitread.objects(src_git))
    commits = gitread.history(src_git, [head], statements.PATHSPECS)
    state = gitread.state_at(commits, head)
    return [(f"manifests/problems/{u.origin.problem}.toml"
             if f"manifests/problems/{u.origin.problem}.toml" in state else upstream.SINGLE_FILE,
             message(u, head)) for u in unbumped(reader, commits, head, now, uncommitted)]
