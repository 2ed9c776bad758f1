"""An export from a benchmark imported with uncommitted changes says so (issue 31 item 3): the
verdict's ``identity.upstream_uncommitted`` reaches the store record as
``production_metadata.benchmark_uncommitted`` (the one object of a record the public schema
lets grow), the file still validates as the public store's validator would, and the export of
a clean import carries no such key.

Where ``LEAN_EVAL_REAL_RESULTS`` names the ``results/`` of a checkout of the public store, its
own validator (``scripts/results_schema.py``, read at test time) also accepts the file."""

from __future__ import annotations

import importlib.util
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

UPSTREAM = "b91d4750" + "0" * 32
DIRTY = ("generated/tverberg/Challenge.lean",)
META = {"alice": {"user": "alice", "declared_model": "M",
                  "intake": {"kind": "issue", "issue_number": 7},
                  "submission": {"kind": "gist", "repo": "alice/0123abcd", "ref": "a" * 40,
                                 "public": True},
                  "production_metadata": {"production_description": "by hand"}}}
REAL_RESULTS = os.environ.get("LEAN_EVAL_REAL_RESULTS")


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


@pytest.mark.skipif(not REAL_RESULTS, reason="LEAN_EVAL_REAL_RESULTS is not set (the results/ "
                                             "of a checkout of the public store); not run")
def test_the_public_validator_accepts_the_record(tmp_path: Path) -> None:
    assert REAL_RESULTS is not None
    script = Path(REAL_RESULTS).parent / "scripts" / "results_schema.py"
    spec = importlib.util.spec_from_file_location("public_results_schema", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    data = _export(tmp_path, DIRTY)
    assert module.validate_v2(data)["results"][0]["production_metadata"][UNCOMMITTED_KEY] == [
        DIRTY[0]]
