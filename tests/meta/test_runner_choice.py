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


def test_no_other_runner_is_defined_or_passed_in_the_package() -> None:
    runners, passed = [], []
    for path, tree in _trees():
        rel = path.relative_to(REPO).as_posix()
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(f, ast.FunctionDef) and f.name == "run"
                    and any(a.annotation is not None and "Launch" in ast.unparse(a.annotation)
                            for a in f.args.args) for f in node.body):
                runners.append(f"{rel}:{node.name}")
            if isinstance(node, ast.keyword) and node.arg == "runner":
                passed.append(f"{rel}: runner={ast.unparse(node.value)}")
    assert runners == ["lean_eval/sandbox/runner.py:ComparatorRunner",
                       "lean_eval/sandbox/runner.py:SandboxedRunner"]
    # forwarded, never chosen
    assert passed == ["lean_eval/scoring/pair_settings.py: runner=tools.runner"]
