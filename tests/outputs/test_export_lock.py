"""export-results locks the store it writes: concurrent exports into one results directory
keep every record of both (SECURITY.md invariant 21's store clause), and a waiting export says
so. Run outputs are built from the models, as in ``test_export``."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_export import ALICE, _metadata, _run

from lean_eval.cli import main
from lean_eval.errors import ExportRefusedError
from lean_eval.outputs import export, results_store

SEEDED = 3000  # a real leaderboard's user file holds thousands of records
ROUNDS = 20


def _seeded_store(tmp_path: Path) -> Path:
    """A results directory whose ``alice-b.json`` holds ``SEEDED`` earlier records."""
    out = _run(tmp_path / "seed-run", [("alice", "two_plus_two")])
    results = tmp_path / "seed"
    export.export(out, _metadata(tmp_path / "seed.json", {"alice": ALICE}), results)
    store = results / "alice-b.json"
    document = json.loads(store.read_text())
    (record,) = document["results"]
    document["results"] = [
        {**record, "declared_model": f"earlier model {i}",
         "result_id": results_store.result_id("Alice-B", f"earlier model {i}", "two_plus_two", 1)}
        for i in range(SEEDED)]
    store.write_text(export.render(document))
    return results


def _model(name: str) -> dict[str, Any]:
    return {**ALICE, "declared_model": name}


def _race(out: Path, metas: list[Path], results: Path
          ) -> tuple[list[export.Exported], list[BaseException]]:
    """Both exports started at once (a barrier), each in its own thread."""
    start = threading.Barrier(len(metas))
    done: list[export.Exported] = []
    errors: list[BaseException] = []

    def one(meta: Path) -> None:
        start.wait()
        try:
            done.append(export.export(out, meta, results))
        except BaseException as exc:  # noqa: BLE001 - reported by the caller's assertion
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(meta,)) for meta in metas]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return done, errors


def test_two_concurrent_exports_keep_every_record(tmp_path: Path) -> None:
    seeded = _seeded_store(tmp_path)
    out = _run(tmp_path / "run", [("alice", "two_plus_two")])
    metas = [_metadata(tmp_path / f"meta{i}.json", {"alice": _model(f"model {i}")})
             for i in (1, 2)]
    expected = {results_store.result_id("Alice-B", f"model {i}", "two_plus_two", 1)
                for i in (1, 2)}
    for round_ in range(ROUNDS):
        results = tmp_path / f"results{round_}"
        shutil.copytree(seeded, results)
        done, errors = _race(out, metas, results)
        assert not errors, errors
        assert len(done) == 2 and all(len(d.added) == 1 for d in done)
        held = json.loads((results / "alice-b.json").read_text())["results"]
        ids = {r["result_id"] for r in held}
        assert len(held) == SEEDED + 2 and expected <= ids, f"round {round_}: {len(held)} kept"
        assert sorted(p.name for p in results.iterdir()) == ["alice-b.json"]  # no lock file


def test_an_export_waits_for_the_one_writing_and_says_so(tmp_path: Path) -> None:
    results = _seeded_store(tmp_path)
    out = _run(tmp_path / "run", [("alice", "two_plus_two")])
    meta = _metadata(tmp_path / "meta.json", {"alice": _model("waiting model")})
    held = results_store.StoreLock(results)
    timer = threading.Timer(0.5, held.close)  # the other export finishes while this one waits
    timer.start()
    try:
        result = CliRunner().invoke(main, ["export-results", str(out), "--metadata", str(meta),
                                           "--results-dir", str(results)],
                                    catch_exceptions=False)
    finally:
        timer.join()
    assert result.exit_code == 0, result.output
    assert (f"export-results: the results store {results} is being written by another export; "
            "waiting for it to finish") in result.output
    assert len(json.loads((results / "alice-b.json").read_text())["results"]) == SEEDED + 1


def test_an_export_that_cannot_get_the_store_gives_up_writing_nothing(tmp_path: Path) -> None:
    results = _seeded_store(tmp_path)
    before = (results / "alice-b.json").read_bytes()
    held = results_store.StoreLock(results)
    try:
        with pytest.raises(ExportRefusedError, match="is still being written by another export"):
            results_store.StoreLock(results, wait=0.2)
    finally:
        held.close()
    assert (results / "alice-b.json").read_bytes() == before
    results_store.StoreLock(results, wait=0).close()  # released: granted at once
