"""``lean-eval test [WORKSPACE]`` on a directory that is no workspace: a setup failure. The
command on real workspaces is in tests/e2e/test_cli_test_command.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from support import REPO, STANDIN

from lean_eval.cli import main


def test_not_a_workspace_is_a_setup_failure(outside: Path) -> None:
    result = CliRunner().invoke(main, ["test", str(outside), "--toolchain", str(STANDIN)],
                                catch_exceptions=False)
    assert result.exit_code == 2
    assert "has no config.json" in result.output


def test_a_benchmark_checkout_gets_the_workspace_to_pass_and_help_says_exit_2(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    result = CliRunner().invoke(main, ["test", "--toolchain", str(STANDIN)],
                                catch_exceptions=False)
    assert result.exit_code == 2
    assert "e.g. `lean-eval test workspaces/add_comm_explicit`" in result.stderr
    helped = CliRunner().invoke(main, ["test", "--help"], catch_exceptions=False)
    assert "2 when it cannot run" in " ".join(helped.output.split())
