"""Load and validate the trusted benchmark: problems, workspaces, pins and trusted digests.

Invariants:
- Trusted bytes come from the benchmark's git revision when the benchmark is a git checkout
  (a dirty working tree is reported, never used), else from the directory as it stands.
- Every trusted and starter file must match its SHA-256 in ``workspaces/index.json``; any
  difference is a setup failure, so a tampered checkout cannot score.
- ``config.json`` is decoded strictly: duplicate keys, NaN/Infinity and wrong types are errors.
- Every workspace's ``lean-toolchain``, ``[[require]]`` entries and ``lake-manifest.json``
  package pins (name, url, rev) equal the root's (checked for every workspace, also when
  ``only`` selects some), and trusted Lean (``Challenge.lean``,
  ``ChallengeDeps.lean``) imports no module the benchmark declares solution-only in
  ``benchmark.toml``; otherwise the catalog is refused before any submission is read.
- A workspace without ``lake-manifest.json`` is scored with the one derived from the root's
  (``derived_lake_manifest``), whose digest the index records like any trusted file; any other
  workspace file that is neither trusted nor starter is refused (scoring would leave it out).
- Set files (``sets/<name>.toml``) are trusted: their digests are under ``root`` in the index.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import sys
import tarfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from lean_eval import process
from lean_eval.errors import CatalogError, DigestMismatchError, TrustedConfigError
from lean_eval.header import HeaderError, parse_header
from lean_eval.sets import SETS_DIR, ProblemSet, load_sets, set_files

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

PROBLEM_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_]{0,127}$")
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
_GIT_PATHS = ("problems", "workspaces", *ROOT_PIN_FILES, BENCHMARK_CONFIG, SETS_DIR)
_MAX_ARCHIVE = 512 * 1024 * 1024


class Hole(BaseModel):
    """One hole of a problem: a declaration the submission must supply."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    name: str
    kind: Literal["theorem", "def", "instance"]


class StatusChange(BaseModel):
    """A ``[[status_history]]`` row of a manifest: descriptive, kept and shown, never scored."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    status: str
    effective_date: str
    reason: str


class RevisionChange(BaseModel):
    """A ``[[revision_history]]`` row of a manifest: descriptive, kept and shown, never scored."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    revision: int = Field(ge=1)
    effective_date: str
    reason: str
    statement_digest: str | None = None


class Problem(BaseModel):
    """A problem manifest, ``problems/<id>.toml`` (design §4.1). The keys after ``source`` are
    the descriptive keys of the lean-eval catalog layout: optional, typed, kept by
    ``import-catalog`` and shown by ``list-problems``; scoring reads none of them."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    id: str = Field(pattern=PROBLEM_ID.pattern)
    title: str
    status: str
    visible: bool
    statement_revision: int = Field(ge=1)
    tags: tuple[str, ...]
    holes: tuple[Hole, ...] = Field(min_length=1)
    submitter: str
    notes: str | None = None
    source: str | None = None
    group: str | None = None
    module: str | None = None  # the source catalog's Lean module the statement comes from
    informal_solution: str | None = None
    test: bool | None = None  # the source catalog's marker of a test-only problem
    status_history: tuple[StatusChange, ...] = ()
    revision_history: tuple[RevisionChange, ...] = ()

    @field_validator("tags", "holes", "status_history", "revision_history", mode="before")
    @classmethod
    def _lists_are_tuples(cls, value: Any) -> Any:
        return tuple(value) if isinstance(value, list) else value


def manifest_errors(exc: ValidationError) -> list[str]:
    """Every fault of a manifest pydantic found (every unknown key among them), one line each."""
    return [f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}"
            for err in exc.errors()]


def derived_lake_manifest(root_manifest: bytes, lakefile: bytes, what: str) -> bytes:
    """The ``lake-manifest.json`` of a workspace that has none: the root's package pins, under
    the workspace's package name. Deterministic bytes, so the index can cover them."""
    manifest = strict_json(root_manifest, "lake-manifest.json")
    name = toml_table(lakefile, what).get("name")
    if not isinstance(manifest, dict) or not isinstance(name, str):
        raise CatalogError(f"{what}: cannot derive a lake-manifest.json (no package `name`, or "
                           "the root lake-manifest.json is not an object)")
    derived = {**manifest, "name": name}
    return (json.dumps(derived, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def workspace_file(pid: str, name: str, files: Mapping[str, bytes]) -> bytes | None:
    """The bytes of trusted file ``name`` of workspace ``pid``: as committed, or (only for a
    missing ``lake-manifest.json``) derived from the root's; None when absent."""
    path = f"workspaces/{pid}/{name}"
    if path in files:
        return files[path]
    lakefile = files.get(f"workspaces/{pid}/lakefile.toml")
    if name in DERIVED_FILES and lakefile is not None and "lake-manifest.json" in files:
        return derived_lake_manifest(files["lake-manifest.json"], lakefile,
                                     f"workspaces/{pid}/lakefile.toml")
    return None


def unexpected_files(pid: str, files: Mapping[str, bytes]) -> list[str]:
    """Workspace files of ``pid`` that are neither trusted nor starter files (dot-entries such
    as ``.lake/`` excepted): scoring would leave them out, so a catalog may not have them."""
    prefix = f"workspaces/{pid}/"
    known = {*TRUSTED_FILES, *OPTIONAL_TRUSTED_FILES, *STARTER_FILES}
    return sorted(name for name in files if name.startswith(prefix)
                  and name[len(prefix):] not in known
                  and not any(part.startswith(".") for part in name[len(prefix):].split("/")))


class ComparatorConfig(BaseModel):
    """A trusted ``config.json`` (design §4.2), typed exactly as ``lake comparator`` reads it."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    challenge_module: str
    solution_module: str
    theorem_names: tuple[str, ...]
    definition_names: tuple[str, ...] | None = None
    permitted_axioms: tuple[str, ...]
    enable_nanoda: bool | None = None
    external_kernels: dict[str, tuple[str, ...]] | None = None

    @field_validator(
        "theorem_names", "definition_names", "permitted_axioms", mode="before"
    )
    @classmethod
    def _arrays(cls, value: Any) -> Any:
        return tuple(value) if isinstance(value, list) else value

    @field_validator("external_kernels", mode="before")
    @classmethod
    def _kernel_argvs(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: tuple(v) if isinstance(v, list) else v for k, v in value.items()}
        return value


class ProblemWorkspace(BaseModel):
    """Everything trusted about one problem, read once per run."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    problem: Problem
    config: ComparatorConfig
    config_raw: bytes
    trusted: dict[str, bytes]
    starter: dict[str, bytes]
    digests: dict[str, str]


class Catalog(BaseModel):
    """The benchmark as the run sees it."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    root: Path
    commit: str | None
    toolchain_name: str
    problems: dict[str, ProblemWorkspace]
    shared_packages: Path | None
    warnings: tuple[str, ...] = ()
    solution_only_modules: tuple[str, ...] = ()
    sets: dict[str, ProblemSet] = Field(default_factory=dict)


def sha256(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name} is not allowed")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"duplicate key {key!r}")
        seen[key] = value
    return seen


def strict_json(data: bytes, what: str) -> Any:
    """Decode JSON rejecting duplicate keys, NaN/Infinity and non-UTF-8 input."""
    try:
        return json.loads(
            data.decode("utf-8"),
            object_pairs_hook=_no_duplicates,
            parse_constant=_reject_constant,
        )
    except (UnicodeDecodeError, ValueError) as exc:
        raise TrustedConfigError(f"{what}: {exc}") from exc


def parse_config(data: bytes, what: str) -> ComparatorConfig:
    """Strictly decode and type-check a trusted comparator configuration."""
    value = strict_json(data, what)
    try:
        return ComparatorConfig.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise TrustedConfigError(f"{what}: {loc}: {first['msg']}") from exc


def _git_files(root: Path, revision: str) -> tuple[str, dict[str, bytes]]:
    env = {"PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root)}
    rev = process.run_capture(
        ("git", "-C", str(root), "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"),
        env=env,
        cwd=root,
    )
    if rev.returncode != 0:
        raise CatalogError(f"benchmark revision {revision!r} not found in {root}")
    commit = rev.stdout.decode().strip()
    present = process.run_capture(
        ("git", "-C", str(root), "ls-tree", "--name-only", commit, "--", *_GIT_PATHS),
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


def _dirty(root: Path, commit: str) -> tuple[str, ...]:
    status = process.run_capture(
        ("git", "-C", str(root), "status", "--porcelain", "--", *_GIT_PATHS),
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


def tree_files(root: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for top in _GIT_PATHS:
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


def toml_table(data: bytes, what: str) -> dict[str, Any]:
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CatalogError(f"{what}: {exc}") from exc


def _requires(data: bytes, what: str) -> list[str]:
    entries = toml_table(data, what).get("require", [])
    if not isinstance(entries, list):
        raise CatalogError(f"{what}: `require` is not an array of tables")
    return sorted(json.dumps(entry, sort_keys=True) for entry in entries)


def _package_pins(data: bytes, what: str) -> list[tuple[str, str, str]]:
    manifest = strict_json(data, what)
    packages = manifest.get("packages") if isinstance(manifest, dict) else None
    if not isinstance(packages, list) or not all(isinstance(p, dict) for p in packages):
        raise CatalogError(f"{what}: `packages` is not an array of objects")
    return sorted((str(p.get("name")), str(p.get("url", p.get("dir"))), str(p.get("rev")))
                  for p in packages)


def pin_differences(pid: str, files: Mapping[str, bytes]) -> list[tuple[str, str]]:
    """(file, message) for each way workspace ``pid``'s pins differ from the root's."""
    prefix = f"workspaces/{pid}/"
    found: list[tuple[str, str]] = []
    if files.get(prefix + "lean-toolchain") != files["lean-toolchain"]:
        found.append((prefix + "lean-toolchain", "differs from the root lean-toolchain"))
    if prefix + "lakefile.toml" in files:
        mine = _requires(files[prefix + "lakefile.toml"], prefix + "lakefile.toml")
        if mine != _requires(files["lakefile.toml"], "lakefile.toml"):
            found.append((prefix + "lakefile.toml",
                          "[[require]] entries differ from the root lakefile.toml's"))
    if prefix + "lake-manifest.json" in files:
        mine_pins = _package_pins(files[prefix + "lake-manifest.json"],
                                  prefix + "lake-manifest.json")
        root_pins = _package_pins(files["lake-manifest.json"], "lake-manifest.json")
        if mine_pins != root_pins:
            drift = sorted(set(mine_pins) ^ set(root_pins))
            found.append((prefix + "lake-manifest.json",
                          f"package pins (name, url, rev) differ from the root's: {drift}"))
    return found


def solution_only_modules(files: Mapping[str, bytes]) -> tuple[str, ...]:
    """Module roots ``benchmark.toml`` reserves for solutions (``[lean-eval]
    solution_only_modules``); none when the file is absent."""
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


def hole_differences(problem: Problem, config: ComparatorConfig) -> list[str]:
    """How the manifest's holes and config.json's names disagree (by kind)."""
    theorems = {h.name for h in problem.holes if h.kind == "theorem"}
    others = {h.name for h in problem.holes if h.kind != "theorem"}
    found: list[str] = []
    if set(config.theorem_names) != theorems:
        found.append(f"theorem_names {sorted(config.theorem_names)} differ from the manifest's "
                     f"theorem holes {sorted(theorems)}")
    if set(config.definition_names or ()) != others:
        found.append(f"definition_names {sorted(config.definition_names or ())} differ from "
                     f"the manifest's def/instance holes {sorted(others)}")
    return found


def _load_problem(pid: str, files: Mapping[str, bytes],
                  index: Mapping[str, Any]) -> ProblemWorkspace:
    manifest = f"problems/{pid}.toml"
    try:
        raw = tomllib.loads(files[manifest].decode("utf-8"))
        problem = Problem.model_validate(raw)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CatalogError(f"{manifest}: {exc}") from exc
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
    extra = unexpected_files(pid, files)
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
    for path, message in pin_differences(pid, files):
        raise CatalogError(f"{path} {message}; run `lean-eval validate-catalog`")
    config = parse_config(trusted["config.json"], f"{prefix}config.json")
    for message in hole_differences(problem, config):
        raise CatalogError(f"{prefix}config.json: {message} ({manifest})")
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
        commit, files = _git_files(root, revision)
        warnings = _dirty(root, commit)
    else:
        files = tree_files(root)
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
            raise CatalogError(f"unknown problem id(s): {', '.join(unknown)}")
        ids = [pid for pid in ids if pid in only]
    root_digests = index.get("root", {})
    root_digests = root_digests if isinstance(root_digests, dict) else {}
    for name in sorted({BENCHMARK_CONFIG, *set_files(files).values(), *root_digests}):
        expected = root_digests.get(name)
        actual = sha256(files[name]) if name in files else None
        if expected != actual:
            raise DigestMismatchError(f"{name} does not match workspaces/index.json")
    reserved = solution_only_modules(files)
    problems = {pid: _load_problem(pid, files, index["problems"]) for pid in ids}
    # Pins of every workspace, selected or not (design §5.1): a drift anywhere means the revision
    # is not the benchmark its maintainers validated, and a --problem or --shard run must not
    # score what a full run of the same revision refuses.
    for pid in every_id:
        for path, message in pin_differences(pid, files):
            raise CatalogError(f"{path} {message} (workspace {pid}); run `lean-eval "
                               "validate-catalog`")
    for pid in ids:
        for path, message in forbidden_imports(pid, files, reserved):
            raise CatalogError(f"{path} {message}")
    shared = root / ".lake" / "packages"
    return Catalog(root=root, commit=commit, toolchain_name=toolchain_name, problems=problems,
                   shared_packages=shared.resolve() if shared.is_dir() else None,
                   warnings=warnings, solution_only_modules=reserved, sets=load_sets(files))
