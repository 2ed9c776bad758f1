#!/usr/bin/env python3
"""Recompute ``workspaces/index.json``: the SHA-256 of every trusted and starter workspace file.

Usage::

    python scripts/update_index.py              # rewrite workspaces/index.json
    python scripts/update_index.py --check      # exit 1, naming every difference, when stale
    python scripts/update_index.py --root DIR   # work on another benchmark checkout

Layout (design §4.2). For each problem ``<id>`` (one ``problems/<id>.toml`` and one
``workspaces/<id>/`` directory, the two sets must agree):

* trusted: ``Challenge.lean``, ``Solution.lean``, ``config.json``, ``lakefile.toml``,
  ``lake-manifest.json``, ``lean-toolchain``, ``README.md`` and, when present,
  ``ChallengeDeps.lean``;
* starter: ``Submission.lean`` and ``Submission/Helpers.lean``.

A workspace without ``lake-manifest.json`` is indexed with the digest of the one scoring
derives from the root's (``lean_eval.benchmark.pins.derived_lake_manifest``).

The index is::

    {"schema_version": 1,
     "root": {"benchmark.toml": "<sha256>"},
     "problems": {"<id>": {"trusted": {"<relpath>": "<sha256>", ...},
                           "starter": {"<relpath>": "<sha256>", ...}}}}

``root`` covers the trusted benchmark configuration ``benchmark.toml`` (solution-only modules),
an import's ``provenance.json`` and every named set ``sets/<name>.toml``, and is present
exactly when one of them is.

with posix relative paths, sorted keys, 2-space indentation and a trailing newline, so the
output depends only on the bytes of the listed files.

A workspace file that is neither trusted nor starter (dot-entries such as ``.lake/`` excepted),
a missing required file, or a symlink where a file is expected is a layout error: nothing is
written and the exit status is 2. Standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# The harness's own lists, so the index covers exactly what scoring checks.
from lean_eval.benchmark.catalog import (
    BENCHMARK_CONFIG,
    DERIVED_FILES,
    PROVENANCE,
)
from lean_eval.benchmark.catalog import (
    OPTIONAL_TRUSTED_FILES as OPTIONAL_TRUSTED,
)
from lean_eval.benchmark.catalog import (
    STARTER_FILES as STARTER,
)
from lean_eval.benchmark.catalog import (
    TRUSTED_FILES as REQUIRED_TRUSTED,
)
from lean_eval.benchmark.pins import derived_lake_manifest
from lean_eval.errors import CatalogError

SCHEMA_VERSION = 1
INDEX_RELPATH = Path("workspaces") / "index.json"

EXIT_OK = 0
EXIT_STALE = 1
EXIT_LAYOUT = 2


class LayoutError(Exception):
    """The benchmark checkout does not have the layout the index describes."""


def _file_problem(path: Path) -> str | None:
    """Why ``path`` cannot be indexed, or None when it is a regular file."""
    if path.is_symlink():
        return "is a symlink; trusted and starter files must be regular files"
    if not path.exists():
        return "missing"
    if not path.is_file():
        return "not a regular file"
    return None


def _unexpected_files(workspace: Path, known: set[str]) -> list[str]:
    found: list[str] = []
    for path in sorted(workspace.rglob("*")):
        rel = path.relative_to(workspace)
        if any(part.startswith(".") for part in rel.parts):
            continue  # .lake/ build output and similar local state is never indexed
        if path.is_dir() and not path.is_symlink():
            continue
        if rel.as_posix() not in known:
            found.append(rel.as_posix())
    return found


def _derived(root: Path, ws: Path) -> bytes | str:
    """The lake-manifest.json scoring derives for a workspace without one, or why it cannot."""
    for path in (root / "lake-manifest.json", ws / "lakefile.toml"):
        problem = _file_problem(path)
        if problem is not None:
            return f"missing, and cannot be derived: {path.relative_to(root)} {problem}"
    try:
        return derived_lake_manifest((root / "lake-manifest.json").read_bytes(),
                                     (ws / "lakefile.toml").read_bytes(),
                                     str(ws.relative_to(root) / "lakefile.toml"))
    except CatalogError as exc:
        return str(exc)


def compute_index(root: Path) -> dict[str, Any]:
    """Return the index for the benchmark checkout at ``root``; raise LayoutError on bad layout."""
    problems_dir = root / "problems"
    workspaces_dir = root / "workspaces"
    if not problems_dir.is_dir() or not workspaces_dir.is_dir():
        raise LayoutError(f"{root}: needs both problems/ and workspaces/")
    problem_ids = {p.stem for p in problems_dir.glob("*.toml") if p.is_file()}
    workspace_ids = {
        p.name
        for p in workspaces_dir.iterdir()
        if p.is_dir() and not p.is_symlink() and not p.name.startswith(".")
    }
    errors: list[str] = []
    errors += [
        f"problems/{i}.toml has no workspaces/{i}/" for i in sorted(problem_ids - workspace_ids)
    ]
    errors += [
        f"workspaces/{i}/ has no problems/{i}.toml" for i in sorted(workspace_ids - problem_ids)
    ]

    problems: dict[str, Any] = {}
    for pid in sorted(problem_ids & workspace_ids):
        ws = workspaces_dir / pid
        trusted_names = list(REQUIRED_TRUSTED)
        trusted_names += [n for n in OPTIONAL_TRUSTED if (ws / n).exists() or (ws / n).is_symlink()]
        entry: dict[str, dict[str, str]] = {"trusted": {}, "starter": {}}
        for group, names in (("trusted", trusted_names), ("starter", list(STARTER))):
            for name in names:
                problem = _file_problem(ws / name)
                if problem is None:
                    entry[group][name] = hashlib.sha256((ws / name).read_bytes()).hexdigest()
                elif problem == "missing" and name in DERIVED_FILES:
                    derived = _derived(root, ws)
                    if isinstance(derived, bytes):
                        entry[group][name] = hashlib.sha256(derived).hexdigest()
                    else:
                        errors.append(f"workspaces/{pid}/{name}: {derived}")
                else:
                    errors.append(f"workspaces/{pid}/{name}: {problem}")
        known = set(trusted_names) | set(STARTER)
        errors += [
            f"workspaces/{pid}/{rel}: not a trusted or starter file"
            for rel in _unexpected_files(ws, known)
        ]
        problems[pid] = entry
    index: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "problems": problems}
    root_files = [BENCHMARK_CONFIG, PROVENANCE]
    sets_dir = root / "sets"
    if sets_dir.is_dir():
        root_files += [f"sets/{p.name}" for p in sorted(sets_dir.iterdir())
                       if p.name.endswith(".toml")]
    for rel in root_files:
        path = root / rel
        if path.exists() or path.is_symlink():
            problem = _file_problem(path)
            if problem is None:
                index.setdefault("root", {})[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                errors.append(f"{rel}: {problem}")
    if errors:
        raise LayoutError("\n".join(errors))
    return index


def render(index: dict[str, Any]) -> str:
    """Serialise ``index`` deterministically."""
    return json.dumps(index, indent=2, sort_keys=True, ensure_ascii=True) + "\n"


def _flatten(index: Any) -> dict[str, str]:
    """Map ``<id>/<group>/<relpath>`` to its digest, tolerating a malformed committed index."""
    flat: dict[str, str] = {}
    problems = index.get("problems") if isinstance(index, dict) else None
    if not isinstance(problems, dict):
        return flat
    for pid, entry in problems.items():
        if not isinstance(entry, dict):
            continue
        for group, files in entry.items():
            if not isinstance(files, dict):
                continue
            for rel, digest in files.items():
                flat[f"{pid}/{group}/{rel}"] = str(digest)
    return flat


def differences(committed_text: str | None, expected: dict[str, Any]) -> list[str]:
    """Describe every way ``committed_text`` differs from the index ``expected``."""
    if committed_text is None:
        return [f"{INDEX_RELPATH.as_posix()}: missing"]
    try:
        committed = json.loads(committed_text)
    except json.JSONDecodeError as exc:
        return [f"{INDEX_RELPATH.as_posix()}: not valid JSON ({exc})"]
    problems: list[str] = []
    if not isinstance(committed, dict) or committed.get("schema_version") != SCHEMA_VERSION:
        problems.append(f"schema_version: expected {SCHEMA_VERSION}")
    old_root = committed.get("root") if isinstance(committed, dict) else None
    old_root = old_root if isinstance(old_root, dict) else {}
    new_root = expected.get("root", {})
    problems.extend(f"{rel} (root): digest differs or missing (index "
                    f"{str(old_root.get(rel))[:12]}, file {str(new_root.get(rel))[:12]})"
                    for rel in sorted(set(old_root) | set(new_root))
                    if old_root.get(rel) != new_root.get(rel))
    old, new = _flatten(committed), _flatten(expected)
    for key in sorted(old.keys() | new.keys()):
        pid, group, rel = key.split("/", 2)
        where = f"workspaces/{pid}/{rel} ({group})"
        if key not in old:
            problems.append(f"{where}: not in the index")
        elif key not in new:
            problems.append(f"{where}: in the index but not a {group} file on disk")
        elif old[key] != new[key]:
            problems.append(
                f"{where}: digest differs (index {old[key][:12]}, file {new[key][:12]})"
            )
    if not problems and committed_text != render(expected):
        problems.append(f"{INDEX_RELPATH.as_posix()}: same digests, non-canonical formatting")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--root",
        type=Path,
        default=Path(__file__).resolve().parent.parent,
        help="benchmark checkout (default: the one holding this script)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="do not write; exit 1 and list the differences when the index is stale",
    )
    args = parser.parse_args(argv)
    root: Path = args.root.resolve()
    try:
        expected = compute_index(root)
    except LayoutError as exc:
        print(f"update_index: layout error under {root}:", file=sys.stderr)
        for line in str(exc).splitlines():
            print(f"  {line}", file=sys.stderr)
        return EXIT_LAYOUT
    index_path = root / INDEX_RELPATH
    if args.check:
        committed = index_path.read_text(encoding="utf-8") if index_path.is_file() else None
        diffs = differences(committed, expected)
        if diffs:
            print(f"update_index: {INDEX_RELPATH.as_posix()} is stale:", file=sys.stderr)
            for line in diffs:
                print(f"  {line}", file=sys.stderr)
            print("run: python scripts/update_index.py", file=sys.stderr)
            return EXIT_STALE
        print(f"update_index: {INDEX_RELPATH.as_posix()} is up to date")
        return EXIT_OK
    text = render(expected)
    tmp = index_path.with_name(index_path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8", newline="\n")
    tmp.replace(index_path)
    print(f"update_index: wrote {INDEX_RELPATH.as_posix()} ({len(expected['problems'])} problems)")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
