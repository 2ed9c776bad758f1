"""The properties of a workspace ``lakefile.toml`` that scoring relies on (design §4.2):

- ``defaultTargets`` names only trusted libraries: a plain ``lake build`` never builds
  submitted code;
- the ``Submission`` library's ``globs`` build every submitted module, imported or not;
- ``Challenge``, ``Solution`` and ``Submission`` are declared, and no target (library roots, an
  executable's root, ``testDriver``/``lintDriver``) names a module whose file the workspace lacks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SUBMISSION_GLOBS = ("Submission", "Submission.+")
REQUIRED_LIBRARIES = ("Challenge", "Solution", "Submission")
UNTRUSTED_TARGETS = ("Solution", "Submission")  # building either builds submitted code


def _module_file(src_dir: Any, module: str) -> str:
    base = src_dir.strip("/") + "/" if isinstance(src_dir, str) and src_dir not in ("", ".") else ""
    return base + module.replace(".", "/") + ".lean"


def lakefile_faults(table: Mapping[str, Any], present: set[str]) -> list[str]:
    """How a parsed workspace lakefile breaks the properties above; ``present`` holds the
    workspace's file paths (relative, posix)."""
    faults: list[str] = []
    libs = [t for t in table.get("lean_lib", []) if isinstance(t, dict)]
    exes = [t for t in table.get("lean_exe", []) if isinstance(t, dict)]
    names = {t.get("name") for t in libs + exes}
    faults.extend(f"declares no [[lean_lib]] {required!r}" for required in REQUIRED_LIBRARIES
                  if required not in {t.get("name") for t in libs})
    defaults = table.get("defaultTargets", [])
    if not isinstance(defaults, list):
        faults.append("defaultTargets is not a list")
        defaults = []
    for target in defaults:
        if target in UNTRUSTED_TARGETS:
            faults.append(f"defaultTargets includes {target!r}, which builds submitted code; "
                          "default targets must be trusted code only")
        elif target not in names:
            faults.append(f"defaultTargets names {target!r}, which is not a target")
    for lib in libs:
        name = lib.get("name")
        if name == "Submission":
            globs = lib.get("globs")
            if not isinstance(globs, list) or set(globs) != set(SUBMISSION_GLOBS):
                faults.append(f"[[lean_lib]] 'Submission' must have globs = "
                              f"{list(SUBMISSION_GLOBS)} (has {globs!r})")
        roots = lib.get("roots", [name])
        faults.extend(f"[[lean_lib]] {name!r} root {root!r} has no file "
                      f"{_module_file(lib.get('srcDir'), root)}"
                      for root in (roots if isinstance(roots, list) else [])
                      if isinstance(root, str)
                      and _module_file(lib.get("srcDir"), root) not in present)
    for exe in exes:
        root = exe.get("root", exe.get("name"))
        if isinstance(root, str) and _module_file(exe.get("srcDir"), root) not in present:
            faults.append(f"[[lean_exe]] {exe.get('name')!r} root {root!r} has no file "
                          f"{_module_file(exe.get('srcDir'), root)}")
    for key in ("testDriver", "lintDriver"):
        driver = table.get(key)
        if driver is not None and driver not in names:
            faults.append(f"{key} {driver!r} is not a target of the workspace")
    return faults
