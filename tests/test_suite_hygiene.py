"""The suite's own structure: test modules share helpers only through support.py.

A test module that imports another one runs that module's import-time work (and, under another
name, a second copy of its state) and ties the two together; conftest.py is pytest's, loaded by
it. ``tests.x`` and ``x`` would be two copies of one module, so helpers are imported by their
bare name.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


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


def test_no_test_module_imports_another_or_conftest() -> None:
    offenders = {path.name: bad for path in sorted(TESTS.glob("*.py"))
                 if (bad := forbidden_imports(path.read_text(encoding="utf-8")))}
    assert offenders == {}, "import shared helpers from support.py instead"


def test_the_check_sees_every_form_of_such_an_import() -> None:
    """Negative control: each way a test module can be reached is caught."""
    for source in ("from test_merge import write_output", "import conftest",
                   "from conftest import REPO", "from tests.conftest import REPO",
                   "from tests.test_report import build", "from tests import test_report",
                   "import tests.support", "def f():\n    from test_process import x\n"):
        assert forbidden_imports(source), source
    assert forbidden_imports("from support import REPO\nimport lean_eval.cli\n"
                             "from testing import x\n") == []
