"""The git objects of a benchmark's source (a work tree or a bare git directory), read through
``supervise.process`` in a handful of git processes whatever the history's length: one
``git log`` for the history of the paths asked for, one listing of object sizes, and blobs in
as few ``git show`` calls as their sizes allow (design §4.2; ``audit-results`` and the fresh
import's revision check read history this way).

Invariants:
- git runs with a fixed environment (no system config, no optional locks, ``HOME`` the
  source), so it never writes the repository it reads and no user setting changes its output.
- A history is the first-parent chain of each tip, each commit's change against its first
  parent (a merge counts as the change it brought to its first parent), so the state of every
  commit listed is known from the chain below it (``state_at``).
- Only regular files are states' entries: a path whose entry is a symlink or a submodule is
  absent, as ``upstream.read_source`` refuses to read one.
- Every blob read is checked against its object name, so a mis-split ``git show`` output is a
  ``CatalogError``, never a wrong statement.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from lean_eval.errors import CatalogError
from lean_eval.supervise import process

_TIMEOUT = 600.0
_REGULAR = frozenset({"100644", "100755"})
_SHOW_CHUNK_BYTES = 64 * 1024 * 1024
_SHOW_CHUNK_NAMES = 2000
_LISTING_CAP = 512 * 1024 * 1024


class Git(NamedTuple):
    """How to run git on one repository."""

    place: tuple[str, ...]  # ("-C", work tree) or ("--git-dir", git dir)
    cwd: Path


class Change(NamedTuple):
    """One path a commit changed: its blob before and after (None: absent or not a file)."""

    path: str
    before: str | None
    after: str | None


class Commit(NamedTuple):
    """A commit of a history: its first parent (None: a root, or a shallow boundary) and the
    paths it changed against it."""

    parent: str | None
    changes: tuple[Change, ...]


def repository(src: Path) -> Git:
    """The repository of ``src``: a work tree (it has ``.git``) or else a git directory."""
    src = src.absolute()
    if (src / ".git").exists():
        return Git(("-C", str(src)), src)
    return Git(("--git-dir", str(src)), src)


def _env(git: Git) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(git.cwd),
            "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}


def run(git: Git, *args: str, cap: int = _LISTING_CAP) -> bytes:
    """git's stdout; CatalogError naming the command when it fails or says too much."""
    done = process.run(("git", *git.place, *args), env=_env(git), cwd=git.cwd,
                       timeout=_TIMEOUT, output_cap=cap)
    if done.returncode != 0 or done.stdout_truncated:
        why = ("its output exceeded the cap" if done.returncode == 0 else
               done.stderr.decode(errors="replace").strip() or f"exit {done.returncode}")
        raise CatalogError(f"git {args[0]} in {git.cwd} failed: {why}")
    return done.stdout


def resolve(git: Git, revision: str) -> str | None:
    """The commit ``revision`` names, or None."""
    done = process.run_capture(("git", *git.place, "rev-parse", "--verify", "--quiet",
                                f"{revision}^{{commit}}"), env=_env(git), cwd=git.cwd)
    name = done.stdout.decode(errors="replace").strip()
    return name if done.returncode == 0 and name else None


def objects(git: Git) -> dict[str, tuple[str, int]]:
    """Every object of the repository (its alternates included): name -> (type, size)."""
    out = run(git, "cat-file", "--batch-all-objects",
              "--batch-check=%(objectname) %(objecttype) %(objectsize)")
    found: dict[str, tuple[str, int]] = {}
    for line in out.decode("ascii", errors="replace").splitlines():
        name, kind, size = line.split(" ")
        found[name] = (kind, int(size))
    return found


def history(git: Git, tips: Sequence[str], pathspecs: Sequence[str]) -> dict[str, Commit]:
    """Every commit on the first-parent chains of ``tips`` (existing commits), with what each
    changed under ``pathspecs`` (git pathspecs, ``:(glob)`` magic allowed)."""
    if not tips:
        return {}
    out = run(git, "log", "--first-parent", "--diff-merges=first-parent", "--root",
              "--full-history", "--sparse", "--raw", "-z", "--no-abbrev", "--no-renames",
              "--no-color", "--format=%x01%H %P", *tips, "--", *pathspecs)
    commits: dict[str, Commit] = {}
    tokens = iter(out.split(b"\0"))
    current: list[str] = []
    changes: list[Change] = []
    for token in tokens:  # NUL-separated: headers, and each change's meta then its one path
        field = token.lstrip(b"\n")
        if field.startswith(b"\x01"):
            if current:
                commits[current[0]] = Commit(current[1] if len(current) > 1 else None,
                                             tuple(changes))
            current, changes = field[1:].decode("ascii").split(), []
        elif field.startswith(b":"):
            mode_a, mode_b, sha_a, sha_b, _status = field[1:].decode("ascii").split(" ")
            path = next(tokens).decode("utf-8", errors="surrogateescape")
            changes.append(Change(path, sha_a if mode_a in _REGULAR else None,
                                  sha_b if mode_b in _REGULAR else None))
    if current:
        commits[current[0]] = Commit(current[1] if len(current) > 1 else None, tuple(changes))
    return commits


def chain(commits: Mapping[str, Commit], tip: str) -> list[str]:
    """``tip`` and its first parents in ``commits``, newest first."""
    found: list[str] = []
    current: str | None = tip
    while current is not None and current in commits:
        found.append(current)
        current = commits[current].parent
    return found


def state_at(commits: Mapping[str, Commit], tip: str) -> dict[str, str]:
    """Path -> blob of every regular file under the history's pathspecs at ``tip``."""
    state: dict[str, str] = {}
    for name in reversed(chain(commits, tip)):
        for change in commits[name].changes:
            if change.after is None:
                state.pop(change.path, None)
            else:
                state[change.path] = change.after
    return state


def _blob_name(data: bytes, length: int) -> str:
    header = f"blob {len(data)}\0".encode()
    digest = hashlib.sha1 if length == 40 else hashlib.sha256  # git's own object names
    return digest(header + data).hexdigest()


def blobs(git: Git, names: Iterable[str], sizes: Mapping[str, tuple[str, int]]
          ) -> dict[str, bytes]:
    """The bytes of each blob in ``names`` (their sizes from :func:`objects`)."""
    wanted = sorted(set(names))
    missing = [n for n in wanted if sizes.get(n, ("", 0))[0] != "blob"]
    if missing:
        raise CatalogError(f"git objects {', '.join(missing[:3])} are not blobs of {git.cwd}")
    found: dict[str, bytes] = {}
    batch: list[str] = []
    total = 0
    for name in [*wanted, None]:
        size = sizes[name][1] if name is not None else 0
        if batch and (name is None or total + size > _SHOW_CHUNK_BYTES
                      or len(batch) >= _SHOW_CHUNK_NAMES):
            found.update(_show(git, batch, sizes, total))
            batch, total = [], 0
        if name is not None:
            batch.append(name)
            total += size
    return found


def _show(git: Git, batch: list[str], sizes: Mapping[str, tuple[str, int]],
          total: int) -> dict[str, bytes]:
    # `git show` prints each blob's bytes as they are, one after another: the sizes split them
    out = run(git, "show", "--no-color", "--no-textconv", *batch, cap=total + 1)
    if len(out) != total:
        raise CatalogError(f"git show in {git.cwd} printed {len(out)} bytes for blobs of "
                           f"{total}")
    found: dict[str, bytes] = {}
    offset = 0
    for name in batch:
        size = sizes[name][1]
        data = out[offset:offset + size]
        offset += size
        if _blob_name(data, len(name)) != name:
            raise CatalogError(f"git show in {git.cwd}: blob {name} read back differently")
        found[name] = data
    return found


def uncommitted(src: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(tracked files whose content differs from HEAD, staged or not, deleted included;
    untracked files git does not ignore) of the work tree ``src``, paths relative to it."""
    git = repository(src)
    out = run(git, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames",
              "--ignore-submodules=none")
    tracked: list[str] = []
    untracked: list[str] = []
    for entry in out.split(b"\0"):
        if len(entry) < 4:
            continue
        path = entry[3:].decode("utf-8", errors="surrogateescape")
        (untracked if entry[:2] == b"??" else tracked).append(path)
    return tuple(sorted(tracked)), tuple(sorted(untracked))
