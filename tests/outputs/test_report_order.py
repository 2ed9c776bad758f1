"""Markdown leads with the matrix (design §5.5 "Reports"), after a partial merge too."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from support import shards_of

from lean_eval.cli import main


def test_markdown_of_a_partial_merge_leads_with_the_matrix(tmp_path: Path) -> None:
    parts = shards_of(tmp_path, 3)
    merged = CliRunner().invoke(main, ["merge", str(parts[0]), str(parts[2]), "--out",
                                       str(tmp_path / "m")], catch_exceptions=False)
    assert merged.exit_code == 1, merged.output  # shard 2/3 is missing
    text = CliRunner().invoke(main, ["report", str(tmp_path / "m"), "--format", "markdown"],
                              catch_exceptions=False).output
    lines = text.splitlines()
    headings = [line for line in lines if line.startswith("#")]
    assert headings[0] == "## lean-eval results"
    assert headings[1] == "### Not scored", headings  # after the matrix, not before it
    matrix = lines.index(next(line for line in lines if line.startswith("| submission |")))
    assert matrix < lines.index("### Not scored") < lines.index(next(
        line for line in lines if line.startswith("### Failures")))
    assert "not scored (missing shard(s) 2/3)" in lines[2]  # the total still says so first
