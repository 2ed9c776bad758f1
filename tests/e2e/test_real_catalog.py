"""The public lean-eval catalog, where a checkout of it is present.

Set ``LEAN_EVAL_REAL_CATALOG=<checkout of leanprover/lean-eval>`` to run; skipped otherwise
(like the ``lean`` marker: nothing here is downloaded). It imports the checkout, requires
``validate-catalog`` to pass, starts and validates every problem, and scores a solved
submission with the stand-in toolchain for a sample that includes every problem with a
Prop-valued instance hole and every problem stated in a ``noncomputable section``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from support import RunEval, make_submission

from lean_eval.benchmark import catalog, starter
from lean_eval.cli import main
from lean_eval.lean.declarations import declarations

REAL = os.environ.get("LEAN_EVAL_REAL_CATALOG")
pytestmark = [
    pytest.mark.skipif(not REAL, reason="LEAN_EVAL_REAL_CATALOG is not set (a checkout of "
                                        "leanprover/lean-eval); real-catalog test not run"),
    pytest.mark.timeout(1800),
]
SAMPLE_OTHERS = 8


def _solved(text: str) -> str:
    """A starter with every ``sorry`` replaced by a term the stand-in accepts (it does not
    check proofs: only statements, kinds and axioms)."""
    return re.sub(r"(?<![\w.'])sorry(?![\w'])", "rfl", text)


def _sample(cat: catalog.Catalog) -> list[str]:
    special: list[str] = []
    for pid, ws in sorted(cat.problems.items()):
        text = ws.trusted["Challenge.lean"].decode("utf-8", errors="replace")
        keywords = {d.name: d.keyword for d in declarations(text)}
        prop_instance = any(h.kind == "theorem" and keywords.get(h.name) == "instance"
                            for h in ws.problem.holes)
        if prop_instance or re.search(r"(?m)^\s*noncomputable section\b", text):
            special.append(pid)
    others = [pid for pid in sorted(cat.problems) if pid not in special]
    step = max(1, len(others) // SAMPLE_OTHERS)
    return special + others[::step][:SAMPLE_OTHERS]


def test_the_real_catalog_imports_validates_starts_and_scores(outside: Path, bwrap: str,
                                                              capsys: pytest.CaptureFixture[str]
                                                              ) -> None:
    assert REAL is not None
    dest = outside / "bench"
    runner = CliRunner()
    imported = runner.invoke(main, ["import-catalog", REAL, str(dest)], catch_exceptions=False)
    assert imported.exit_code == 0, imported.output
    validated = runner.invoke(main, ["validate-catalog", "--benchmark", str(dest)],
                              catch_exceptions=False)
    assert validated.exit_code == 0, validated.output
    cat = catalog.load_catalog(dest, revision=None)
    started = outside / "started"
    for pid in sorted(cat.problems):
        starter.start_problem(cat, pid, started)
    checked = runner.invoke(main, ["validate-submission", str(started), "--benchmark",
                                   str(dest), "--json"], catch_exceptions=False)
    assert checked.exit_code == 0, checked.output[-2000:]
    sample = _sample(cat)
    problems = {pid: {"Submission.lean": _solved(
        cat.problems[pid].starter["Submission.lean"].decode("utf-8"))} for pid in sample}
    run = RunEval(dest, outside)(make_submission(outside, "solved", problems),
                                 extra=("--jobs", "2"))
    verdicts = {pid: run.verdict("solved", pid)["verdict"] for pid in sample}
    with capsys.disabled():
        print(f"\nreal catalog: {len(cat.problems)} problems imported and valid; "
              f"{sum(v == 'accepted' for v in verdicts.values())}/{len(sample)} sampled "
              f"accepted: {verdicts}")
        print(imported.output.splitlines()[-2])
    assert run.code == 0, run.result.output[-2000:]
    assert set(verdicts.values()) == {"accepted"}, verdicts
    assert (run.out / "summary.json").is_file()
