"""The suite's own structure: test modules share helpers only through the support package, and a
CLI test lets an unexpected exception fail it.

A test module that imports another one runs that module's import-time work (and, under another
name, a second copy of its state) and ties the two together; conftest.py is pytest's, loaded by
it. ``tests.x`` and ``x`` would be two copies of one module, so helpers are imported by their
bare name. ``CliRunner.invoke`` swallows exceptions unless told not to: a traceback the CLI
should never print would pass as an exit code of 1.

The tree follows the package: unit and seam tests of a subpackage lie in tests/<subpackage>/,
every test that needs real bubblewrap in tests/e2e/ (marked ``e2e`` by conftest.py, left out of
the inner loop ``-m "not e2e"``), checks of the repository itself in tests/meta/; basenames are
unique, as pytest's default import mode needs.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

from support import E2E, REPO, e2e_needs, e2e_uses, in_e2e

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


# --- the tree: tests/<subpackage>/, tests/e2e/, tests/meta/ ------------------------------------

OTHER_DIRS = ("api", "e2e", "meta")  # beside one directory per subpackage of lean_eval


def _test_modules() -> list[Path]:
    return [p for p in _suite_files() if p.name.startswith("test_")]


def test_every_test_module_lies_in_a_subpackage_e2e_or_meta_directory_with_a_unique_name() -> None:
    subpackages = {p.parent.name for p in (REPO / "lean_eval").glob("*/__init__.py")}
    allowed = subpackages | set(OTHER_DIRS)
    modules = _test_modules()
    assert len(modules) > 50
    misplaced = [str(p.relative_to(TESTS)) for p in modules
                 if len(p.relative_to(TESTS).parts) != 2 or p.parent.name not in allowed]
    assert misplaced == [], f"put each in tests/<one of {sorted(allowed)}>/"
    names = [p.name for p in modules]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []


def test_only_tests_under_e2e_need_bubblewrap() -> None:
    offenders = {str(p.relative_to(TESTS)): bad for p in _test_modules()
                 if not in_e2e(p) and (bad := e2e_uses(p.read_text(encoding="utf-8")))}
    assert offenders == {}, "move these tests to tests/e2e/ (the inner loop starts no sandbox)"
    assert any(e2e_uses(p.read_text(encoding="utf-8")) for p in E2E.glob("test_*.py"))


def test_the_e2e_checks_see_every_way_a_test_needs_bubblewrap() -> None:
    """Negative control: each way a test module or a collected test can need a sandbox is
    caught, and nothing else is."""
    for source in ("def test_x(bwrap): pass", "def test_x(run_eval, outside): pass",
                   "def test_x(toolchain): pass",
                   "import pytest\n@pytest.fixture\ndef made(bwrap): pass",
                   "import pytest\npytestmark = pytest.mark.sandbox",
                   "import pytest\npytestmark = [pytest.mark.skipif(True, reason='x'), "
                   "pytest.mark.lean]",
                   "import pytest\n@pytest.mark.sandbox\ndef test_x(): pass"):
        assert e2e_uses(source), source
    assert e2e_uses("def helper(bwrap): pass\ndef test_x(tmp_path, outside): pass\n"
                    "import pytest\n@pytest.mark.slow\ndef test_y(): pass") == []
    assert e2e_needs({"run_eval", "bwrap", "toolchain", "outside"}, ["slow", "lean"]) == [
        "fixture bwrap", "fixture toolchain", "mark lean"]
    assert e2e_needs({"outside", "tmp_path"}, ["slow", "parametrize"]) == []
    assert in_e2e(E2E / "test_x.py") and not in_e2e(TESTS / "scoring" / "test_x.py")
