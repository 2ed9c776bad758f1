"""An import names its upstream all the way to the results store (issue 27 item 1): imported
from a git checkout, the catalog's provenance.json holds the checkout's remote URL and commit,
every verdict carries that commit beside the benchmark's own, and export-results writes it as
``benchmark_commit``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner
from support import SOURCE, RunEval, make_submission, solved

from lean_eval.cli import main
from lean_eval.supervise import process

REMOTE = "https://example.invalid/catalog-upstream.git"
GIT_ENV = {"PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid"}


def git(repo: Path, *args: str) -> str:
    got = process.run_capture(("git", "-C", str(repo), *args), env={**GIT_ENV, "HOME": str(repo)},
                              cwd=repo)
    assert got.returncode == 0, got.stderr
    return got.stdout.decode().strip()


def test_an_export_from_an_import_names_the_upstream_commit(outside: Path, bwrap: str) -> None:
    src = outside / "upstream"
    shutil.copytree(SOURCE, src)
    git(src, "init", "-q")
    git(src, "add", "-A")
    git(src, "commit", "-q", "-m", "upstream")
    git(src, "remote", "add", "origin", REMOTE)
    upstream = git(src, "rev-parse", "HEAD")
    dest = outside / "bench"
    runner = CliRunner()
    imported = runner.invoke(main, ["import-catalog", str(src), str(dest)],
                             catch_exceptions=False)
    assert imported.exit_code == 0, imported.output
    record = json.loads((dest / "provenance.json").read_text())
    assert (record["repository"], record["commit"]) == (REMOTE, upstream)
    git(dest, "init", "-q")  # the import committed into a repository of its own
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "import")
    own = git(dest, "rev-parse", "HEAD")
    assert own != upstream
    sub = make_submission(outside / "subs", "alice",
                          {"scaled_norm": {"Submission.lean": solved(SOURCE, "scaled_norm")}})
    run = RunEval(dest, outside)(sub)
    assert run.code == 0, run.result.output
    identity = run.verdict("alice", "scaled_norm")["identity"]
    assert (identity["benchmark_commit"], identity["upstream_commit"],
            identity["imported"]) == (own, upstream, True)
    meta = outside / "meta.json"
    meta.write_text(json.dumps({"alice": {
        "user": "alice", "declared_model": "M", "intake": {"kind": "issue", "issue_number": 1},
        "submission": {"kind": "gist", "repo": "alice/0123abcd", "ref": "a" * 40,
                       "public": True}}}))
    exported = runner.invoke(main, ["export-results", str(run.out), "--metadata", str(meta),
                                    "--results-dir", str(outside / "results")],
                             catch_exceptions=False)
    assert exported.exit_code == 0, exported.output
    store = json.loads((outside / "results" / "alice.json").read_text())
    assert [r["benchmark_commit"] for r in store["results"]] == [upstream]
