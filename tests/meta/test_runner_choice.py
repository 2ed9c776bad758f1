"""The product scores every pair with the sandboxed runner (lean_eval/sandbox/runner.py).

The runner seam lets tests replay recorded comparator transcripts without a sandbox; a run of
the product must never do that. So: ``SANDBOXED`` is the default of both records that carry a
runner, the package defines no other runner, and no code in it passes a runner other than the
one it was given (``runner=tools.runner``), so no option, setting or environment variable can
choose one.
"""

from __future__ import annotations

import ast
from pathlib import Path

from support import REPO

from lean_eval.sandbox import runner
from lean_eval.scoring import driver, options

PACKAGE = REPO / "lean_eval"


def _trees() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(encoding="utf-8"))) for p in sorted(PACKAGE.rglob("*.py"))]


def test_both_records_default_to_the_sandboxed_runner() -> None:
    assert options.Tools._field_defaults["runner"] is runner.SANDBOXED
    assert driver.DriverSettings._field_defaults["runner"] is runner.SANDBOXED
    assert isinstance(runner.SANDBOXED, runner.SandboxedRunner)


RUNNER_BASES = ("SandboxedRunner", "ComparatorRunner")


def _defines_run(node: ast.ClassDef) -> bool:
    """A ``run`` method whatever its annotations, or a class attribute named ``run``."""
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "run":
            return True
        targets = item.targets if isinstance(item, ast.Assign) else \
            [item.target] if isinstance(item, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "run" for t in targets):
            return True
    return False


def runner_classes(tree: ast.Module) -> list[str]:
    """Every class that could serve as a runner: one with a ``run`` (the protocol is
    structural) or a subclass of the sandboxed runner or of the protocol, however named."""
    return [node.name for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef) and (_defines_run(node) or any(
                ast.unparse(base).rsplit(".", 1)[-1] in RUNNER_BASES for base in node.bases))]


def test_the_runner_check_sees_every_form_of_a_second_runner() -> None:
    """The negative controls of SECURITY.md item 23: each of these is a second runner."""
    forms = {
        "annotated": "class A:\n    def run(self, launch: Launch) -> None: ...\n",
        "any": "class B:\n    def run(self, launch: Any) -> None: ...\n",
        "bare": "class C:\n    def run(self, launch):\n        return None\n",
        "async": "class D:\n    async def run(self, x): ...\n",
        "attribute": "class E:\n    run = staticmethod(print)\n",
        "subclass": "class F(SandboxedRunner):\n    pass\n",
        "qualified": "class G(runner.SandboxedRunner):\n    def go(self): ...\n",
        "protocol": "class H(ComparatorRunner):\n    pass\n",
    }
    for name, source in forms.items():
        assert len(runner_classes(ast.parse(source))) == 1, name
    assert runner_classes(ast.parse("class Z:\n    def running(self): ...\n")) == []


def test_no_other_runner_is_defined_or_passed_in_the_package() -> None:
    runners, passed = [], []
    for path, tree in _trees():
        rel = path.relative_to(REPO).as_posix()
        runners += [f"{rel}:{name}" for name in runner_classes(tree)]
        passed += [f"{rel}: runner={ast.unparse(node.value)}" for node in ast.walk(tree)
                   if isinstance(node, ast.keyword) and node.arg == "runner"]
    assert runners == ["lean_eval/sandbox/runner.py:ComparatorRunner",
                       "lean_eval/sandbox/runner.py:SandboxedRunner"]
    # forwarded, never chosen
    assert passed == ["lean_eval/scoring/pair_settings.py: runner=tools.runner"]
