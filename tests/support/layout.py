"""Where a test belongs: every test that needs real bubblewrap (the ``bwrap`` fixture, or the
``toolchain`` one whose scenarios run under it) or carries the ``sandbox`` or ``lean`` mark lies
under tests/e2e/, which tests/conftest.py marks ``e2e``; everything else runs in the inner loop
(``-m "not e2e"``) and must never start a sandbox."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from pathlib import Path

from support.places import REPO

E2E = REPO / "tests" / "e2e"
# The conftest fixtures that give real bubblewrap or a toolchain run under it (run_eval and every
# module fixture that needs a sandbox request one of them, so the collected closure names them).
E2E_FIXTURES = frozenset({"bwrap", "toolchain"})
# The same, as a test or fixture of a module names them in its parameters.
E2E_PARAMETERS = E2E_FIXTURES | {"run_eval"}
E2E_MARKS = frozenset({"sandbox", "lean"})


def in_e2e(path: Path) -> bool:
    """Whether ``path`` lies under tests/e2e/."""
    return _dir_in_e2e(path.parent)


@functools.cache
def _dir_in_e2e(directory: Path) -> bool:  # once per directory, not per collected test
    return directory.resolve().is_relative_to(E2E)


def e2e_needs(fixtures: Iterable[str], marks: Iterable[str]) -> list[str]:
    """Why a collected test with these fixtures (their closure) and marks is end to end; empty
    when it is not."""
    return ([f"fixture {name}" for name in sorted(E2E_FIXTURES & set(fixtures))]
            + [f"mark {name}" for name in sorted(E2E_MARKS & set(marks))])


def _mark_names(decorators: list[ast.expr]) -> set[str]:
    found = set()
    for decorator in decorators:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        for node in ast.walk(target):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) \
                    and node.value.attr == "mark":
                found.add(node.attr)
    return found


def _is_fixture(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Attribute) and target.attr == "fixture":
            return True
    return False


def e2e_uses(source: str) -> list[str]:
    """What in a test module's ``source`` needs bubblewrap: a test or fixture taking one of
    ``E2E_PARAMETERS``, or a ``sandbox``/``lean`` mark (on a test or as ``pytestmark``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                node.name.startswith("test") or _is_fixture(node)):
            names = {a.arg for a in (*node.args.posonlyargs, *node.args.args,
                                     *node.args.kwonlyargs)}
            found += [f"line {node.lineno}: {node.name} takes {name}"
                      for name in sorted(names & E2E_PARAMETERS)]
            found += [f"line {node.lineno}: {node.name} is marked {mark}"
                      for mark in sorted(_mark_names(node.decorator_list) & E2E_MARKS)]
        elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            found += [f"line {node.lineno}: pytestmark {mark}"
                      for mark in sorted(_mark_names([node.value]) & E2E_MARKS)]
    return found
