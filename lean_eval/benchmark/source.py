"""Where the catalog's trusted bytes come from (design §5.1), as files by their POSIX path
relative to the benchmark root.

Invariants:
- A git checkout is read at one revision through ``git archive``; its working tree is then never
  read, and ``dirty`` only reports how it differs from that revision in the trusted paths.
- ``tree_files`` reads regular files only: never a symlink, nothing under a ``.lake``.
"""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Sequence
from pathlib import Path

from lean_eval.errors import CatalogError
from lean_eval.supervise import process

_MAX_ARCHIVE = 512 * 1024 * 1024


def git_files(root: Path, revision: str,
              paths: Sequence[str]) -> tuple[str, dict[str, bytes]]:
    """The commit ``revision`` names and the files under ``paths`` at it; CatalogError when the
    revision is unknown, holds none of them, or cannot be read."""
    env = {"PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root)}
    rev = process.run_capture(
        ("git", "-C", str(root), "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"),
        env=env,
        cwd=root,
    )
    if rev.returncode != 0:
        refused = _refused(root, rev.stderr)
        raise CatalogError(refused or f"benchmark revision {revision!r} not found in {root}")
    commit = rev.stdout.decode().strip()
    present = process.run_capture(
        ("git", "-C", str(root), "ls-tree", "--name-only", commit, "--", *paths),
        env=env,
        cwd=root,
    )
    names = tuple(present.stdout.decode().split())
    if not names:
        raise CatalogError(f"revision {commit} of {root} holds no problems/ or workspaces/")
    archive = process.run(
        ("git", "-C", str(root), "archive", "--format=tar", commit, "--", *names),
        env=env,
        cwd=root,
        timeout=300,
        output_cap=_MAX_ARCHIVE,
    )
    if archive.returncode != 0 or archive.stdout_truncated:
        raise CatalogError(f"could not read revision {commit} of {root}: "
                           f"{archive.stderr.decode(errors='replace').strip()}")
    files: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(archive.stdout), mode="r:") as tar:
        for member in tar:
            if member.isfile():
                handle = tar.extractfile(member)
                if handle is not None:
                    files[member.name] = handle.read()
    return commit, files


def _refused(root: Path, stderr: bytes) -> str | None:
    """Why git would not read ``root`` at all, when it is git's ownership check (else None)."""
    if b"dubious ownership" not in stderr:
        return None
    try:
        owner = f"uid {root.stat().st_uid}"
    except OSError:
        owner = "another user"
    return (f"git refuses to read the benchmark checkout {root}: it is owned by {owner}, not by "
            f"the user running lean-eval (uid {os.geteuid()}; git's 'dubious ownership' check, "
            "safe.directory). lean-eval runs git without your git configuration, so a "
            "safe.directory entry there does not apply: run lean-eval as the checkout's owner, "
            f"or make the checkout yours (chown -R {os.geteuid()} {root})")


def dirty(root: Path, commit: str, paths: Sequence[str]) -> tuple[str, ...]:
    """A warning when the working tree differs from ``commit`` under ``paths`` (else none)."""
    status = process.run_capture(
        ("git", "-C", str(root), "status", "--porcelain", "--", *paths),
        env={"PATH": "/usr/bin:/bin", "HOME": str(root)},
        cwd=root,
    )
    lines = [ln for ln in status.stdout.decode(errors="replace").splitlines() if ln.strip()]
    if not lines:
        return ()
    shown = ", ".join(ln[3:] for ln in lines[:5]) + (" ..." if len(lines) > 5 else "")
    message = (f"benchmark working tree differs from {commit[:12]} in trusted paths "
               f"({shown}); scoring uses the committed revision")
    return (message,)


def tree_files(root: Path, paths: Sequence[str]) -> dict[str, bytes]:
    """The regular files under ``paths`` of the directory ``root`` as it stands."""
    files: dict[str, bytes] = {}
    for top in paths:
        base = root / top
        if base.is_file():
            files[top] = base.read_bytes()
        elif base.is_dir():
            for path in sorted(base.rglob("*")):
                if ".lake" in path.relative_to(root).parts:
                    continue
                if path.is_file() and not path.is_symlink():
                    files[path.relative_to(root).as_posix()] = path.read_bytes()
    return files
