"""Load the trusted benchmark (design §4.1, §4.2, §5.1) from ``source``: problems, workspaces,
sets, root pins and digests. The catalog is refused, before any submission is read, unless every
trusted, starter and set file matches ``workspaces/index.json``, every workspace's pins equal
the root's (``pins.pin_differences``), trusted Lean imports no solution-only module
(``forbidden_imports``) and no workspace holds a file scoring would leave out
(``unexpected_files``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from lean_eval.benchmark import pins, provenance, source
from lean_eval.benchmark.problem import (
    ComparatorConfig,
    Problem,
    axiom_faults,
    hole_differences,
    manifest_errors,
    parse_config,
)
from lean_eval.benchmark.provenance import PROVENANCE  # an import; digest in the index
from lean_eval.benchmark.sets import SETS_DIR, ProblemSet, load_sets, set_files
from lean_eval.benchmark.suggestions import guesses, known_values
from lean_eval.errors import CatalogError, DigestMismatchError
from lean_eval.files.decoding import strict_json, toml_table
from lean_eval.lean.header import HeaderError, parse_header
from lean_eval.records.base import Record
from lean_eval.records.ids import PROBLEM_ID

TRUSTED_FILES = (
    "Challenge.lean",
    "Solution.lean",
    "config.json",
    "lakefile.toml",
    "lake-manifest.json",
    "lean-toolchain",
    "README.md",
)
OPTIONAL_TRUSTED_FILES = ("ChallengeDeps.lean",)
# Trusted files a workspace may omit: derived from the root's at scoring time (workspace_file).
DERIVED_FILES = ("lake-manifest.json",)
STARTER_FILES = ("Submission.lean", "Submission/Helpers.lean")
ROOT_PIN_FILES = ("lean-toolchain", "lakefile.toml", "lake-manifest.json")
BENCHMARK_CONFIG = "benchmark.toml"  # trusted benchmark settings; digest in workspaces/index.json
TRUSTED_LEAN = ("Challenge.lean", "ChallengeDeps.lean")
# Every path of the benchmark that is trusted: what a revision or the directory is read for.
TRUSTED_PATHS = ("problems", "workspaces", *ROOT_PIN_FILES, BENCHMARK_CONFIG, PROVENANCE,
                 SETS_DIR)


def workspace_file(pid: str, name: str, files: Mapping[str, bytes]) -> bytes | None:
    """Trusted file ``name`` of ``pid`` (a missing lake-manifest.json derived), or None."""
    path = f"workspaces/{pid}/{name}"
    if path in files:
        return files[path]
    lakefile = files.get(f"workspaces/{pid}/lakefile.toml")
    if name in DERIVED_FILES and lakefile is not None and "lake-manifest.json" in files:
        return pins.derived_lake_manifest(files["lake-manifest.json"], lakefile,
                                          f"workspaces/{pid}/lakefile.toml")
    return None


def workspace_names(files: Mapping[str, bytes]) -> dict[str, list[str]]:
    """Each workspace's files by workspace-relative name, in one pass over ``files`` (so
    per-problem checks stay linear in the catalog's size)."""
    names: dict[str, list[str]] = {}
    for path in files:
        if path.startswith("workspaces/") and path.count("/") >= 2:
            pid, rel = path[len("workspaces/"):].split("/", 1)
            names.setdefault(pid, []).append(rel)
    return names


def unexpected_files(pid: str, names: list[str]) -> list[str]:
    """Files of workspace ``pid`` (``names``: its workspace-relative names, from
    ``workspace_names``) neither trusted nor starter (dot-entries excepted)."""
    known = {*TRUSTED_FILES, *OPTIONAL_TRUSTED_FILES, *STARTER_FILES}
    return sorted(f"workspaces/{pid}/{name}" for name in names if name not in known
                  and not any(part.startswith(".") for part in name.split("/")))


class ProblemWorkspace(Record):
    """Everything trusted about one problem, read once per run."""

    problem: Problem
    config: ComparatorConfig
    config_raw: bytes
    trusted: dict[str, bytes]
    starter: dict[str, bytes]
    digests: dict[str, str]


class Catalog(Record):
    """The benchmark as the run sees it."""

    root: Path
    commit: str | None
    # The upstream commit the benchmark was imported from (provenance.json); the benchmark's
    # own commit when it is not an import; None when neither is known.
    upstream_commit: str | None = None
    is_import: bool = False
    upstream_uncommitted: tuple[str, ...] = ()  # provenance.json's ``uncommitted``
    toolchain_name: str
    problems: dict[str, ProblemWorkspace]
    shared_packages: Path | None
    warnings: tuple[str, ...] = ()
    solution_only_modules: tuple[str, ...] = ()
    sets: dict[str, ProblemSet] = Field(default_factory=dict)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def solution_only_modules(files: Mapping[str, bytes]) -> tuple[str, ...]:
    """``benchmark.toml``'s ``[lean-eval] solution_only_modules``; none without the file."""
    if BENCHMARK_CONFIG not in files:
        return ()
    table = toml_table(files[BENCHMARK_CONFIG], BENCHMARK_CONFIG).get("lean-eval", {})
    modules = table.get("solution_only_modules", []) if isinstance(table, dict) else None
    if not isinstance(modules, list) or not all(isinstance(m, str) and m for m in modules):
        raise CatalogError(f"{BENCHMARK_CONFIG}: [lean-eval] solution_only_modules must be a "
                           "list of module names")
    return tuple(modules)


def forbidden_imports(pid: str, files: Mapping[str, bytes],
                      reserved: tuple[str, ...]) -> list[tuple[str, str]]:
    """(file, message) for each trusted Lean file of ``pid`` importing a solution-only module."""
    found: list[tuple[str, str]] = []
    for name in TRUSTED_LEAN:
        path = f"workspaces/{pid}/{name}"
        if path not in files:
            continue
        try:  # the parser that checks submitted headers; a header it refuses is a fault here too
            imports = [i.module for i in
                       parse_header(files[path].decode("utf-8", errors="replace")).imports]
        except HeaderError as exc:
            found.append((path, f"{exc}; cannot tell what it imports"))
            continue
        found.extend((path, f"imports {module}, which {BENCHMARK_CONFIG} declares solution-only")
                     for module in imports
                     if any(module == r or module.startswith(r + ".") for r in reserved))
    return found


def _load_problem(pid: str, files: Mapping[str, bytes], index: Mapping[str, Any],
                  names: list[str]) -> ProblemWorkspace:
    manifest = f"problems/{pid}.toml"
    raw = toml_table(files[manifest], manifest)
    try:
        problem = Problem.model_validate(raw)
    except ValidationError as exc:
        raise CatalogError(f"{manifest}: " + "; ".join(manifest_errors(exc))) from exc
    if problem.id != pid:
        raise CatalogError(f"{manifest}: id {problem.id!r} differs from the file name")
    prefix = f"workspaces/{pid}/"
    present = {name: workspace_file(pid, name, files)
               for name in TRUSTED_FILES + OPTIONAL_TRUSTED_FILES}
    missing = [name for name in TRUSTED_FILES if present[name] is None]
    if missing:
        raise CatalogError(f"workspace {prefix} lacks trusted file(s): {', '.join(missing)}")
    extra = unexpected_files(pid, names)
    if extra:
        raise CatalogError(f"{extra[0]} is not a trusted or starter file: scoring would leave "
                           "it out; run `lean-eval validate-catalog`")
    trusted = {name: data for name, data in present.items() if data is not None}
    starter = {name: files[prefix + name] for name in STARTER_FILES if prefix + name in files}
    if "Submission.lean" not in starter:
        raise CatalogError(f"workspace {prefix} lacks the starter Submission.lean")
    entry = index.get(pid)
    if not isinstance(entry, dict):
        raise DigestMismatchError(f"workspaces/index.json has no entry for problem {pid!r}")
    expected = {**entry.get("trusted", {}),
                **{f"starter:{k}": v for k, v in entry.get("starter", {}).items()}}
    actual = {**{k: sha256(v) for k, v in trusted.items()},
              **{f"starter:{k}": sha256(v) for k, v in starter.items()}}
    if expected != actual:
        differing = sorted(k for k in expected.keys() | actual.keys()
                           if expected.get(k) != actual.get(k))
        raise DigestMismatchError(
            f"trusted files of {prefix} do not match workspaces/index.json: "
            + ", ".join(prefix + d.removeprefix("starter:") for d in differing)
        )
    for path, message in pins.pin_differences(pid, files):
        raise CatalogError(f"{path} {message}; run `lean-eval validate-catalog`")
    config = parse_config(trusted["config.json"], f"{prefix}config.json")
    for message in hole_differences(problem, config):
        raise CatalogError(f"{prefix}config.json: {message} ({manifest})")
    for message in axiom_faults(config):
        raise CatalogError(f"{prefix}config.json: problem {pid!r}: {message}")
    return ProblemWorkspace(problem=problem, config=config, config_raw=trusted["config.json"],
                            trusted=trusted, starter=starter,
                            digests={k: sha256(v) for k, v in trusted.items()})


def load_catalog(root: Path, *, revision: str | None = "HEAD",
                 only: frozenset[str] | None = None) -> Catalog:
    """Read and validate the benchmark at ``root`` (one revision when it is a git checkout)."""
    root = root.resolve()
    if not root.is_dir():
        raise CatalogError(f"benchmark directory {root} does not exist")
    warnings: tuple[str, ...] = ()
    commit: str | None = None
    if revision is not None and (root / ".git").exists():
        commit, files = source.git_files(root, revision, TRUSTED_PATHS)
        warnings = source.dirty(root, commit, TRUSTED_PATHS)
    else:
        files = source.tree_files(root, TRUSTED_PATHS)
    for name in ROOT_PIN_FILES:
        if name not in files:
            raise CatalogError(f"benchmark {root} lacks {name}")
    toolchain_name = files["lean-toolchain"].decode("utf-8", errors="replace").strip()
    strict_json(files["lake-manifest.json"], "lake-manifest.json")
    index = strict_json(files.get("workspaces/index.json", b"null"), "workspaces/index.json")
    if not isinstance(index, dict) or not isinstance(index.get("problems"), dict):
        raise CatalogError("workspaces/index.json is missing or has no 'problems' object")
    ids = sorted(
        name.removeprefix("problems/").removesuffix(".toml")
        for name in files
        if name.startswith("problems/") and name.endswith(".toml") and name.count("/") == 1
    )
    if not ids:
        raise CatalogError(f"benchmark {root} has no problems/*.toml")
    for pid in ids:
        if not PROBLEM_ID.match(pid):
            raise CatalogError(f"problems/{pid}.toml: invalid problem id {pid!r}")
    every_id = ids
    if only is not None:
        unknown = sorted(only - set(ids))
        if unknown:
            raise CatalogError(f"unknown problem id(s): {guesses(unknown, ids)}; the benchmark "
                               f"has {known_values(ids)}")
        ids = [pid for pid in ids if pid in only]
    root_digests = index.get("root", {})
    root_digests = root_digests if isinstance(root_digests, dict) else {}
    for name in sorted({BENCHMARK_CONFIG, PROVENANCE, *set_files(files).values(),
                        *root_digests}):
        expected = root_digests.get(name)
        actual = sha256(files[name]) if name in files else None
        if expected != actual:
            raise DigestMismatchError(f"{name} does not match workspaces/index.json")
    reserved = solution_only_modules(files)
    names = workspace_names(files)
    problems = {pid: _load_problem(pid, files, index["problems"], names.get(pid, []))
                for pid in ids}
    record = provenance.of_files(files)
    if record is not None:
        current = {pid: (ws.problem.statement_revision,
                         provenance.statement_digest(ws.trusted)) for pid, ws in problems.items()}
        for path, message in provenance.statement_faults(record, current, PROVENANCE):
            raise CatalogError(f"{path}: {message}")
    # Every workspace's pins, selected or not (design §5.1).
    for pid in every_id:
        for path, message in pins.pin_differences(pid, files):
            raise CatalogError(f"{path} {message} (workspace {pid}); run `lean-eval "
                               "validate-catalog`")
    for pid in ids:
        for path, message in forbidden_imports(pid, files, reserved):
            raise CatalogError(f"{path} {message}")
    shared = root / ".lake" / "packages"
    return Catalog(root=root, commit=commit, toolchain_name=toolchain_name, problems=problems,
                   upstream_commit=record.commit if record is not None else commit,
                   is_import=record is not None,
                   upstream_uncommitted=record.uncommitted if record is not None else (),
                   shared_packages=shared.resolve() if shared.is_dir() else None,
                   warnings=warnings, solution_only_modules=reserved, sets=load_sets(files))
