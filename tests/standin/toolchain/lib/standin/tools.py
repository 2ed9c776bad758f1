"""bin/lean, bin/leanexport and the checkers (leanchecker, nanoda_bin and the `--paranoid` ones:
leanchecker-paranoid, lean4lean, con-leche, con-ron) of the stand-in toolchain.

All of them run inside Lake's sandbox; standard library only.
"""

from __future__ import annotations

import json
import os
import sys

from standin import elab

VERSION = "Lean (version 4.35.0, x86_64-unknown-linux-gnu, stand-in toolchain)"


def _err(msg: str) -> None:
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def _search_path(value: str | None) -> list[str]:
    return [p for p in (value or "").split(":") if p]


# ---------------------------------------------------------------------------------------------
# lean


def lean_main(argv: list[str]) -> int:
    """`lean [--search-path DIRS] [-o OLEAN] FILE.lean`: elaborate one file (cwd = package root).

    Runs the file's `-- standin-io:` lines first (with this process's environment, cwd and
    stdio: the model of `#eval`/`initialize` IO), then fails on `-- standin: build-error`,
    then writes the olean.
    """
    if argv == ["--version"]:
        print(VERSION)
        return 0
    search: list[str] = []
    out = None
    files: list[str] = []
    it = iter(argv)
    for a in it:
        if a == "--search-path":
            search += _search_path(next(it, ""))
        elif a == "-o":
            out = next(it, None)
        elif a.startswith("-"):
            _err(f"lean: unknown option '{a}'")
            return 1
        else:
            files.append(a)
    if len(files) != 1:
        _err("usage: lean [--search-path DIRS] [-o OLEAN] FILE.lean")
        return 1
    path = files[0]
    module = elab.module_of_file(os.path.relpath(path))
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        _err(f"{path}:1:0: error: {e}")
        return 1
    directives = elab.parse_directives(text)
    if directives["io"]:
        import subprocess  # only here: a startup cost for every other module
    for cmd in directives["io"]:
        sys.stdout.flush()
        sys.stderr.flush()
        subprocess.run(["/bin/sh", "-c", cmd], check=False)
    if directives["build_error"]:
        _err(f"{path}:1:0: error: build failed (-- standin: build-error)")
        return 1
    imports = elab.parse_imports(text)
    try:
        env, _, oleans = elab.load_environment(imports, search)
        decls = elab.elaborate(module, text, env,
                               [n for o in oleans for n in o.get("notations", [])])
    except elab.ElabError as e:
        _err(f"{path}:{e.line}:0: error: {e}")
        return 1
    except (OSError, ValueError) as e:
        _err(f"{path}:1:0: error: {e}")
        return 1
    if out:
        olean = {
            "format": elab.OLEAN_FORMAT,
            "module": module,
            "file": path,
            "imports": imports,
            "decls": decls,
            "notations": elab.exported_notations(text),
            "kernel_reject": directives["kernel_reject"],
        }
        os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
        with open(out, "w", encoding="utf-8") as f:
            json.dump(olean, f, indent=1, ensure_ascii=False)
    return 0


# ---------------------------------------------------------------------------------------------
# leanexport


def leanexport_main(argv: list[str]) -> int:
    """`leanexport MODULE [-- NAME...]`: NDJSON of the named constants and everything they
    refer to, read from the oleans on LEAN_PATH. First line: a header with the module,
    the requested names and the `kernel-reject` directives of the module's import closure.
    """
    if "--" in argv:
        i = argv.index("--")
        head, names = argv[:i], argv[i + 1 :]
    else:
        head, names = argv, []
    if len(head) != 1:
        _err("usage: leanexport MODULE [-- NAME...]")
        return 1
    module = head[0]
    search = _search_path(os.environ.get("LEAN_PATH"))
    try:
        if elab.find_olean(module, search) is None:
            _err(f"leanexport: object file for module '{module}' not found on LEAN_PATH")
            return 1
        env, _, oleans = elab.load_environment([module], search)
    except (OSError, ValueError, elab.ElabError) as e:
        _err(f"leanexport: {e}")
        return 1
    kernel_reject: list[str] = []
    for o in oleans:
        kernel_reject += [k for k in o.get("kernel_reject", []) if k not in kernel_reject]
    out = sys.stdout
    header = {"format": elab.EXPORT_FORMAT, "module": module, "names": names,
              "kernel_reject": kernel_reject}
    out.write(json.dumps(header, ensure_ascii=False) + "\n")
    done: set[str] = set()
    stack = list(reversed(names))
    while stack:  # depth-first, pre-order, requested names first
        name = stack.pop()
        if name in done:
            continue
        done.add(name)
        if name in env:
            c = env[name]
        elif name in elab.BUILTIN_AXIOMS:
            c = elab.builtin_constant(name)
        else:
            continue
        rec = {k: c[k] for k in ("name", "kind", "type", "value", "refs", "module")}
        out.write(json.dumps(rec, ensure_ascii=False) + "\n")
        stack.extend(reversed(c["refs"]))
    out.flush()
    return 0


def read_export(path: str) -> tuple[dict, list[dict]]:
    """(header, constants) of an export file; raises ValueError when it is malformed."""
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    if not lines or not isinstance(lines[0], dict) or lines[0].get("format") != elab.EXPORT_FORMAT:
        raise ValueError("not a stand-in export (missing header)")
    consts = lines[1:]
    for c in consts:
        if not isinstance(c, dict) or not all(
            isinstance(c.get(k), str) for k in ("name", "kind", "type", "value")
        ):
            raise ValueError(f"malformed constant record: {c!r}")
    return lines[0], consts


# ---------------------------------------------------------------------------------------------
# kernels


def _check(kernel: str, export_path: str, permitted: list[str] | None) -> int:
    try:
        header, consts = read_export(export_path)
    except (OSError, ValueError) as e:
        _err(f"{kernel}: cannot read export '{export_path}': {e}")
        return 1
    if kernel in header.get("kernel_reject", []):
        _err(f"{kernel}: declaration failed to type check (-- standin: kernel-reject {kernel})")
        return 1
    if permitted is not None:
        for c in consts:
            if c["kind"] == "axiom" and c["name"] not in permitted:
                _err(f"{kernel}: unpermitted axiom '{c['name']}'")
                return 1
    return 0


def leanchecker_main(argv: list[str]) -> int:
    """`leanchecker [--silent] --from-export FILE`: the `Lean default` kernel."""
    if "--from-export" not in argv or argv.index("--from-export") + 1 >= len(argv):
        _err("usage: leanchecker [--silent] --from-export FILE")
        return 1
    path = argv[argv.index("--from-export") + 1]
    return _check("Lean default", path, None)


def leanchecker_paranoid_main(argv: list[str]) -> int:
    """`leanchecker-paranoid [--silent] --from-export FILE`: the `Lean paranoid` checker."""
    if "--from-export" not in argv or argv.index("--from-export") + 1 >= len(argv):
        _err("usage: leanchecker-paranoid [--silent] --from-export FILE")
        return 1
    path = argv[argv.index("--from-export") + 1]
    return _check("Lean paranoid", path, None)


def export_checker_main(kernel: str, program: str, argv: list[str]) -> int:
    """`lean4lean FILE`, `con-leche FILE`, `con-ron FILE`: a bundled checker that is handed the
    export path, named `kernel` in Lake's lines and in `kernel-reject` directives."""
    if len(argv) != 1:
        _err(f"usage: {program} FILE")
        return 1
    return _check(kernel, argv[0], None)


NANODA_KEYS = {
    "export_file_path": str,
    "nat_extension": bool,
    "num_threads": int,
    "permitted_axioms": list,
    "string_extension": bool,
    "unpermitted_axiom_hard_error": bool,
    "use_stdin": bool,
}


def nanoda_main(argv: list[str]) -> int:
    """`nanoda_bin CONFIG.json`: the `nanoda` kernel. 0 accept, 1 error or rejection."""
    if len(argv) != 1:
        _err("usage: nanoda_bin CONFIG.json")
        return 1
    try:
        with open(argv[0], encoding="utf-8") as f:
            cfg = json.load(f)
    except (OSError, ValueError) as e:
        _err(f"nanoda: cannot read config '{argv[0]}': {e}")
        return 1
    if not isinstance(cfg, dict):
        _err("nanoda: config is not an object")
        return 1
    for key, typ in NANODA_KEYS.items():
        if not isinstance(cfg.get(key), typ):
            _err(f"nanoda: config key '{key}' missing or not a {typ.__name__}")
            return 1
    path = "/dev/stdin" if cfg["use_stdin"] else cfg["export_file_path"]
    permitted = cfg["permitted_axioms"] if cfg["unpermitted_axiom_hard_error"] else None
    return _check("nanoda", path, permitted)
