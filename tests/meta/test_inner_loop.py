"""The documented inner loop (`pytest -m "not e2e"`) passes where only the test extra is
installed: a test needing a dev-only tool skips, saying which extra brings it (issue 32)."""

from __future__ import annotations

import sys
from pathlib import Path

from support import REPO

from lean_eval.supervise import process

# Loaded by the child pytest with -p: import-linter, as where only '.[test]' is installed.
_WITHOUT_IMPORT_LINTER = """
import sys
sys.modules["importlinter"] = None  # `import importlinter` now raises ImportError
"""


def test_the_layer_tests_skip_with_a_reason_without_import_linter(tmp_path: Path) -> None:
    (tmp_path / "no_import_linter.py").write_text(_WITHOUT_IMPORT_LINTER, encoding="utf-8")
    done = process.run_capture(
        (sys.executable, "-m", "pytest", "tests/meta/test_layers.py", "-k", "contract or boundary",
         "-p", "no_import_linter", "-p", "no:xdist", "-p", "no:cacheprovider", "-q", "-rs",
         "-m", "not e2e"),
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path), "LANG": "C.UTF-8"},
        cwd=REPO, timeout=170)
    text = done.stdout.decode(errors="replace")
    assert done.returncode == 0, text[-3000:]
    assert "3 skipped" in text and "failed" not in text, text[-3000:]
    assert "import-linter is not installed (it comes with the dev extra" in text, text[-3000:]
