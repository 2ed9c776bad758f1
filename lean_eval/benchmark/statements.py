"""A problem's statement in one state of its source's git history: the ``statement_revision``
its manifest gives (read as ``import-catalog`` reads every historical layout:
``upstream.manifest_tables`` and ``upstream.with_lifecycle_defaults``) and the trusted
statement's digest (``provenance.statement_digest``, the one ``import-catalog --check``
compares).

Invariant: a problem is in a state exactly when its manifest and its
``generated/<id>/Challenge.lean`` both are (the importer skips a manifest without a workspace
and a workspace without a manifest); each blob is read once and each digest computed once per
pair of blobs, however many states share them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from lean_eval.benchmark import gitread, provenance, upstream

# What the statement of every problem depends on, in every layout of the source's history.
PATHSPECS = (upstream.SINGLE_FILE, "manifests/problems",
             *(f":(glob)generated/*/{name}" for name in provenance.STATEMENT_FILES))
_PER_PROBLEM = "manifests/problems/{pid}.toml"
_WORKSPACE_FILE = "generated/{pid}/{name}"


class Statement(NamedTuple):
    """A problem's revision (None: its manifest gives no positive integer) and digest."""

    revision: int | None
    digest: str


class Listing(NamedTuple):
    """A problem as a state lists it: its revision, and the blobs of its statement files
    (``provenance.STATEMENT_FILES`` in order; None: absent), read only when a digest is asked."""

    revision: int | None
    files: tuple[str | None, ...]


def problem_ids(state: Mapping[str, str]) -> set[str]:
    """Every problem with a ``Challenge.lean`` in ``state`` (whether or not it has a
    manifest)."""
    found = set()
    for path in state:
        parts = path.split("/")
        if len(parts) == 3 and parts[0] == "generated" and parts[2] == "Challenge.lean":
            found.add(parts[1])
    return found


def _revision(table: Mapping[str, Any]) -> int | None:
    value = upstream.with_lifecycle_defaults(dict(table))[0]["statement_revision"]
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 \
        else None


class Reader:
    """Statements of one repository's states, its blobs read in batches (:meth:`load`)."""

    def __init__(self, git: gitread.Git, sizes: Mapping[str, tuple[str, int]]) -> None:
        self.git = git
        self.sizes = sizes
        self.blobs: dict[str, bytes] = {}
        self._single: dict[str, dict[str, upstream.Manifest]] = {}
        self._one: dict[str, dict[str, upstream.Manifest]] = {}
        self._digests: dict[tuple[str | None, ...], str] = {}

    @staticmethod
    def manifest_blobs(state: Mapping[str, str], pids: Iterable[str]) -> set[str]:
        """The blobs :meth:`listing` reads for ``pids`` in ``state``."""
        names = {state[upstream.SINGLE_FILE]} if upstream.SINGLE_FILE in state else set()
        names.update(state[p] for p in (_PER_PROBLEM.format(pid=pid) for pid in pids)
                     if p in state)
        return names

    @staticmethod
    def needed(state: Mapping[str, str], pids: Iterable[str]) -> set[str]:
        """The blobs :meth:`statement` reads for ``pids`` in ``state``."""
        pids = set(pids)
        names = Reader.manifest_blobs(state, pids)
        for pid in pids:
            paths = (_WORKSPACE_FILE.format(pid=pid, name=n) for n in provenance.STATEMENT_FILES)
            names.update(state[p] for p in paths if p in state)
        return names

    def load(self, names: Iterable[str | None]) -> None:
        """Read every blob of ``names`` not read yet, in as few git processes as it takes."""
        missing = {n for n in names if n is not None} - set(self.blobs)
        if missing:
            self.blobs.update(gitread.blobs(self.git, missing, self.sizes))

    def _manifest(self, state: Mapping[str, str], pid: str) -> upstream.Manifest | None:
        found: list[upstream.Manifest] = []
        single = state.get(upstream.SINGLE_FILE)
        if single is not None:
            if single not in self._single:
                self._single[single] = upstream.manifest_tables(self.blobs[single], {}, [])
            if pid in self._single[single]:
                found.append(self._single[single][pid])
        one = state.get(_PER_PROBLEM.format(pid=pid))
        if one is not None:
            if one not in self._one:
                self._one[one] = upstream.manifest_tables(None, {f"{pid}.toml": self.blobs[one]},
                                                          [])
            found.extend(self._one[one].values())
        return found[0] if len(found) == 1 else None  # listed twice: the importer refuses it

    def listing(self, state: Mapping[str, str], pid: str) -> Listing | None:
        """``pid`` in ``state`` (its manifest blobs loaded), None when it is not there."""
        files = tuple(state.get(_WORKSPACE_FILE.format(pid=pid, name=n))
                      for n in provenance.STATEMENT_FILES)
        if files[0] is None:  # no Challenge.lean
            return None
        manifest = self._manifest(state, pid)
        return None if manifest is None else Listing(_revision(manifest.table), files)

    def digest(self, listing: Listing) -> str:
        """The statement digest of ``listing``'s files (their blobs loaded)."""
        if listing.files not in self._digests:
            self._digests[listing.files] = provenance.statement_digest(
                {n: self.blobs[b] for n, b in zip(provenance.STATEMENT_FILES, listing.files,
                                                  strict=True) if b is not None})
        return self._digests[listing.files]

    def statement(self, state: Mapping[str, str], pid: str) -> Statement | None:
        """``pid``'s statement in ``state`` (its blobs loaded), None when it is not there."""
        listing = self.listing(state, pid)
        return None if listing is None else Statement(listing.revision, self.digest(listing))
