"""``lean-eval test [WORKSPACE]``: the driver on one workspace as it stands."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner
from support import BWRAP_FLOOR, STANDIN, correct

from lean_eval.cli import main


def _workspace(bench_copy: Path, outside: Path, submission: str) -> Path:
    ws = outside / "ws"
    shutil.copytree(bench_copy / "workspaces" / "two_plus_two", ws)
    (ws / "Submission.lean").write_text(submission)
    return ws


def test_accepts_a_correct_workspace(bench_copy: Path, outside: Path, bwrap: str) -> None:
    ws = _workspace(bench_copy, outside, correct("two_plus_two"))
    result = CliRunner().invoke(main, ["test", str(ws), "--toolchain", str(STANDIN), "--json",
                                       "--allow-bwrap-version", BWRAP_FLOOR],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["verdict"], data["reason"]["code"]) == ("accepted", "accepted")
    assert [c["name"] for c in data["checkers"]] == ["nanoda", "Lean default"]


def test_rejects_sorry_and_exits_one(bench_copy: Path, outside: Path, bwrap: str) -> None:
    ws = _workspace(bench_copy, outside, (bench_copy / "workspaces" / "two_plus_two" /
                                          "Submission.lean").read_text())
    result = CliRunner().invoke(main, ["test", str(ws), "--toolchain", str(STANDIN),
                                       "--allow-bwrap-version", BWRAP_FLOOR],
                                catch_exceptions=False)
    assert result.exit_code == 1
    assert "rejected (illegal_axiom)" in result.output
