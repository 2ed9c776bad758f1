"""The lean-eval source layout as ``import-catalog`` reads it (design §4.2), in every convention
its history used: manifests in one ``manifests/problems.toml`` (``[[problem]]`` tables) or one
``manifests/problems/<id>.toml`` each, with or without the lifecycle keys, beside
``generated/<id>/`` workspaces and a root Lean project.

Invariants:
- No symlink in the source is followed: a symlinked root file, manifest, set, ``generated/``,
  ``generated/<id>`` or file inside one is a fault naming it (``os.lstat``/``os.walk`` without
  following links; the source root itself is the user's own path and may be a link).
- Every fault is collected, never only the first (``SourceTree.errors``).
- A manifest without a workspace, or a workspace without a manifest, is skipped with a warning
  naming it; the rest of the catalog imports.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from lean_eval.errors import CatalogError
from lean_eval.files.decoding import toml_table

# What the public pipeline reads a manifest without the lifecycle keys as: the values the
# upstream migration that introduced them gave every earlier problem.
LIFECYCLE_DEFAULTS: dict[str, Any] = {"status": "draft", "visible": True,
                                      "statement_revision": 1, "tags": []}
SINGLE_FILE = "manifests/problems.toml"
# Files of a source workspace an import drops (and so a fork of the source carries beside each
# problem's Submission.lean): validate-submission lists them only under -v.
SOURCE_ONLY_FILES = ("holes.json", "WorkspaceTest.lean", "lake-manifest.json")
_NO_WORKSPACE = "problem {pid!r} has no workspace generated/{pid}/ (not generated yet): skipped"
_NO_MANIFEST = ("workspace has no manifest (manifests/problems/{pid}.toml or an entry in "
                "{single}): skipped")
ROOT_FILES = ("lean-toolchain", "lakefile.toml", "lake-manifest.json")


class Manifest(NamedTuple):
    """One problem's manifest table and where it was read."""

    where: str
    table: dict[str, Any]


class SourceTree(NamedTuple):
    """Everything read from a source: problems to import, what was skipped, every fault."""

    manifests: dict[str, Manifest]
    workspaces: dict[str, dict[str, bytes]]  # pid -> workspace-relative path -> bytes
    root: dict[str, bytes]  # root pin files present
    sets: dict[str, bytes]  # manifests/sets/<name>.toml -> bytes
    other_sets: tuple[str, ...]  # manifests/sets entries that are not set files
    has_tags: bool
    warnings: tuple[tuple[str, str], ...]  # (path, message)
    errors: tuple[str, ...]


def _kind(path: Path) -> str | None:
    """``"file"``, ``"dir"``, ``"link"``, ``"other"``, or None when absent (never following)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(mode):
        return "link"
    return "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode) else "other"


def _refused(rel: str, kind: str | None) -> str:
    what = "a symbolic link" if kind == "link" else "not a regular file or directory"
    return f"{rel}: is {what}; import-catalog follows no link and copies regular files only"


def _workspace(src: Path, pid: str, errors: list[str]) -> dict[str, bytes]:
    base = src / "generated" / pid
    found: dict[str, bytes] = {}
    for top, dirs, names in os.walk(base, followlinks=False):
        here = Path(top)
        rel_top = here.relative_to(base).as_posix()
        # a linked directory is listed here and never walked
        errors.extend(_refused(f"generated/{pid}/{_join(rel_top, name)}", "link")
                      for name in sorted(dirs) if _kind(here / name) == "link")
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "build"
                         and _kind(here / d) == "dir")  # local build state is never imported
        for name in sorted(names):
            rel = _join(rel_top, name)
            if name.startswith("."):
                continue
            kind = _kind(here / name)
            if kind != "file":
                errors.append(_refused(f"generated/{pid}/{rel}", kind))
                continue
            found[rel] = (here / name).read_bytes()
    return found


def _join(top: str, name: str) -> str:
    return name if top == "." else f"{top}/{name}"


def _manifests(src: Path, errors: list[str]) -> dict[str, Manifest]:
    single = src / SINGLE_FILE
    per_problem = src / "manifests" / "problems"
    single_data: bytes | None = None
    if _kind(single) is not None:
        if _kind(single) != "file":
            errors.append(_refused(SINGLE_FILE, _kind(single)))
        else:
            single_data = single.read_bytes()
    files: dict[str, bytes] = {}
    kind = _kind(per_problem)
    if kind not in (None, "dir"):
        errors.append(_refused("manifests/problems", kind))
    elif kind == "dir":
        for entry in sorted(os.listdir(per_problem)):
            if not entry.endswith(".toml"):
                continue
            if _kind(per_problem / entry) != "file":
                errors.append(_refused(f"manifests/problems/{entry}", _kind(per_problem / entry)))
                continue
            files[entry] = (per_problem / entry).read_bytes()
    return manifest_tables(single_data, files, errors)


def manifest_tables(single: bytes | None, per_problem: Mapping[str, bytes],
                    errors: list[str]) -> dict[str, Manifest]:
    """The manifests of ``manifests/problems.toml`` (its bytes, None when absent) and of
    ``manifests/problems/<name>.toml`` (``per_problem``: name -> bytes) by problem id, each
    fault appended to ``errors``. The on-disk reader and the readers of git history
    (``benchmark.statements``) share it, so every layout is read one way."""
    found: dict[str, Manifest] = {}
    if single is not None:
        table = _table(single, SINGLE_FILE, errors)
        entries = table.get("problem", [])
        if not isinstance(entries, list):
            errors.append(f"{SINGLE_FILE}: `problem` is not an array of tables")
            entries = []
        for number, entry in enumerate(entries, 1):
            where = f"{SINGLE_FILE} [[problem]] #{number}"
            pid = entry.get("id") if isinstance(entry, dict) else None
            if not isinstance(pid, str):
                errors.append(f"{where}: no string `id`")
            elif pid in found:
                errors.append(f"{where}: problem {pid!r} listed twice")
            else:
                found[pid] = Manifest(f"{SINGLE_FILE} [[problem]] {pid!r}", dict(entry))
    for entry, data in sorted(per_problem.items()):
        rel = f"manifests/problems/{entry}"
        if not entry.endswith(".toml"):
            continue
        pid = entry.removesuffix(".toml")
        if pid in found:
            errors.append(f"{rel}: problem {pid!r} is also listed in {SINGLE_FILE}")
            continue
        found[pid] = Manifest(rel, _table(data, rel, errors))
    return found


def _table(data: bytes, where: str, errors: list[str]) -> dict[str, Any]:
    try:
        return toml_table(data, f"{where}: cannot be read as TOML")
    except CatalogError as exc:
        errors.append(str(exc))
        return {}


def with_lifecycle_defaults(table: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``table`` with each missing lifecycle key at its default, and the keys so filled."""
    missing = [key for key in LIFECYCLE_DEFAULTS if key not in table]
    filled = {**table, **{key: LIFECYCLE_DEFAULTS[key] for key in missing}}
    if "tags" in missing:
        filled["tags"] = []  # a fresh list: the default is never shared between manifests
    return filled, missing


def read_source(src: Path) -> SourceTree:
    """Read the source layout at ``src``; CatalogError only when it is not that layout at all."""
    errors: list[str] = []
    manifests_kind, generated_kind = _kind(src / "manifests"), _kind(src / "generated")
    if manifests_kind == "link" or generated_kind == "link":
        raise CatalogError(_refused("manifests" if manifests_kind == "link" else "generated",
                                    "link"))
    if manifests_kind != "dir" or generated_kind != "dir" or (
            _kind(src / SINGLE_FILE) is None and _kind(src / "manifests" / "problems") is None):
        raise CatalogError(f"{src}: not the lean-eval source layout (needs manifests/problems/ "
                           f"or {SINGLE_FILE}, and generated/)")
    root: dict[str, bytes] = {}
    for name in ROOT_FILES:
        kind = _kind(src / name)
        if kind is None:
            errors.append(f"{name}: missing in {src}")
        elif kind != "file":
            errors.append(_refused(name, kind))
        else:
            root[name] = (src / name).read_bytes()
    manifests = _manifests(src, errors)
    generated: list[str] = []
    for name in sorted(os.listdir(src / "generated")):
        kind = _kind(src / "generated" / name)
        if name.startswith("."):
            continue
        if kind == "dir":
            generated.append(name)
        elif kind == "link":
            errors.append(_refused(f"generated/{name}", kind))
    warnings = [(m.where, _NO_WORKSPACE.format(pid=pid)) for pid, m in sorted(manifests.items())
                if pid not in generated and _kind(src / "generated" / pid) != "link"]
    warnings += [(f"generated/{pid}/", _NO_MANIFEST.format(pid=pid, single=SINGLE_FILE))
                 for pid in generated if pid not in manifests]
    workspaces = {pid: _workspace(src, pid, errors) for pid in generated if pid in manifests}
    sets: dict[str, bytes] = {}
    other: list[str] = []
    sets_dir = src / "manifests" / "sets"
    if _kind(sets_dir) == "link":
        errors.append(_refused("manifests/sets", "link"))
    elif _kind(sets_dir) == "dir":
        for name in sorted(os.listdir(sets_dir)):
            kind = _kind(sets_dir / name)
            if kind == "link":
                errors.append(_refused(f"manifests/sets/{name}", kind))
            elif name.endswith(".toml") and kind == "file":
                sets[name] = (sets_dir / name).read_bytes()
            else:
                other.append(name)
    tags = _kind(src / "manifests" / "tags.toml")
    if tags == "link":
        errors.append(_refused("manifests/tags.toml", tags))
    return SourceTree(manifests={p: m for p, m in manifests.items() if p in workspaces},
                      workspaces=workspaces, root=root, sets=sets, other_sets=tuple(other),
                      has_tags=tags == "file", warnings=tuple(warnings), errors=tuple(errors))


def read_paths(tree: SourceTree) -> set[str]:
    """Every source path whose bytes an import of ``tree`` takes."""
    paths = {m.where if m.where.startswith("manifests/problems/") else SINGLE_FILE
             for m in tree.manifests.values()}
    paths.update(f"generated/{pid}/{rel}" for pid, ws in tree.workspaces.items() for rel in ws)
    paths.update(tree.root)
    paths.update(f"manifests/sets/{name}" for name in tree.sets)
    if tree.has_tags:
        paths.add("manifests/tags.toml")
    return paths
