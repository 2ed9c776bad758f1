"""Where an imported benchmark came from (``provenance.json`` at its root, design §4.2): the
source repository, its commit, and each problem's statement digest at its revision.

Invariants:
- ``provenance.json`` is trusted like ``benchmark.toml``: ``workspaces/index.json`` holds its
  digest, so it cannot change without the index noticing.
- A benchmark without the file is not an import: it is its own upstream (its own commit).
- ``commit`` holds exactly the bytes imported, or ``uncommitted`` names every path where the
  source's work tree differed from it (``import-catalog --allow-dirty``; without it such an
  import is refused), and every verdict and export of the catalog carries the list.
- A statement digest is over the declarations of the hole-bearing trusted Lean
  (``Challenge.lean`` and ``ChallengeDeps.lean``) with comments blanked and whitespace
  collapsed (``statement_digest``), so a reformatting or a regenerated header is not a change;
  a digest that differs at the same ``statement_revision`` is a fault (``statement_faults``),
  because a revised statement must take a new revision.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

from pydantic import Field

from lean_eval.benchmark import gitread
from lean_eval.errors import CatalogError
from lean_eval.files.decoding import strict_json
from lean_eval.lean.declarations import collapse, declarations
from lean_eval.records.base import Record
from lean_eval.supervise import process

PROVENANCE = "provenance.json"
SCHEMA_VERSION = 1
STATEMENT_FILES = ("Challenge.lean", "ChallengeDeps.lean")


class Provenance(Record):
    """The upstream an import was made from; ``commit`` None when the source had none."""

    schema_version: int = SCHEMA_VERSION
    repository: str | None
    commit: str | None
    # problem id -> statement revision (as a string: JSON keys) -> "sha256:<hex>"
    statements: dict[str, dict[str, str]] = Field(default_factory=dict)
    # Source paths the import took from the work tree as they differed from ``commit``
    # (import-catalog --allow-dirty); absent from the file when empty.
    uncommitted: tuple[str, ...] = ()


def statement_digest(workspace: Mapping[str, bytes]) -> str:
    """The digest of a workspace's trusted statement: every declaration of ``STATEMENT_FILES``
    (its full name, keyword and text, comments blanked, whitespace collapsed), so the holes'
    statements and every definition they use count, and options, ``open`` lines and imports
    between them (which a regeneration rewrites) do not."""
    parts = [json.dumps([name, [[d.name, d.keyword, collapse(d.text)] for d in declarations(
        workspace[name].decode("utf-8", "replace"))]], ensure_ascii=True)
        for name in STATEMENT_FILES if name in workspace]
    return "sha256:" + hashlib.sha256("\n".join(parts).encode("ascii")).hexdigest()


def render(record: Provenance) -> bytes:
    data = record.model_dump(mode="json")
    if not data["uncommitted"]:
        del data["uncommitted"]  # a clean import's file is what it was before the field
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()


def parse(data: bytes) -> Provenance:
    value = strict_json(data, PROVENANCE)
    try:
        return Provenance.model_validate(value)
    except ValueError as exc:
        raise CatalogError(f"{PROVENANCE}: not a provenance record: {exc}") from exc


def of_files(files: Mapping[str, bytes]) -> Provenance | None:
    """The benchmark's provenance, or None when it is not an import."""
    return parse(files[PROVENANCE]) if PROVENANCE in files else None


def statement_faults(recorded: Provenance, current: Mapping[str, tuple[int, str]],
                     where: str) -> list[tuple[str, str]]:
    """(problem file, message) for each problem whose statement digest at its current revision
    differs from the one ``recorded`` holds for that revision."""
    found: list[tuple[str, str]] = []
    for pid, (revision, digest) in sorted(current.items()):
        before = recorded.statements.get(pid, {}).get(str(revision))
        if before is not None and before != digest:
            message = (f"the trusted statement of {pid!r} changed while its statement_revision "
                       f"stayed {revision} ({where} records {before}, now {digest}): a revised "
                       "statement needs a new statement_revision")
            found.append((f"problems/{pid}.toml", message))
    return found


def source_commit(src: Path) -> tuple[str | None, str | None]:
    """(remote URL or None, HEAD commit or None) of ``src`` when it is a git checkout."""
    if not (src / ".git").exists():
        return None, None
    env = {"PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(src)}
    head = process.run_capture(("git", "-C", str(src), "rev-parse", "--verify", "--quiet",
                                "HEAD^{commit}"), env=env, cwd=src)
    commit = head.stdout.decode().strip() if head.returncode == 0 else None
    remote = process.run_capture(("git", "-C", str(src), "config", "--get",
                                  "remote.origin.url"), env=env, cwd=src)
    url = remote.stdout.decode().strip() if remote.returncode == 0 else None
    return url or None, commit or None


def uncommitted(src: Path, read: set[str]) -> tuple[str, ...]:
    """The paths where the git work tree ``src`` differs from its HEAD in what an import
    takes: every tracked file with uncommitted changes (staged or not, deleted included), and
    each untracked file in ``read`` (the source paths the import reads; an untracked file it
    does not read changes nothing, and git's ignored files are not the source's)."""
    tracked, untracked = gitread.uncommitted(src)
    return tuple(sorted({*tracked, *(path for path in untracked if path in read)}))
