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
- The walk reads every blob of the chain's states in one batch (``statements.Reader``), and
  stops at the oldest commit any problem still needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from lean_eval.benchmark import gitread, provenance, statements, upstream


class RevisionOrigin(NamedTuple):
    """Where a problem's current revision comes from, and what changed its statement since."""

    problem: str
    revision: int
    set_in: str  # the commit that set it
    digest_then: str  # the statement's digest right after set_in
    changed_in: tuple[str, ...]  # later commits that changed the digest, oldest first


class Unbumped(NamedTuple):
    """A problem whose statement now differs from the one its revision was set with."""

    origin: RevisionOrigin
    digest_now: str


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
    """The origin of the revision each problem (``pids``, default all) has at ``head``."""
    line = gitread.chain(commits, head)
    state = gitread.state_at(commits, head)
    everything = set(state.values())
    for name in line:
        everything.update(b for c in commits[name].changes for b in (c.before, c.after) if b)
    reader.load(everything)
    current = {pid: reader.statement(state, pid)
               for pid in (pids if pids is not None else statements.problem_ids(state))}
    open_ = {pid: s for pid, s in current.items() if s is not None and s.revision is not None}
    changed: dict[str, list[str]] = {pid: [] for pid in open_}
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
            pid = _touched(change)
            if pid == _EVERY:
                affected.update(open_)
            elif pid in open_:
                affected.add(pid)
        for pid in sorted(affected):
            now = open_[pid]
            after, prior = reader.statement(state, pid), reader.statement(before, pid)
            assert after is not None  # noqa: S101 - open_ holds only problems present here
            if prior is None or prior.revision != now.revision:
                found[pid] = RevisionOrigin(pid, now.revision or 0, name, after.digest,
                                            tuple(reversed(changed.pop(pid))))
                del open_[pid]
            elif prior.digest != after.digest:
                changed[pid].append(name)
        state = before
    return found


def unbumped(reader: statements.Reader, commits: Mapping[str, gitread.Commit], head: str,
             now: Mapping[str, tuple[int, str]]) -> list[Unbumped]:
    """Each problem of ``now`` (id -> (revision, digest) as imported) whose revision ``head``
    also has and whose digest differs from the one that revision was set with."""
    found = origins(reader, commits, head, set(now))
    return [Unbumped(origin, now[pid][1]) for pid, origin in sorted(found.items())
            if origin.revision == now[pid][0] and origin.digest_then != now[pid][1]]


def message(item: Unbumped, head: str) -> str:
    """The warning a fresh import prints for ``item``."""
    origin = item.origin
    where = (", ".join(c[:12] for c in origin.changed_in) if origin.changed_in
             else "the work tree (uncommitted)")
    return (f"the trusted statement of {origin.problem!r} changed in {where} without a new "
            f"statement_revision: revision {origin.revision} was set in {origin.set_in[:12]} "
            f"with another statement ({head[:12]} is imported), so results recorded under "
            f"revision {origin.revision} before the change were scored on the earlier "
            "statement; give the problem a new statement_revision, and see `lean-eval "
            "audit-results` for the records it concerns")


def check_source(src_git: gitread.Git, head: str, now: Mapping[str, tuple[int, str]]
                 ) -> list[tuple[str, str]]:
    """(manifest path, warning) for each problem a fresh import of ``src_git`` at ``head``
    takes with a statement changed since its revision was set; CatalogError when git cannot
    read the history."""
    reader = statements.Reader(src_git, gitread.objects(src_git))
    commits = gitread.history(src_git, [head], statements.PATHSPECS)
    state = gitread.state_at(commits, head)
    return [(f"manifests/problems/{u.origin.problem}.toml"
             if f"manifests/problems/{u.origin.problem}.toml" in state else upstream.SINGLE_FILE,
             message(u, head)) for u in unbumped(reader, commits, head, now)]
