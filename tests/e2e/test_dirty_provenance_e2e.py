"""An import of a checkout with uncommitted changes carries them all the way to the results
store (issue 31 item 3): refused without ``--allow-dirty``; with it, ``provenance.json``, every
verdict (``identity.upstream_uncommitted``) and the exported record
(``production_metadata.benchmark_uncommitted``) name the changed path, and a correct
submission is still accepted."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from support import SOURCE, RunEval, make_submission, solved
from support.histories import History, git

from lean_eval.cli import main

CHANGED = "generated/counter_where/README.md"


def test_uncommitted_paths_reach_the_verdicts_and_the_export(outside: Path, bwrap: str) -> None:
    del bwrap
    h = History(outside / "upstream", copy_of=SOURCE)
    upstream = h.commit("upstream")
    (h.root / CHANGED).write_text("Edited after the commit.\n")
    dest = outside / "bench"
    runner = CliRunner()
    refused = runner.invoke(main, ["import-catalog", str(h.root), str(dest)],
                            catch_exceptions=False)
    assert refused.exit_code == 2 and CHANGED in refused.stderr
    imported = runner.invoke(main, ["import-catalog", str(h.root), str(dest), "--allow-dirty"],
                             catch_exceptions=False)
    assert imported.exit_code == 0, imported.output
    assert json.loads((dest / "provenance.json").read_text())["uncommitted"] == [CHANGED]
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "import")
    sub = make_submission(outside / "subs", "alice",
                          {"scaled_norm": {"Submission.lean": solved(SOURCE, "scaled_norm")}})
    run = RunEval(dest, outside)(sub)
    assert run.code == 0, run.result.output
    verdict = run.verdict("alice", "scaled_norm")
    assert verdict["verdict"] == "accepted"
    identity = verdict["identity"]
    assert (identity["upstream_commit"], identity["upstream_uncommitted"]) == (upstream,
                                                                                [CHANGED])
    meta = outside / "meta.json"
    meta.write_text(json.dumps({"alice": {
        "user": "alice", "declared_model": "M", "intake": {"kind": "issue", "issue_number": 1},
        "submission": {"kind": "gist", "repo": "alice/0123abcd", "ref": "a" * 40,
                       "public": True}}}))
    exported = runner.invoke(main, ["export-results", str(run.out), "--metadata", str(meta),
                                    "--results-dir", str(outside / "results")],
                             catch_exceptions=False)
    assert exported.exit_code == 0, exported.output
    (record,) = json.loads((outside / "results" / "alice.json").read_text())["results"]
    assert record["benchmark_commit"] == upstream
    assert record["production_metadata"] == {"benchmark_uncommitted": [CHANGED]}
