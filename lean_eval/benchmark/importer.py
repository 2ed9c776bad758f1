"""``lean-eval import-catalog SRC DEST``: the lean-eval source layout (``manifests/``,
``generated/<id>/``, a root Lean project) converted into this benchmark layout (design §4.2).

Invariants: files are copied byte for byte but manifests' ``holes`` (kinds from ``config.json``,
checked against ``holes.json``) and lakefiles; every other change is an ``ImportNote``; what
cannot be imported faithfully is a ``CatalogError`` naming the source file, and nothing is
written; the output is a function of the source bytes.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Literal, NamedTuple

import tomli_w
from pydantic import ValidationError

from lean_eval.benchmark import catalog
from lean_eval.benchmark.index import index_of, render
from lean_eval.benchmark.problem import Problem, manifest_errors, parse_config
from lean_eval.benchmark.sets import parse_set, set_faults
from lean_eval.errors import CatalogError, UsageError
from lean_eval.files.decoding import strict_json, toml_table
from lean_eval.lean.declarations import declarations
from lean_eval.lean.lakefile import SUBMISSION_GLOBS, UNTRUSTED_TARGETS
from lean_eval.records.ids import PROBLEM_ID

COPIED = ("Challenge.lean", "ChallengeDeps.lean", "Solution.lean", "Submission.lean",
          "Submission/Helpers.lean", "README.md", "config.json", "lean-toolchain")
DROPPED = {
    "holes.json": "hole kinds are read into the manifest; scoring does not use it",
    "WorkspaceTest.lean": "the `lake test` driver; lean-eval runs `lake comparator` itself",
    "lake-manifest.json": "derived from the root's lake-manifest.json at scoring time",
}
_MANIFEST_ORDER = ("id", "title", "status", "visible", "statement_revision", "tags", "holes",
                   "submitter", "notes", "source")


class ImportNote(NamedTuple):
    """One thing the import changed, dropped, could not map, or warns about."""

    action: Literal["changed", "dropped", "unmapped", "warning"]
    path: str  # the source path it concerns
    message: str


class ImportPlan(NamedTuple):
    """The benchmark an import writes (relative path -> bytes) and its notes."""

    files: dict[str, bytes]
    notes: tuple[ImportNote, ...]


def _toml(path: Path, src: Path) -> dict[str, Any]:
    what = f"{path.relative_to(src)}: cannot be read as TOML"
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CatalogError(f"{what}: {exc}") from exc
    return toml_table(data, what)


def _workspace_files(src: Path, pid: str) -> dict[str, bytes]:
    base = src / "generated" / pid
    if not base.is_dir():
        raise CatalogError(f"manifests/problems/{pid}.toml: no workspace generated/{pid}/")
    found: dict[str, bytes] = {}
    for path in sorted(base.rglob("*")):
        rel = path.relative_to(base).as_posix()
        if any(part.startswith(".") or part == "build" for part in rel.split("/")):
            continue  # local build state (.lake/, build/) is never part of a catalog
        if path.is_symlink() or (not path.is_file() and not path.is_dir()):
            raise CatalogError(f"generated/{pid}/{rel}: not a regular file")
        if path.is_file():
            found[rel] = path.read_bytes()
    return found


def _hole_kinds(pid: str, manifest: dict[str, Any], files: dict[str, bytes],
                notes: list[ImportNote]) -> list[dict[str, str]]:
    where = f"manifests/problems/{pid}.toml"
    if "config.json" not in files:
        raise CatalogError(f"generated/{pid}/config.json: missing")
    config = parse_config(files["config.json"], f"generated/{pid}/config.json")
    names = manifest.get("holes")
    if not isinstance(names, list) or not names:
        raise CatalogError(f"{where}: holes must be a non-empty list")
    keywords = {d.name: d.keyword for d in declarations(
        files.get("Challenge.lean", b"").decode("utf-8", errors="replace"))}
    listed: dict[str, str] = {}
    if "holes.json" in files:
        raw = strict_json(files["holes.json"], f"generated/{pid}/holes.json")
        entries = raw.get("holes") if isinstance(raw, dict) else None
        if not isinstance(entries, list):
            raise CatalogError(f"generated/{pid}/holes.json: no `holes` list")
        listed = {str(e.get("name")): str(e.get("kind")) for e in entries if isinstance(e, dict)}
    holes: list[dict[str, str]] = []
    for entry in names:
        if isinstance(entry, dict):  # already this layout's {name, kind}
            holes.append({"name": str(entry.get("name")), "kind": str(entry.get("kind"))})
            continue
        if not isinstance(entry, str):
            raise CatalogError(f"{where}: hole {entry!r} is not a name")
        # a manifest may name a hole by its last components; the workspace's full name is
        # the one config.json gives (and the one scoring compares)
        full = [n for n in (*config.theorem_names, *(config.definition_names or ()))
                if n == entry or n.endswith("." + entry)]
        if len(full) != 1:
            raise CatalogError(f"{where}: hole {entry!r} names {len(full)} of the theorem_names "
                               f"and definition_names of generated/{pid}/config.json, not one")
        name = full[0]
        if name != entry and not any(n.path == where for n in notes):
            notes.append(ImportNote("changed", where, "holes named by their last components "
                                                      "take their full names in the workspace "
                                                      "(config.json's)"))
        if name in config.theorem_names:
            kind = "theorem"
        else:
            kind = "instance" if keywords.get(name) == "instance" else "def"
        matches = [k for n, k in listed.items() if n == name or n.endswith("." + name)]
        if listed and (len(matches) != 1
                       or matches[0] != ("theorem" if kind == "theorem" else "def")):
            raise CatalogError(f"generated/{pid}/holes.json: hole {name!r} has kind(s) "
                               f"{matches}, config.json makes it a {kind}")
        holes.append({"name": name, "kind": kind})
    named = set(config.theorem_names) | set(config.definition_names or ())
    if named != {h["name"] for h in holes}:
        raise CatalogError(f"generated/{pid}/config.json: names {sorted(named)}, the manifest's "
                           f"holes are {sorted(h['name'] for h in holes)}")
    return holes


def _manifest(pid: str, raw: dict[str, Any], holes: list[dict[str, str]]) -> bytes:
    where = f"manifests/problems/{pid}.toml"
    table = {**raw, "holes": holes}
    ordered = {k: table[k] for k in _MANIFEST_ORDER if k in table}
    ordered.update({k: v for k, v in table.items() if k not in ordered})
    try:
        problem = Problem.model_validate(ordered)
    except ValidationError as exc:
        raise CatalogError(f"{where}: " + "; ".join(manifest_errors(exc))) from exc
    if problem.id != pid:
        raise CatalogError(f"{where}: id {problem.id!r} differs from the file name")
    header = f"# Imported by `lean-eval import-catalog` from {where}.\n"
    return (header + tomli_w.dumps(ordered)).encode("utf-8")


def _lakefile(pid: str, data: bytes, present: set[str],
              notes: list[ImportNote]) -> tuple[bytes, list[str]]:
    where = f"generated/{pid}/lakefile.toml"
    table = toml_table(data, where)
    changes: list[str] = []
    changes.extend(f"removed {key} = {table.pop(key)!r}"
                   for key in ("testDriver", "lintDriver") if key in table)
    defaults = [t for t in table.get("defaultTargets", []) if t not in UNTRUSTED_TARGETS]
    if defaults != table.get("defaultTargets"):
        changes.append(f"defaultTargets {table.get('defaultTargets')!r} -> "
                       f"{defaults or ['Challenge']!r} (trusted code only)")
        table["defaultTargets"] = defaults or ["Challenge"]
    for lib in table.get("lean_lib", []):
        if isinstance(lib, dict) and lib.get("name") == "Submission" and (
                lib.get("globs") != list(SUBMISSION_GLOBS)):
            lib["globs"] = list(SUBMISSION_GLOBS)
            changes.append(f"Submission library globs = {list(SUBMISSION_GLOBS)}")
    exes = [e for e in table.get("lean_exe", []) if isinstance(e, dict)]
    kept = [e for e in exes
            if str(e.get("root", e.get("name"))).replace(".", "/") + ".lean" in present]
    if len(kept) != len(exes):
        changes.extend(f"removed [[lean_exe]] {e.get('name')!r} (its root is not imported)"
                       for e in exes if e not in kept)
        if kept:
            table["lean_exe"] = kept
        else:
            table.pop("lean_exe", None)
    notes.extend(ImportNote("changed", where, change) for change in changes)
    header = (f"# Imported by `lean-eval import-catalog` from {where}"
              + "".join(f"\n# - {change}" for change in changes) + "\n")
    return (header + tomli_w.dumps(table)).encode("utf-8"), changes


def _requires(table: dict[str, Any]) -> list[str]:
    entries = table.get("require", [])
    return sorted(json.dumps(e, sort_keys=True) for e in entries if isinstance(e, dict))


def plan_import(src: Path) -> ImportPlan:
    """Everything an import of ``src`` writes, or CatalogError naming what cannot be imported."""
    src = src.resolve()
    problems_dir = src / "manifests" / "problems"
    if not problems_dir.is_dir() or not (src / "generated").is_dir():
        raise CatalogError(f"{src}: not the lean-eval source layout (needs manifests/problems/ "
                           "and generated/)")
    for name in catalog.ROOT_PIN_FILES:
        if not (src / name).is_file():
            raise CatalogError(f"{name}: missing in {src}")
    files: dict[str, bytes] = {}
    notes: list[ImportNote] = []
    toolchain = (src / "lean-toolchain").read_bytes()
    ids = sorted(p.stem for p in problems_dir.glob("*.toml"))
    orphans = sorted(p.name for p in (src / "generated").iterdir()
                     if p.is_dir() and not p.name.startswith(".") and p.name not in ids)
    if orphans:
        raise CatalogError(f"generated/{orphans[0]}/: has no manifests/problems/{orphans[0]}.toml")
    pins: tuple[str, list[str]] | None = None
    for pid in ids:
        if not PROBLEM_ID.match(pid):
            raise CatalogError(f"manifests/problems/{pid}.toml: invalid problem id")
        raw = _toml(problems_dir / f"{pid}.toml", src)
        ws = _workspace_files(src, pid)
        unknown = sorted(set(ws) - set(COPIED) - set(DROPPED) - {"lakefile.toml"})
        if unknown:
            raise CatalogError(f"generated/{pid}/{unknown[0]}: not a file this harness can "
                               "import faithfully (scoring would leave it out)")
        if ws.get("lean-toolchain") != toolchain:
            raise CatalogError(f"generated/{pid}/lean-toolchain: differs from the root's")
        if "lakefile.toml" not in ws:
            raise CatalogError(f"generated/{pid}/lakefile.toml: missing")
        files[f"problems/{pid}.toml"] = _manifest(pid, raw, _hole_kinds(pid, raw, ws, notes))
        for name in COPIED:
            if name in ws:
                files[f"workspaces/{pid}/{name}"] = ws[name]
        lakefile = toml_table(ws["lakefile.toml"], f"generated/{pid}/lakefile.toml")
        if pins is None:
            pins = (pid, _requires(lakefile))
        elif _requires(lakefile) != pins[1]:
            raise CatalogError(f"generated/{pid}/lakefile.toml: [[require]] entries differ from "
                               f"generated/{pins[0]}/lakefile.toml's; no one pin set")
        files[f"workspaces/{pid}/lakefile.toml"], _ = _lakefile(
            pid, ws["lakefile.toml"], set(ws) & set(COPIED), notes)
        notes.extend(ImportNote("dropped", f"generated/{pid}/{name}", why)
                     for name, why in DROPPED.items() if name in ws)
        if b"lake test" in ws.get("README.md", b""):
            notes.append(ImportNote("unmapped", f"generated/{pid}/README.md",
                                    "mentions `lake test`, which the imported workspace does "
                                    "not have (copied byte for byte; use `lean-eval test`)"))
    if pins is None:
        raise CatalogError("manifests/problems/: no problems")
    files.update(_root_files(src, pins, toolchain, notes))
    files.update(_sets(src, files, notes))
    files["workspaces/index.json"] = render(index_of(files))
    return ImportPlan(files=dict(sorted(files.items())), notes=tuple(notes))


def _root_files(src: Path, pins: tuple[str, list[str]], toolchain: bytes,
                notes: list[ImportNote]) -> dict[str, bytes]:
    root = _toml(src / "lakefile.toml", src)
    name = root.get("name") if isinstance(root.get("name"), str) else "benchmark"
    requires = [json.loads(entry) for entry in pins[1]]
    pin_set = {"name": name, "require": requires} if requires else {"name": name}
    if _requires(root) != pins[1] or set(root) - {"name", "require"}:
        notes.append(ImportNote("changed", "lakefile.toml",
                                "the source's root Lean project (its libraries, executables and "
                                f"{len(root.get('require', []))} requirement(s)) is replaced by "
                                f"the pin set: the workspaces' {len(requires)} requirement(s)"))
    header = ("# Pin set written by `lean-eval import-catalog`: the [[require]] entries every "
              "workspace declares.\n")
    strict_json((src / "lake-manifest.json").read_bytes(), "lake-manifest.json")
    return {"lean-toolchain": toolchain,
            "lakefile.toml": (header + tomli_w.dumps(pin_set)).encode("utf-8"),
            "lake-manifest.json": (src / "lake-manifest.json").read_bytes()}


def _sets(src: Path, files: dict[str, bytes], notes: list[ImportNote]) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    sets_dir = src / "manifests" / "sets"
    revisions = {rel[len("problems/"):-len(".toml")]: toml_table(data, rel)[
        "statement_revision"] for rel, data in files.items() if rel.startswith("problems/")}
    entries = sorted(sets_dir.iterdir()) if sets_dir.is_dir() else []
    notes.extend(ImportNote("dropped", f"manifests/sets/{p.name}", "not a set file")
                 for p in entries if not p.name.endswith(".toml") or not p.is_file())
    for entry in entries:
        if not entry.name.endswith(".toml") or not entry.is_file():
            continue
        rel = f"manifests/sets/{entry.name}"
        data = entry.read_bytes()
        problem_set = parse_set(data, f"sets/{entry.name}")
        notes.extend(ImportNote("warning", rel, fault)
                     for fault in set_faults(problem_set, revisions))
        out[f"sets/{entry.name}"] = data
    if (src / "manifests" / "tags.toml").is_file():
        notes.append(ImportNote("dropped", "manifests/tags.toml",
                                "the tag registry; each manifest keeps its tags"))
    return out


def write_import(plan: ImportPlan, dest: Path) -> None:
    """Write ``plan`` as the fresh ``dest`` (UsageError if it exists) via a renamed sibling."""
    dest = dest.absolute()
    if dest.exists() or dest.is_symlink():
        raise UsageError(f"{dest} exists; import-catalog writes a fresh directory (use --check "
                         "to compare an existing one)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        for rel, data in plan.files.items():
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        staging.chmod(0o755)
        os.rename(staging, dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def check_import(plan: ImportPlan, dest: Path) -> list[str]:
    """How ``dest`` differs from what importing would write (empty: up to date)."""
    if not dest.is_dir():
        return [f"{dest}: not a directory"]
    on_disk = {p.relative_to(dest).as_posix(): p for p in sorted(dest.rglob("*"))
               if p.is_file() and not any(part.startswith(".")
                                          for part in p.relative_to(dest).parts)}
    found = [f"{rel}: missing" for rel in plan.files if rel not in on_disk]
    found += [f"{rel}: differs" for rel, data in plan.files.items()
              if rel in on_disk and on_disk[rel].read_bytes() != data]
    found += [f"{rel}: not written by the import" for rel in on_disk if rel not in plan.files]
    return sorted(found)
