"""Every upstream catalog commit the public results store names imports (issue 27 item 2),
where local copies of the public repositories are present.

Set ``LEAN_EVAL_REAL_HISTORY=<git dir of leanprover/lean-eval>`` and
``LEAN_EVAL_REAL_RESULTS=<results/ of leanprover/lean-eval-submissions>`` to run; skipped
otherwise (nothing is downloaded). ``benchmarks/historical_imports.py`` does the work and prints
the counts docs/benchmarks.md records.
"""

from __future__ import annotations

import json
import os
import subprocess  # noqa: TID251 - the benchmark script runs as a child, as a maintainer runs it
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HISTORY = os.environ.get("LEAN_EVAL_REAL_HISTORY")
RESULTS = os.environ.get("LEAN_EVAL_REAL_RESULTS")
pytestmark = [
    pytest.mark.skipif(not (HISTORY and RESULTS),
                       reason="LEAN_EVAL_REAL_HISTORY and LEAN_EVAL_REAL_RESULTS are not set "
                              "(local copies of the public repositories); not run"),
    pytest.mark.timeout(3600),
]


def test_every_commit_the_public_store_names_imports_listing_its_records(
        outside: Path) -> None:
    report_path = outside / "history.json"
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "historical_imports.py"), "--scratch",
         str(outside), "--json", str(report_path)], capture_output=True, text=True,
        timeout=3000, check=False, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(report_path.read_text())
    refused = {c: r["error"] for c, r in report.items() if not r["imported"]}
    assert refused == {}
    assert {c: r["unlisted"] for c, r in report.items() if r["unlisted"]} == {}
