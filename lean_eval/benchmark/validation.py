"""Check a benchmark as it stands (``lean-eval validate-catalog``) by scoring's rules: unlike
``catalog.load_catalog``, which stops at the first fault, collect every fault, naming its file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from lean_eval.benchmark import catalog, provenance, source
from lean_eval.benchmark.pins import pin_differences
from lean_eval.benchmark.problem import (
    Problem,
    axiom_faults,
    hole_differences,
    manifest_errors,
    parse_config,
)
from lean_eval.benchmark.sets import parse_set, set_faults, set_files
from lean_eval.errors import CatalogError
from lean_eval.files.decoding import strict_json, toml_table
from lean_eval.lean.declarations import Declaration, declarations
from lean_eval.lean.lakefile import lakefile_faults
from lean_eval.records.documents import CatalogFinding as Finding
from lean_eval.records.documents import CatalogReport
from lean_eval.records.ids import PROBLEM_ID

# A theorem hole may be an `instance` of a Prop-valued class (Lean makes it a theorem).
_KEYWORDS = {"theorem": ("theorem", "lemma", "instance"), "def": ("def", "abbrev"),
             "instance": ("instance",)}


def _text(files: Mapping[str, bytes], path: str) -> str:
    return files[path].decode("utf-8", errors="replace")


def _decls(files: Mapping[str, bytes], path: str) -> dict[str, Declaration]:
    return {d.name: d for d in declarations(_text(files, path))} if path in files else {}


def _lean_findings(pid: str, problem: Problem,
                   files: Mapping[str, bytes]) -> list[Finding]:
    prefix = f"workspaces/{pid}/"
    found: list[Finding] = []
    challenge = _decls(files, prefix + "Challenge.lean")
    bridge = _decls(files, prefix + "Solution.lean")
    starter = _decls(files, prefix + "Submission.lean")
    for hole in problem.holes:
        keywords = _KEYWORDS[hole.kind]
        stated = challenge.get(hole.name)
        if stated is None or stated.keyword not in keywords:
            found.append(Finding(path=prefix + "Challenge.lean",
                                 message=f"declares no {hole.kind} hole {hole.name!r} "
                                         f"(problems/{pid}.toml)"))
        elif "sorry" not in re.findall(r"[\w']+", stated.text):
            found.append(Finding(path=prefix + "Challenge.lean",
                                 message=f"hole {hole.name!r} is not left as sorry"))
        mine = starter.get(f"Submission.{hole.name}")
        if mine is None or mine.keyword not in keywords:
            found.append(Finding(path=prefix + "Submission.lean",
                                 message=f"starter declares no {hole.kind} "
                                         f"Submission.{hole.name}"))
        elif stated is not None and mine.signature != stated.signature:
            found.append(Finding(path=prefix + "Submission.lean",
                                 message=f"starter states Submission.{hole.name} as "
                                         f"{mine.signature!r}, Challenge.lean as "
                                         f"{stated.signature!r}"))
        delegate = bridge.get(hole.name)
        if delegate is None or delegate.keyword not in keywords:
            found.append(Finding(path=prefix + "Solution.lean",
                                 message=f"bridge declares no {hole.kind} {hole.name!r}"))
        elif stated is not None and delegate.signature != stated.signature:
            found.append(Finding(path=prefix + "Solution.lean",
                                 message=f"bridge states {hole.name!r} as "
                                         f"{delegate.signature!r}, Challenge.lean as "
                                         f"{stated.signature!r}"))
        elif not re.search(rf"(?<![\w.']){re.escape('Submission.' + hole.name)}(?![\w'])",
                           delegate.text):
            found.append(Finding(path=prefix + "Solution.lean",
                                 message=f"bridge {hole.name!r} does not use "
                                         f"Submission.{hole.name}"))
    found.extend(_repeat_findings(prefix, problem, challenge, bridge, starter))
    return found


def _repeat_findings(prefix: str, problem: Problem, challenge: dict[str, Declaration],
                     bridge: dict[str, Declaration],
                     starter: dict[str, Declaration]) -> list[Finding]:
    """Faults of non-hole bridge and starter declarations: a repeat of a Challenge one must
    state the same, and the bridge may declare nothing else (design §4.2)."""
    holes = {h.name for h in problem.holes}
    found: list[Finding] = []
    repeats = [("Solution.lean", name, decl) for name, decl in bridge.items() if name not in holes]
    repeats += [("Submission.lean", name.removeprefix("Submission."), decl)
                for name, decl in starter.items()
                if name.startswith("Submission.") and name.removeprefix("Submission.") not in holes]
    for file, name, decl in sorted(repeats, key=lambda r: (r[0], r[2].line)):
        original = challenge.get(name)
        if original is None:
            if file == "Solution.lean":
                found.append(Finding(path=prefix + file,
                                     message=f"bridge declares {name!r}, which is not a hole "
                                             "nor a declaration of Challenge.lean"))
            continue
        if (decl.keyword, decl.statement) != (original.keyword, original.statement):
            found.append(Finding(path=prefix + file,
                                 message=f"repeats {name!r} of {prefix}Challenge.lean "
                                         f"(line {original.line}) as {decl.keyword} "
                                         f"{decl.statement!r} (line {decl.line}), "
                                         f"Challenge.lean as {original.keyword} "
                                         f"{original.statement!r}"))
    return found


def _problem_findings(pid: str, files: Mapping[str, bytes], index: Mapping[str, Any],
                      reserved: tuple[str, ...], names: list[str],
                      record: provenance.Provenance | None) -> list[Finding]:
    manifest = f"problems/{pid}.toml"
    prefix = f"workspaces/{pid}/"
    found: list[Finding] = []
    try:
        problem = Problem.model_validate(toml_table(files[manifest], manifest))
        if problem.id != pid:
            found.append(Finding(path=manifest, message=f"id {problem.id!r} differs from the "
                                                        "file name"))
    except ValidationError as exc:
        return [Finding(path=manifest, message=m) for m in manifest_errors(exc)]
    except CatalogError as exc:
        return [Finding(path=manifest, message=str(exc))]
    try:
        derived = {n: catalog.workspace_file(pid, n, files) for n in catalog.DERIVED_FILES}
    except CatalogError as exc:
        derived = {}
        found.append(Finding(path=prefix + "lakefile.toml", message=str(exc)))
    missing = [n for n in (*catalog.TRUSTED_FILES, "Submission.lean")
               if prefix + n not in files and derived.get(n) is None]
    found.extend(Finding(path=prefix + n, message="missing") for n in missing)
    found.extend(Finding(path=path, message="not a trusted or starter file: scoring would "
                                            "leave it out (remove it, or drop what needs it)")
                 for path in catalog.unexpected_files(pid, names))
    found.extend(_lakefile_findings(pid, files, names))
    entry = index.get(pid)
    if not isinstance(entry, dict):
        found.append(Finding(path="workspaces/index.json", message=f"no entry for {pid!r}"))
    else:
        recorded = {**entry.get("trusted", {}), **entry.get("starter", {})}
        actual = {n: files.get(prefix + n, derived.get(n))
                  for n in (*catalog.TRUSTED_FILES, *catalog.OPTIONAL_TRUSTED_FILES,
                            *catalog.STARTER_FILES)}
        digests = {n: catalog.sha256(data) for n, data in actual.items() if data is not None}
        found.extend(Finding(path=prefix + n, message="differs from its digest in "
                                                      "workspaces/index.json"
                                                      + (" (derived from the root's)"
                                                         if prefix + n not in files else ""))
                     for n in sorted(set(digests) | set(recorded))
                     if recorded.get(n) != digests.get(n))
    try:
        found.extend(Finding(path=p, message=m) for p, m in pin_differences(pid, files))
        found.extend(Finding(path=p, message=m)
                     for p, m in catalog.forbidden_imports(pid, files, reserved))
    except CatalogError as exc:
        found.append(Finding(path=prefix, message=str(exc)))
    if prefix + "config.json" in files:
        try:
            config = parse_config(files[prefix + "config.json"], prefix + "config.json")
            found.extend(Finding(path=prefix + "config.json", message=f"{m} ({manifest})")
                         for m in hole_differences(problem, config))
            found.extend(Finding(path=prefix + "config.json", message=f"problem {pid!r}: {m}")
                         for m in axiom_faults(config))
            found.extend(Finding(path=prefix + "config.json",
                                 message=f"{key} {module!r} is not a module of the workspace")
                         for key, module in (("challenge_module", config.challenge_module),
                                             ("solution_module", config.solution_module))
                         if prefix + module.replace(".", "/") + ".lean" not in files)
        except CatalogError as exc:
            found.append(Finding(path=prefix + "config.json", message=str(exc)))
    found.extend(_lean_findings(pid, problem, files))
    if record is not None:
        workspace = {n: files[prefix + n] for n in provenance.STATEMENT_FILES
                     if prefix + n in files}
        current = {pid: (problem.statement_revision, provenance.statement_digest(workspace))}
        found.extend(Finding(path=p, message=m) for p, m in provenance.statement_faults(
            record, current, provenance.PROVENANCE))
    return found


def _lakefile_findings(pid: str, files: Mapping[str, bytes], names: list[str]) -> list[Finding]:
    path = f"workspaces/{pid}/lakefile.toml"
    if path not in files:
        return []
    try:
        table = toml_table(files[path], path)
    except CatalogError as exc:
        return [Finding(path=path, message=str(exc))]
    present = set(names)
    return [Finding(path=path, message=m) for m in lakefile_faults(table, present)]


def _revision(files: Mapping[str, bytes], pid: str) -> int | None:
    try:
        return Problem.model_validate(
            toml_table(files[f"problems/{pid}.toml"], pid)).statement_revision
    except (ValidationError, CatalogError):
        return None  # reported with the manifest


def _set_findings(files: Mapping[str, bytes], ids: list[str]) -> list[Finding]:
    revisions = {pid: rev for pid in ids if (rev := _revision(files, pid)) is not None}
    found: list[Finding] = []
    for path in set_files(files).values():
        try:
            problem_set = parse_set(files[path], path)
        except CatalogError as exc:
            found.append(Finding(path=path, message=str(exc).removeprefix(f"{path}: ")))
            continue
        found.extend(Finding(path=path, message=m) for m in set_faults(
            problem_set, revisions))
    return found


def _table(index: dict[str, Any], key: str) -> dict[str, Any]:
    value = index.get(key)
    return value if isinstance(value, dict) else {}


def validate_catalog(root: Path) -> CatalogReport:
    """Every fault of the benchmark at ``root`` as it stands, each naming its file."""
    root = root.resolve()
    if not root.is_dir():
        raise CatalogError(f"benchmark directory {root} does not exist")
    files = source.tree_files(root, catalog.TRUSTED_PATHS)
    found: list[Finding] = [Finding(path=name, message="missing")
                            for name in catalog.ROOT_PIN_FILES if name not in files]
    if found:
        return CatalogReport(ok=False, benchmark=str(root), problems=(),
                             solution_only_modules=(), findings=tuple(found))
    try:
        reserved = catalog.solution_only_modules(files)
    except CatalogError as exc:
        reserved = ()
        found.append(Finding(path=catalog.BENCHMARK_CONFIG, message=str(exc)))
    try:
        index = strict_json(files.get("workspaces/index.json", b"{}"),
                            "workspaces/index.json")
    except CatalogError as exc:
        index = {}
        found.append(Finding(path="workspaces/index.json", message=str(exc)))
    index = index if isinstance(index, dict) else {}
    problems_index: dict[str, Any] = _table(index, "problems")
    root_index: dict[str, Any] = _table(index, "root")
    config_digest = (catalog.sha256(files[catalog.BENCHMARK_CONFIG])
                     if catalog.BENCHMARK_CONFIG in files else None)
    if root_index.get(catalog.BENCHMARK_CONFIG) != config_digest:
        found.append(Finding(path=catalog.BENCHMARK_CONFIG,
                             message="differs from its digest in workspaces/index.json"))
    set_paths = set(set_files(files).values())
    found.extend(Finding(path=path, message="differs from its digest in workspaces/index.json")
                 for path in sorted(set_paths | {k for k in root_index if k.startswith("sets/")}
                                    | {provenance.PROVENANCE} & (set(files) | set(root_index)))
                 if root_index.get(path) != (catalog.sha256(files[path])
                                             if path in files else None))
    ids = sorted(n.removeprefix("problems/").removesuffix(".toml") for n in files
                 if n.startswith("problems/") and n.endswith(".toml") and n.count("/") == 1)
    workspaces = sorted({n.split("/")[1] for n in files
                         if n.startswith("workspaces/") and n.count("/") >= 2})
    found.extend(Finding(path=f"workspaces/{w}/", message=f"has no problems/{w}.toml")
                 for w in workspaces if w not in ids)
    found.extend(Finding(path="workspaces/index.json", message=f"lists {p!r}, not a problem")
                 for p in sorted(problems_index) if p not in ids)
    record: provenance.Provenance | None = None
    try:
        record = provenance.of_files(files)
    except CatalogError as exc:
        found.append(Finding(path=provenance.PROVENANCE, message=str(exc)))
    names = catalog.workspace_names(files)
    for pid in ids:
        if not PROBLEM_ID.match(pid):
            found.append(Finding(path=f"problems/{pid}.toml", message="invalid problem id"))
            continue
        found.extend(_problem_findings(pid, files, problems_index, reserved,
                                       names.get(pid, []), record))
    found.extend(_set_findings(files, ids))
    return CatalogReport(ok=not found, benchmark=str(root), problems=tuple(ids),
                         solution_only_modules=reserved, findings=tuple(found))
