"""``lean-eval test [WORKSPACE]`` on a directory that is no workspace: a setup failure. The
command on real workspaces is in tests/e2e/test_cli_test_command.py.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from support import STANDIN

from lean_eval.cli import main


def test_not_a_workspace_is_a_setup_failure(outside: Path) -> None:
    result = CliRunner().invoke(main, ["test", str(outside), "--toolchain", str(STANDIN)],
                                catch_exceptions=False)
    assert result.exit_code == 2
    assert "has no config.json" in result.output
