"""export-results names the upstream commit (issue 27 item 1): an imported benchmark's results
name the lean-eval commit it was imported from, never the import's own commit; an import with
no known upstream commit is refused naming the way out; a benchmark that is no import is its
own upstream, as before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result
from support import make_identity, write_output

from lean_eval.cli import main

OWN = "c" * 40
UPSTREAM = "b91d4750" + "0" * 32
META = {"alice": {"user": "alice", "declared_model": "M",
                  "intake": {"kind": "issue", "issue_number": 7},
                  "submission": {"kind": "gist", "repo": "alice/0123abcd", "ref": "a" * 40,
                                 "public": True}}}


def _export(tmp_path: Path, **identity: Any) -> Result:
    out = write_output(tmp_path / "run", [("alice", "two_plus_two")],
                       identity=make_identity(benchmark_commit=OWN, **identity))
    (tmp_path / "meta.json").write_text(json.dumps(META))
    return CliRunner().invoke(main, ["export-results", str(out), "--metadata",
                                     str(tmp_path / "meta.json"), "--results-dir",
                                     str(tmp_path / "results")], catch_exceptions=False)


def _commits(tmp_path: Path) -> list[str]:
    data = json.loads((tmp_path / "results" / "alice.json").read_text())
    return [r["benchmark_commit"] for r in data["results"]]


def test_an_import_names_the_upstream_commit(tmp_path: Path) -> None:
    result = _export(tmp_path, upstream_commit=UPSTREAM, imported=True)
    assert result.exit_code == 0, result.output
    assert _commits(tmp_path) == [UPSTREAM]


def test_a_benchmark_that_is_no_import_is_its_own_upstream(tmp_path: Path) -> None:
    result = _export(tmp_path, upstream_commit=OWN)
    assert result.exit_code == 0, result.output
    assert _commits(tmp_path) == [OWN]


def test_a_verdict_from_before_upstream_commits_names_the_benchmark_commit(
        tmp_path: Path) -> None:
    assert _export(tmp_path).exit_code == 0
    assert _commits(tmp_path) == [OWN]


def test_an_import_without_an_upstream_commit_is_refused_naming_the_way_out(
        tmp_path: Path) -> None:
    result = _export(tmp_path, imported=True)
    assert result.exit_code == 2
    assert "re-import it from a git checkout" in result.output
    assert "--upstream-commit" in result.output
    assert not (tmp_path / "results" / "alice.json").exists()


def test_a_results_dir_at_a_repository_root_or_inside_an_output_is_refused(
        tmp_path: Path) -> None:
    out = write_output(tmp_path / "run", [("alice", "two_plus_two")],
                       identity=make_identity(benchmark_commit=OWN))
    (tmp_path / "meta.json").write_text(json.dumps(META))
    repo = tmp_path / "store"
    (repo / ".git").mkdir(parents=True)
    for target, said in ((repo, "is the root of a git repository"),
                         (out / "results", "is inside the output directory")):
        result = CliRunner().invoke(main, ["export-results", str(out), "--metadata",
                                           str(tmp_path / "meta.json"), "--results-dir",
                                           str(target)], catch_exceptions=False)
        assert result.exit_code == 2 and said in result.output, result.output
    assert list(repo.iterdir()) == [repo / ".git"] and not (out / "results").exists()
    ok = CliRunner().invoke(main, ["export-results", str(out), "--metadata",
                                   str(tmp_path / "meta.json"), "--results-dir",
                                   str(repo / "results")], catch_exceptions=False)
    assert ok.exit_code == 0, ok.output
