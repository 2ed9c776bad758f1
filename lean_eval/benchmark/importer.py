"""``lean-eval import-catalog SRC DEST``: the lean-eval source layout (``manifests/``,
``generated/<id>/``, a root Lean project) converted into this benchmark layout (design §4.2).

Invariants: files are copied byte for byte but manifests' ``holes`` (kinds from ``config.json``,
checked against ``holes.json``) and lakefiles; every other change is an ``ImportNote``; what
cannot be imported faithfully is one ``CatalogError`` listing every fault, each naming its
source file, and nothing is written; the output is a function of the source bytes and the
upstream commit (``provenance.json``). The source is read by ``upstream.read_source``, which
follows no symlink.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Literal, NamedTuple

import tomli_w
from pydantic import ValidationError

from lean_eval.benchmark import provenance, source_checks, upstream
from lean_eval.benchmark.index import index_of, render
from lean_eval.benchmark.problem import Problem, axiom_faults, manifest_errors, parse_config
from lean_eval.benchmark.sets import parse_set, set_faults
from lean_eval.errors import CatalogError
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


def _hole_kinds(pid: str, where: str, manifest: dict[str, Any], files: dict[str, bytes],
                notes: list[ImportNote]) -> list[dict[str, str]]:
    if "config.json" not in files:
        raise CatalogError(f"generated/{pid}/config.json: missing")
    config = parse_config(files["config.json"], f"generated/{pid}/config.json")
    faults = axiom_faults(config)
    if faults:
        raise CatalogError(f"generated/{pid}/config.json: problem {pid!r}: " + "; ".join(faults))
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


def _manifest(pid: str, where: str, raw: dict[str, Any],
              holes: list[dict[str, str]]) -> bytes:
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


def plan_import(src: Path, *, commit: str | None = None,
                allow_dirty: bool = False) -> ImportPlan:
    """Everything an import of ``src`` writes, or one CatalogError listing every fault (each
    naming its file). ``commit`` states the upstream commit when ``src`` is no git checkout;
    a git checkout whose work tree differs from its HEAD is refused unless ``allow_dirty``."""
    src = src.resolve()
    tree = upstream.read_source(src)
    errors = list(tree.errors)
    notes = [ImportNote("warning", path, message) for path, message in tree.warnings]
    repository, found_commit = provenance.source_commit(src)
    dirty = source_checks.uncommitted(src, found_commit, upstream.read_paths(tree), allow_dirty)
    notes.extend(ImportNote("warning", path, message) for path, message in dirty.warnings)
    files: dict[str, bytes] = {}
    statements: dict[str, dict[str, str]] = {}
    toolchains: dict[bytes, list[str]] = defaultdict(list)
    pin_sets: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for pid, manifest in sorted(tree.manifests.items()):
        try:
            written = _problem(pid, manifest, tree.workspaces[pid], notes)
        except CatalogError as exc:
            errors.append(str(exc))
            continue
        files.update(written)
        ws = tree.workspaces[pid]
        toolchains[ws.get("lean-toolchain", b"")].append(pid)
        pin_sets[tuple(_requires(toml_table(ws["lakefile.toml"], pid)))].append(pid)
        revision = toml_table(written[f"problems/{pid}.toml"], pid)["statement_revision"]
        statements[pid] = {str(revision): provenance.statement_digest(ws)}
    toolchain = _toolchain(tree.root.get("lean-toolchain"), toolchains, notes, errors)
    if len(pin_sets) > 1:
        errors.append("generated/*/lakefile.toml: the workspaces' [[require]] entries differ, "
                      "so there is no one pin set; regenerate the workspaces upstream (or "
                      "import the commit that did): "
                      + "; ".join(", ".join(f"generated/{i}/lakefile.toml" for i in ids)
                                  + f" require {list(pins) or 'nothing'}"
                                  for pins, ids in sorted(pin_sets.items())))
    if not files and not errors:
        errors.append("manifests: no problems")
    if errors:
        raise CatalogError(f"{src}: cannot be imported faithfully ({len(errors)} fault(s)):\n  "
                           + "\n  ".join(errors))
    pins = next(iter(pin_sets))
    files.update(_root_files(tree.root, list(pins), toolchain, notes))
    files.update(_sets(tree, files, notes))
    record = provenance.Provenance(repository=repository, commit=commit or found_commit,
                                   statements=statements, uncommitted=dirty.paths)
    if found_commit is not None:
        notes.extend(ImportNote("warning", path, message) for path, message
                     in source_checks.unbumped(src, found_commit, statements, dirty.paths))
    if record.commit is None:
        notes.append(ImportNote("warning", ".", "the source is no git checkout and no commit "
                                "was stated: exports from this import will be refused "
                                "(re-import from a git checkout, or give --upstream-commit)"))
    files[provenance.PROVENANCE] = provenance.render(record)
    files["workspaces/index.json"] = render(index_of(files))
    return ImportPlan(files=dict(sorted(files.items())), notes=tuple(notes))


def _problem(pid: str, manifest: upstream.Manifest, ws: dict[str, bytes],
             notes: list[ImportNote]) -> dict[str, bytes]:
    """The files one problem imports as (or CatalogError naming its first fault)."""
    where = manifest.where
    if not PROBLEM_ID.match(pid):
        raise CatalogError(f"{where}: invalid problem id {pid!r}")
    unknown = sorted(set(ws) - set(COPIED) - set(DROPPED) - {"lakefile.toml"})
    if unknown:
        raise CatalogError(", ".join(f"generated/{pid}/{name}" for name in unknown)
                           + ": not a file this harness can import faithfully (scoring would "
                           "leave it out)")
    if "lakefile.toml" not in ws:
        raise CatalogError(f"generated/{pid}/lakefile.toml: missing")
    if "lean-toolchain" not in ws:
        raise CatalogError(f"generated/{pid}/lean-toolchain: missing")
    raw, filled = upstream.with_lifecycle_defaults(manifest.table)
    if "holes" not in raw and isinstance(raw.get("theorem"), str):
        raw["holes"] = [raw.pop("theorem")]  # the earliest manifests named their one hole so
        notes.append(ImportNote("changed", where, "`theorem = NAME` (the earliest manifests' "
                                                  "one hole) is read as holes = [NAME]"))
    if filled:
        notes.append(ImportNote("warning", where, f"has no {', '.join(filled)}: read as the "
                                "public pipeline reads a manifest from before the lifecycle "
                                "keys (status draft, visible, statement_revision 1, no tags)"))
    files = {f"problems/{pid}.toml": _manifest(pid, where, raw,
                                               _hole_kinds(pid, where, raw, ws, notes))}
    files.update({f"workspaces/{pid}/{name}": ws[name] for name in COPIED if name in ws})
    files[f"workspaces/{pid}/lakefile.toml"], _ = _lakefile(
        pid, ws["lakefile.toml"], set(ws) & set(COPIED), notes)
    notes.extend(ImportNote("dropped", f"generated/{pid}/{name}", why)
                 for name, why in DROPPED.items() if name in ws)
    if b"lake test" in ws.get("README.md", b""):
        notes.append(ImportNote("unmapped", f"generated/{pid}/README.md",
                                "mentions `lake test`, which the imported workspace does "
                                "not have (copied byte for byte; use `lean-eval test`)"))
    return files


def _toolchain(root: bytes | None, toolchains: dict[bytes, list[str]],
               notes: list[ImportNote], errors: list[str]) -> bytes:
    """The one toolchain every workspace was generated for (the catalog's); a root that differs
    from it is a warning (upstream bumps the root before regenerating), workspaces that differ
    among themselves are a fault naming every one."""
    if len(toolchains) > 1:
        errors.append("generated/*/lean-toolchain: the workspaces name different toolchains; "
                      "regenerate them upstream (or import the commit that did): "
                      + "; ".join(", ".join(f"generated/{i}/lean-toolchain" for i in ids)
                                  + f" name {data.decode(errors='replace').strip() or '(empty)'}"
                                  for data, ids in sorted(toolchains.items())))
        return root or b""
    if not toolchains:
        return root or b""
    (chosen, ids), = toolchains.items()
    if root is not None and root != chosen:
        notes.append(ImportNote("warning", "lean-toolchain",
                                f"the root names {root.decode(errors='replace').strip()}, all "
                                f"{len(ids)} workspaces {chosen.decode(errors='replace').strip()}"
                                " (the root was bumped before the workspaces were regenerated): "
                                "the import uses the workspaces' toolchain; import the "
                                "regenerating commit to score with the root's"))
    return chosen


def _root_files(root_files: dict[str, bytes], pins: list[str], toolchain: bytes,
                notes: list[ImportNote]) -> dict[str, bytes]:
    root = toml_table(root_files["lakefile.toml"], "lakefile.toml: cannot be read as TOML")
    name = root.get("name") if isinstance(root.get("name"), str) else "benchmark"
    requires = [json.loads(entry) for entry in pins]
    pin_set = {"name": name, "require": requires} if requires else {"name": name}
    if _requires(root) != pins or set(root) - {"name", "require"}:
        notes.append(ImportNote("changed", "lakefile.toml",
                                "the source's root Lean project (its libraries, executables and "
                                f"{len(root.get('require', []))} requirement(s)) is replaced by "
                                f"the pin set: the workspaces' {len(requires)} requirement(s)"))
    header = ("# Pin set written by `lean-eval import-catalog`: the [[require]] entries every "
              "workspace declares.\n")
    strict_json(root_files["lake-manifest.json"], "lake-manifest.json")
    return {"lean-toolchain": toolchain,
            "lakefile.toml": (header + tomli_w.dumps(pin_set)).encode("utf-8"),
            "lake-manifest.json": root_files["lake-manifest.json"]}


def _sets(tree: upstream.SourceTree, files: dict[str, bytes],
          notes: list[ImportNote]) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    revisions = {rel[len("problems/"):-len(".toml")]: toml_table(data, rel)[
        "statement_revision"] for rel, data in files.items() if rel.startswith("problems/")}
    notes.extend(ImportNote("dropped", f"manifests/sets/{name}", "not a set file")
                 for name in tree.other_sets)
    for name, data in sorted(tree.sets.items()):
        rel = f"manifests/sets/{name}"
        problem_set = parse_set(data, f"sets/{name}")
        notes.extend(ImportNote("warning", rel, fault)
                     for fault in set_faults(problem_set, revisions))
        out[f"sets/{name}"] = data
    if tree.has_tags:
        notes.append(ImportNote("dropped", "manifests/tags.toml",
                                "the tag registry; each manifest keeps its tags"))
    return out
