"""The suite's own structure: test modules share helpers only through the support package, and a
CLI test lets an unexpected exception fail it.

A test module that imports another one runs that module's import-time work (and, under another
name, a second copy of its state) and ties the two together; conftest.py is pytest's, loaded by
it. ``tests.x`` and ``x`` would be two copies of one module, so helpers are imported by their
bare name. ``CliRunner.invoke`` swallows exceptions unless told not to: a traceback the CLI
should never print would pass as an exit code of 1.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _suite_files() -> list[Path]:
    """The suite's Python files (tests, helpers, scripts such as transcripts/record.py); the
    stand-in toolchain is a program of its own."""
    return sorted(p for p in TESTS.rglob("*.py") if "standin" not in p.relative_to(TESTS).parts)


def _is_test_module(name: str) -> bool:
    return name == "conftest" or name.startswith("test_")


def forbidden_imports(source: str) -> list[str]:
    """Each import in ``source`` of a test module, of conftest, or of anything as ``tests.x``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
            if node.module == "tests":
                names = [f"tests.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            head, _, rest = name.partition(".")
            if _is_test_module(head) or (head == "tests" and rest):
                found.append(f"line {node.lineno}: {name}")
    return found


def _offenders(rule: Callable[[str], list[str]]) -> dict[str, list[str]]:
    """What ``rule`` finds in each file of the suite, by file (files where it finds nothing left
    out)."""
    return {str(path.relative_to(TESTS)): bad for path in _suite_files()
            if (bad := rule(path.read_text(encoding="utf-8")))}


def test_no_test_module_imports_another_or_conftest() -> None:
    assert _offenders(forbidden_imports) == {}, "import shared helpers from support instead"


def test_the_check_sees_every_form_of_such_an_import() -> None:
    """Negative control: each way a test module can be reached is caught."""
    for source in ("from test_merge import write_output", "import conftest",
                   "from conftest import REPO", "from tests.conftest import REPO",
                   "from tests.test_report import build", "from tests import test_report",
                   "import tests.support", "def f():\n    from test_process import x\n"):
        assert forbidden_imports(source), source
    assert forbidden_imports("from support import REPO\nimport lean_eval.cli\n"
                             "from testing import x\n") == []


def swallowing_invokes(source: str) -> list[str]:
    """Each ``.invoke(...)`` in ``source`` that does not pass ``catch_exceptions=False``, unless it
    passes ``catch_exceptions=True`` under a comment saying why (a test about an exception)."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "invoke"):
            continue
        given = {k.arg: k.value for k in node.keywords}
        value = given.get("catch_exceptions")
        if isinstance(value, ast.Constant) and value.value is False:
            continue
        above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
        if isinstance(value, ast.Constant) and value.value is True and above.startswith("#"):
            continue
        found.append(f"line {node.lineno}")
    return found


def test_every_cli_invocation_lets_exceptions_through() -> None:
    assert _offenders(swallowing_invokes) == {}, (
        "pass catch_exceptions=False (or True under a comment saying why)")


def test_the_invoke_check_sees_a_swallowing_call() -> None:
    """Negative control."""
    assert swallowing_invokes("CliRunner().invoke(main, [])") == ["line 1"]
    assert swallowing_invokes("CliRunner().invoke(main, [], catch_exceptions=True)") == ["line 1"]
    assert swallowing_invokes("r.invoke(main, ['x'],\n         catch_exceptions=False)") == []
    assert swallowing_invokes("# about an exception: why\n"
                              "r.invoke(main, [], catch_exceptions=True)") == []
