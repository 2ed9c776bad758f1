"""bin/lake of the stand-in toolchain: `comparator` (outer) and `build`/`env` (inside the sandbox)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from standin import elab

VERSION = "Lake version 5.0.0-standin (Lean version 4.35.0)"
SYSROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
BUILD_DIR = os.path.join(".lake", "build", "lib", "lean")
_MODULE_RE = re.compile(r"^[^\W\d][\w'!?]*(?:\.[^\W\d][\w'!?]*)*$")


def _err(msg: str) -> None:
    sys.stderr.write(f"error: {msg}\n")
    sys.stderr.flush()


def main(argv: list[str]) -> int:
    if argv and argv[0] == "comparator":
        from standin import comparator

        return comparator.main(argv[1:])
    if argv and argv[0] == "build":
        return build(argv[1:])
    if argv and argv[0] == "env":
        return env(argv[1:])
    if argv in (["--version"], ["-V"]):
        print(VERSION)
        return 0
    _err(f"unknown command '{' '.join(argv[:1])}' (the stand-in has comparator, build, env)")
    return 1


# ---------------------------------------------------------------------------------------------
# lake env: the resolve step


def env(argv: list[str]) -> int:
    """`lake env [CMD ARGS...]`: load `lake-manifest.json` (the model of dependency
    resolution: nothing is fetched), then run CMD with inherited stdio."""
    try:
        with open("lake-manifest.json", encoding="utf-8") as f:
            manifest = json.load(f)
        if not isinstance(manifest, dict):
            raise ValueError("expected a JSON object")
    except (OSError, ValueError) as e:
        _err(f"lake-manifest.json: {e}")
        return 1
    if not argv:
        print(f"LAKE={os.path.join(SYSROOT, 'bin', 'lake')}")
        print(f"LEAN_SYSROOT={SYSROOT}")
        print(f"LEAN_PATH={os.path.abspath(BUILD_DIR)}")
        return 0
    sys.stdout.flush()
    try:
        return subprocess.run(argv, check=False).returncode
    except OSError as e:
        _err(f"could not run '{argv[0]}': {e}")
        return 1


# ---------------------------------------------------------------------------------------------
# lake build


class BuildError(Exception):
    pass


def module_file(root: str, module: str) -> str:
    return os.path.join(root, elab.module_path(module) + ".lean")


def project_import(root: str, importer: str, module: str) -> bool:
    """Whether `import module` names a file of this package. A module whose first component
    is neither a file nor a directory here is a dependency (Mathlib, ...): not modelled."""
    if os.path.isfile(module_file(root, module)):
        return True
    first = module.split(".")[0]
    if os.path.exists(os.path.join(root, first + ".lean")) or os.path.isdir(os.path.join(root, first)):
        raise BuildError(f"{importer}: unknown module '{module}'")
    return False


def submitted_modules(root: str) -> list[str]:
    """Submission/**/*.lean, sorted by path (symbolic links are not followed)."""
    mods = []
    base = os.path.join(root, "Submission")
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        for fn in sorted(filenames):
            full = os.path.join(dirpath, fn)
            if fn.endswith(".lean") and os.path.isfile(full) and not os.path.islink(full):
                mods.append(elab.module_of_file(os.path.relpath(full, root)))
    return mods


def build_order(root: str, target: str) -> list[str]:
    """Dependencies first. When the import closure of `target` contains `Submission`, every
    file of Submission/ is built too (before `target`'s closure), so every submitted file is
    elaborated during the Solution build even when nothing imports it."""
    order: list[str] = []
    state: dict[str, str] = {}

    def visit(module: str, chain: list[str]) -> None:
        if state.get(module) == "done":
            return
        if state.get(module) == "active":
            raise BuildError("import cycle: " + " -> ".join([*chain, module]))
        state[module] = "active"
        path = module_file(root, module)
        try:
            with open(path, encoding="utf-8") as f:
                imports = elab.parse_imports(f.read())
        except (OSError, UnicodeDecodeError) as e:
            raise BuildError(f"{os.path.relpath(path, root)}: {e}") from None
        rel = os.path.relpath(path, root)
        for imp in imports:
            if project_import(root, rel, imp):
                visit(imp, [*chain, module])
        state[module] = "done"
        order.append(module)

    visit(target, [])
    if "Submission" in order:
        closure = list(order)
        order.clear()
        state.clear()
        for m in [*submitted_modules(root), *closure]:
            visit(m, [])
    return order


def build(argv: list[str]) -> int:
    """`lake build MODULE`: run `<sysroot>/bin/lean` on every module of the build, writing
    `.lake/build/lib/lean/<Module>.olean`. Nothing is cached: every module is rebuilt."""
    if len(argv) != 1 or not _MODULE_RE.match(argv[0]):
        _err("usage (stand-in): lake build MODULE")
        return 1
    root = os.getcwd()
    target = argv[0]
    if not os.path.isfile(module_file(root, target)):
        _err(f"unknown target '{target}'")
        return 1
    try:
        order = build_order(root, target)
    except BuildError as e:
        _err(str(e))
        _err("build failed")
        return 1
    out_dir = os.path.join(root, BUILD_DIR)
    lean = os.path.join(SYSROOT, "bin", "lean")
    for module in order:
        olean = os.path.join(out_dir, elab.module_path(module) + ".olean")
        src = os.path.relpath(module_file(root, module), root)
        sys.stdout.flush()
        rc = subprocess.run(
            [lean, "--search-path", out_dir, "-o", olean, src], check=False
        ).returncode
        if rc != 0:
            _err(f"{module}: lean exited with code {rc}")
            _err("build failed")
            return 1
    return 0
