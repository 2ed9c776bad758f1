"""An export from a benchmark imported with uncommitted changes says so (issue 31 item 3): the
verdict's ``identity.upstream_uncommitted`` reaches the store record as
``production_metadata.benchmark_uncommitted`` (the one object of a record the public schema
lets grow), the file still validates as the public store's validator would, and the export of
a clean import carries no such key.

Where ``LEAN_EVAL_REAL_SUBMISSIONS`` names a local copy of the public store (a checkout or its
git directory), its own validator (``scripts/results_schema.py``, read at test time, never
copied here) also accepts the file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from support import make_identity, write_output

from lean_eval.cli import main
from lean_eval.outputs.export import UNCOMMITTED_KEY
from lean_eval.records.results_store import UserFile
from lean_eval.supervise import process

UPSTREAM = "b91d4750" + "0" * 32
DIRTY = ("generated/tverberg/Challenge.lean",)
META = {"alice": {"user": "alice", "declared_model": "M",
                  "intake": {"kind": "issue", "issue_number": 7},
                  "submission": {"kind": "gist", "repo": "alice/0123abcd", "ref": "a" * 40,
                                 "public": True},
                  "production_metadata": {"production_description": "by hand"}}}
REAL = os.environ.get("LEAN_EVAL_REAL_SUBMISSIONS")  # a checkout (or git dir) of the store


def _export(tmp_path: Path, uncommitted: tuple[str, ...]) -> dict[str, Any]:
    identity = make_identity(benchmark_commit="c" * 40, upstream_commit=UPSTREAM, imported=True,
                             upstream_uncommitted=uncommitted)
    out = write_output(tmp_path / "run", [("alice", "tverberg")], identity=identity)
    (tmp_path / "meta.json").write_text(json.dumps(META))
    result = CliRunner().invoke(main, ["export-results", str(out), "--metadata",
                                       str(tmp_path / "meta.json"), "--results-dir",
                                       str(tmp_path / "results")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads((tmp_path / "results" / "alice.json").read_text())
    UserFile.model_validate(data)
    return data


def test_the_uncommitted_paths_reach_the_record(tmp_path: Path) -> None:
    (record,) = _export(tmp_path, DIRTY)["results"]
    assert record["benchmark_commit"] == UPSTREAM
    assert record["production_metadata"] == {"production_description": "by hand",
                                             UNCOMMITTED_KEY: list(DIRTY)}


def test_a_clean_import_exports_no_such_key(tmp_path: Path) -> None:
    (record,) = _export(tmp_path, ())["results"]
    assert record["production_metadata"] == {"production_description": "by hand"}


@pytest.mark.skipif(not REAL, reason="LEAN_EVAL_REAL_SUBMISSIONS is not set (a local copy of "
                                     "leanprover/lean-eval-submissions); not run")
def test_the_public_validator_accepts_the_record(tmp_path: Path) -> None:
    assert REAL is not None
    source = Path(REAL) / "scripts" / "results_schema.py"
    if source.is_file():
        text = source.read_text()
    else:
        shown = process.run_capture(("git", "--git-dir", REAL, "show",
                                     "HEAD:scripts/results_schema.py"),
                                    env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
                                    cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr
        text = shown.stdout.decode()
    namespace: dict[str, Any] = {"__name__": "public_results_schema"}
    exec(compile(text, str(source), "exec"), namespace)  # noqa: S102 - the public validator
    data = _export(tmp_path, DIRTY)
    checked = namespace["validate_v2"](data)
    assert checked["results"][0]["production_metadata"][UNCOMMITTED_KEY] == [DIRTY[0]]
