"""The package's layers (docs/design.md "Layers"), read from its source and from pyproject.toml.

``lint-imports`` enforces the layers contract; these tests keep what it cannot see on its own:
the whole import graph (function-level and ``TYPE_CHECKING`` imports included) has no cycle,
a function-level import never reaches up or sideways (it would hide a cycle rather than break
it), every module has a layer, and the contract really fails on an upward import. The
command line (``lean_eval/cli/``) counts as one module: its own structure is its business.
"""

from __future__ import annotations

import ast
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from support import REPO

from lean_eval.supervise import process

PACKAGE = "lean_eval"
CLI = "lean_eval.cli"


def _modules(root: Path) -> dict[str, Path]:
    """Every module of the package under ``root`` by dotted name (a package by its own name)."""
    found = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _unit(name: str) -> str:
    """The node a module counts as: the command line is one."""
    return CLI if name == CLI or name.startswith(CLI + ".") else name


def _inside_function(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return True
    return False


def _imports(name: str, path: Path, modules: dict[str, Path]
             ) -> Iterator[tuple[str, int, bool]]:
    """(imported module, line, inside a function) for each lean_eval import of ``name``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def nearest(dotted: str) -> str | None:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # ``from a import b``: module a.b when there is one, else a itself
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                       for alias in node.names]
        for target in targets:
            found = nearest(target) if target.split(".")[0] == PACKAGE else None
            if found is not None and found != name:
                yield found, node.lineno, _inside_function(node, parents)


def _layers(root: Path) -> list[list[str]]:
    """The layers contract of ``root``'s pyproject.toml, top first, as dotted module names."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"]
                   if c["type"] == "layers"]
    assert contract["containers"] == [PACKAGE] and contract["exhaustive"] is True
    return [[f"{PACKAGE}.{part.strip()}" for part in layer.replace("|", ":").split(":")]
            for layer in contract["layers"]]


def _rank(layers: list[list[str]], name: str) -> int:
    """The layer of module ``name`` (0: the top), by the layer entry that holds it."""
    for number, layer in enumerate(layers):
        if any(name == entry or name.startswith(entry + ".") for entry in layer):
            return number
    raise AssertionError(f"{name} has no layer in pyproject.toml's layers contract")


def _graph(root: Path) -> dict[str, set[str]]:
    modules = _modules(root)
    graph: dict[str, set[str]] = {_unit(m): set() for m in modules}
    for name, path in modules.items():
        for target, _, _ in _imports(name, path, modules):
            if _unit(target) != _unit(name):
                graph[_unit(name)].add(_unit(target))
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_the_import_graph_has_no_cycle() -> None:
    graph = _graph(REPO)
    assert "lean_eval.records.verdict" in graph and CLI in graph
    assert _cycles(graph) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    # negative control: the checker itself sees a loop, and only the loop
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_every_module_has_a_layer() -> None:
    layers = _layers(REPO)
    for name in _modules(REPO):
        if name != PACKAGE:
            _rank(layers, name)


def test_function_level_imports_only_reach_down() -> None:
    layers = _layers(REPO)
    modules = _modules(REPO)
    upward = []
    for name, path in modules.items():
        if name == PACKAGE:
            continue
        for target, line, in_function in _imports(name, path, modules):
            if not in_function or _unit(target) == _unit(name) or target == PACKAGE:
                continue
            if _rank(layers, target) <= _rank(layers, name):
                upward.append(f"{path.relative_to(REPO)}:{line}: {name} -> {target}")
    assert upward == []


def _lint_imports(root: Path) -> process.Outcome:
    # import-linter comes with the dev extra only; the inner loop (`pytest -m "not e2e"`) may
    # run where just the test extra is installed: skip, saying so, rather than fail
    pytest.importorskip("importlinter", reason="import-linter is not installed (it comes with "
                        "the dev extra: pip install -e '.[dev]'); `lint-imports` checks the "
                        "contracts where it is")
    code = "from importlinter.cli import lint_imports_command\nlint_imports_command()\n"
    return process.run_capture(
        (sys.executable, "-c", code, "--no-cache"),
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(root)},
        cwd=root, timeout=120)


def _copy(into: Path) -> Path:
    shutil.copytree(REPO / PACKAGE, into / PACKAGE,
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(REPO / "pyproject.toml", into / "pyproject.toml")
    return into


def test_the_layers_contract_holds() -> None:
    done = _lint_imports(REPO)
    assert done.returncode == 0, done.stdout.decode(errors="replace")[-3000:]
    assert b"0 broken" in done.stdout


def test_the_layers_contract_fails_on_an_upward_import(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    with (root / PACKAGE / "errors.py").open("a", encoding="utf-8") as errors:
        errors.write("\nimport lean_eval.cli  # a model reaching up to the command line\n")
    done = _lint_imports(root)
    text = done.stdout.decode(errors="replace")
    assert done.returncode != 0, text[-3000:]
    assert "lean_eval.errors is not allowed to import lean_eval.cli" in text
    # the AST walk sees the same import, and the cycle it closes
    assert any(CLI in cycle and "lean_eval.errors" in cycle for cycle in _cycles(_graph(root)))


def test_the_intake_boundary_fails_when_intake_imports_supervise(tmp_path: Path) -> None:
    # The layers allow it (supervise sits below intake); only the forbidden contract that
    # states intake's trust boundary refuses it.
    root = _copy(tmp_path)
    with (root / PACKAGE / "intake" / "bounds.py").open("a", encoding="utf-8") as bounds:
        bounds.write("\nfrom lean_eval.supervise import process  # a reader starting processes\n")
    done = _lint_imports(root)
    text = done.stdout.decode(errors="replace")
    assert done.returncode != 0, text[-3000:]
    contract = "intake reads untrusted bytes in memory: it starts no process and takes no lock"
    assert f"{contract} BROKEN" in text
    assert "lean_eval.intake is not allowed to import lean_eval.supervise" in text
    assert "lean_eval.intake.bounds -> lean_eval.supervise.process" in text
    assert "lean_eval layers KEPT" in text
