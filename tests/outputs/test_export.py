"""export-results: accepted pairs of a run become leaderboard results (store schema version 2).

Run outputs are built from the models (as run-eval writes them), so each refusal can be
provoked exactly.
"""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from support import make_identity, write_output

from lean_eval.cli import main
from lean_eval.errors import ExportRefusedError
from lean_eval.outputs import export, results_store

COMMIT = "c" * 40
ALICE = {"user": "Alice-B", "declared_model": "Ünïcode Model 2 ",
         "intake": {"kind": "issue", "issue_number": 7},
         "submission": {"kind": "github_repo", "repo": "alice-b/proofs", "ref": "a" * 40,
                        "public": True},
         "production_metadata": {"production_description": "one pass, no human edits",
                                 "solution_publication_status": "published",
                                 "solution_publication_date": "2026-01-02"}}
DAVE = {"user": "dave", "declared_model": "M", "submission": {
            "kind": "gist", "repo": "dave/0123abcd", "ref": "b" * 40, "public": False},
        "intake": {"kind": "server", "submission_id": "01890a5d-ac96-774b-bcce-b302099a8057"}}


def _run(out: Path, pairs: list[tuple[str, str]], finished: str = "2026-01-01T00:01:00+00:00",
         **changes: Any) -> Path:
    write_output(out, pairs, identity=make_identity(benchmark_commit=COMMIT))
    summary = json.loads((out / "summary.json").read_text())
    summary["finished_at"] = finished
    (out / "summary.json").write_text(json.dumps(summary))
    for sid, pid in pairs:
        path = out / sid / f"{pid}.json"
        data = json.loads(path.read_text())
        for key, value in changes.items():
            data["problem" if key == "revision" else key] = (
                {**data["problem"], "statement_revision": value} if key == "revision" else value)
        path.write_text(json.dumps(data))
    return out


def _metadata(path: Path, entries: dict[str, Any]) -> Path:
    path.write_text(json.dumps(entries))
    return path


def _export(out: Path, metadata: Path, results: Path, *extra: str) -> Result:
    return CliRunner().invoke(main, ["export-results", str(out), "--metadata", str(metadata),
                                     "--results-dir", str(results), *extra],
                              catch_exceptions=False)


def _records(text: str) -> list[str]:
    """The text of each record of a store file, as written."""
    lines = text.splitlines()
    start = lines.index('  "results": [') + 1
    records, current = [], []
    for line in lines[start:]:
        if line == "  ],":
            break
        current.append(line)
        if line in ("    }", "    },"):
            records.append("\n".join(current).rstrip(","))
            current = []
    return records


@pytest.mark.parametrize(("user", "model", "problem", "expected"), [
    ("LikC1606", "DeepScientist + GPT-5.6", "annals_unit_conjecture",
     "r2_6b05f51cab69eb2055c8c1e30b007a4336e1ba9cfcfe9e830cf5791a08e366bf"),
    ("adamtopaz", "Fable 5 and GPT-5.6", "neukirch_uchida",
     "r2_f035df1601e107ae512f65ab195ad8b89336658009843ffe7b3209622c7d55c4"),
])
def test_result_id_reproduces_the_public_store_vectors(user: str, model: str, problem: str,
                                                      expected: str) -> None:
    assert results_store.result_id(user, model, problem, 1) == expected
    assert results_store.result_id(user.upper(), model, problem, 1) == expected
    assert results_store.result_id(user, model + " ", problem, 1) != expected  # verbatim
    assert results_store.result_id(user, model, problem, 2) != expected


def test_export_then_a_later_run_appends_and_leaves_the_first_result_byte_identical(
        tmp_path: Path) -> None:
    meta = _metadata(tmp_path / "meta.json", {"alice": ALICE})
    results = tmp_path / "results"
    first = _export(_run(tmp_path / "run1", [("alice", "two_plus_two")]), meta, results)
    assert first.exit_code == 0, first.output
    assert "1 new result(s), 0 already in the store" in first.output
    assert [p.name for p in results.iterdir()] == ["alice-b.json"]  # lowercased user
    text = (results / "alice-b.json").read_text(encoding="utf-8")
    data = json.loads(text)
    assert text == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert "Ünïcode" in text  # ensure_ascii=False
    assert set(data) == {"schema_version", "user", "results"}
    assert data["schema_version"] == 2 and data["user"] == "Alice-B"
    (record,) = data["results"]
    assert record == {
        "result_id": results_store.result_id("Alice-B", "Ünïcode Model 2 ", "two_plus_two", 1),
        "problem_id": "two_plus_two", "statement_revision": 1,
        "declared_model": "Ünïcode Model 2 ", "accepted_at": "2026-01-01T00:01:00Z",
        "benchmark_commit": COMMIT, "intake": ALICE["intake"],
        "submission": ALICE["submission"], "production_metadata": ALICE["production_metadata"]}

    later = _run(tmp_path / "run2", [("alice", "two_plus_two"), ("alice", "double_def")],
                 finished="2026-03-04T07:08:09+02:00")
    second = _export(later, meta, results)
    assert second.exit_code == 0, second.output
    assert "1 new result(s), 1 already in the store" in second.output
    after = (results / "alice-b.json").read_text(encoding="utf-8")
    old, new = _records(text), _records(after)
    assert len(old) == 1 and len(new) == 2
    assert new[0] == old[0]  # byte for byte, its accepted_at included
    assert json.loads(new[1])["accepted_at"] == "2026-03-04T05:08:09Z"
    assert json.loads(new[1])["problem_id"] == "double_def"

    # exporting the same run again adds nothing and does not touch the file
    stamp = (results / "alice-b.json").stat().st_mtime_ns
    again = _export(later, meta, results, "--json")
    assert again.exit_code == 0, again.output
    report = json.loads(again.output)
    assert report["added"] == [] and report["kept"] == 2 and report["written"] == []
    assert (results / "alice-b.json").stat().st_mtime_ns == stamp
    verbose = _export(later, meta, results, "-v")
    assert verbose.output.count("kept  r2_") == 2 and "0 new result(s)" in verbose.output
    assert _export(later, meta, results, "-q").output == ""


def test_a_new_statement_revision_is_a_new_result(tmp_path: Path) -> None:
    meta = _metadata(tmp_path / "meta.json", {"alice": ALICE})
    results = tmp_path / "results"
    assert _export(_run(tmp_path / "r1", [("alice", "two_plus_two")]), meta,
                   results).exit_code == 0
    bumped = _export(_run(tmp_path / "r2", [("alice", "two_plus_two")], revision=2), meta,
                     results)
    assert bumped.exit_code == 0, bumped.output
    data = json.loads((results / "alice-b.json").read_text())
    assert [r["statement_revision"] for r in data["results"]] == [1, 2]
    assert len({r["result_id"] for r in data["results"]}) == 2


def test_only_accepted_pairs_become_results(tmp_path: Path) -> None:
    out = _run(tmp_path / "run", [("alice", "two_plus_two"), ("bob", "two_plus_two"),
                                  ("carol", "two_plus_two"), ("dave", "double_def")])
    meta = _metadata(tmp_path / "meta.json", {"alice": ALICE, "dave": DAVE})  # no bob, carol
    result = _export(out, meta, tmp_path / "results")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["alice-b.json",
                                                                        "dave.json"]
    dave = json.loads((tmp_path / "results" / "dave.json").read_text())
    assert dave["results"][0]["production_metadata"] == {}
    assert dave["results"][0]["intake"]["kind"] == "server"


def test_a_hand_edited_store_is_refused_naming_the_record(tmp_path: Path) -> None:
    meta = _metadata(tmp_path / "meta.json", {"alice": ALICE})
    results = tmp_path / "results"
    assert _export(_run(tmp_path / "r1", [("alice", "two_plus_two")]), meta,
                   results).exit_code == 0
    store = results / "alice-b.json"
    data = json.loads(store.read_text())
    data["results"][0]["declared_model"] = "Another Model"
    store.write_text(json.dumps(data))
    before = store.read_bytes()
    refused = _export(_run(tmp_path / "r2", [("alice", "two_plus_two"),
                                             ("alice", "double_def")]), meta, results)
    assert refused.exit_code == 2
    rid = data["results"][0]["result_id"]
    assert f"{store}: record 0 ({rid}): result_id does not match" in refused.output
    assert "nothing was written" in refused.output and "Traceback" not in refused.output
    assert store.read_bytes() == before


@pytest.mark.parametrize(("change", "needle"), [
    (lambda d: d["results"].append(d["results"][0]), "record 1 (r2_"),
    (lambda d: d.update(schema_version=1), "schema_version"),
    (lambda d: d.update(user="mallory"), "holds user 'mallory'"),
    (lambda d: d["results"][0].update(accepted_at="2026-01-01"), "field accepted_at"),
    (lambda d: d["results"][0].update(extra=1), "field extra"),
])
def test_an_invalid_store_file_is_refused(tmp_path: Path, change: Any, needle: str) -> None:
    meta = _metadata(tmp_path / "meta.json", {"alice": ALICE})
    results = tmp_path / "results"
    assert _export(_run(tmp_path / "r1", [("alice", "two_plus_two")]), meta,
                   results).exit_code == 0
    store = results / "alice-b.json"
    data = json.loads(store.read_text())
    change(data)
    store.write_text(json.dumps(data))
    refused = _export(_run(tmp_path / "r2", [("alice", "double_def")]), meta, results)
    assert refused.exit_code == 2, refused.output
    assert str(store) in refused.output and needle in refused.output


def test_metadata_missing_a_field_writes_nothing(tmp_path: Path) -> None:
    out = _run(tmp_path / "run", [("alice", "two_plus_two"), ("dave", "double_def")])
    broken = {k: v for k, v in ALICE.items() if k != "intake"}
    meta = _metadata(tmp_path / "meta.json", {"alice": broken, "dave": DAVE})
    result = _export(out, meta, tmp_path / "results")
    assert result.exit_code == 2
    assert "submission 'alice': field intake: Field required" in result.output
    assert "nothing was written" in result.output
    assert not (tmp_path / "results").exists()


def test_an_accepted_submission_without_metadata_writes_nothing(tmp_path: Path) -> None:
    out = _run(tmp_path / "run", [("alice", "two_plus_two"), ("dave", "double_def")])
    result = _export(out, _metadata(tmp_path / "meta.json", {"alice": ALICE}),
                     tmp_path / "results")
    assert result.exit_code == 2
    assert "submission 'dave' has accepted pairs (double_def) but no entry" in result.output
    assert not (tmp_path / "results").exists()


def _with(entry: dict[str, Any], **production: Any) -> dict[str, Any]:
    return {**entry, "production_metadata": production}


@pytest.mark.parametrize(("entry", "needle"), [
    (_with(ALICE, production_description="  "), "production_description: Value error, must "
                                                "not be blank"),
    (_with(ALICE, production_description="a\0b"), "must not contain NUL"),
    (_with(ALICE, production_description="x" * 4001), "more than 4000"),
    (_with(DAVE, solution_publication_status="published", solution_publication_date="2026-01-02"),
     "contradicts submission.public false"),
    (_with(ALICE, solution_publication_status="private"), "contradicts submission.public true"),
    (_with(DAVE, solution_publication_status="planned"), "solution_publication_date is "
                                                         "required"),
    (_with(DAVE, solution_publication_status="private", solution_publication_date="2026-01-02"),
     "allowed only when"),
    (_with(DAVE, solution_publication_status="planned", solution_publication_date="2026-02-30"),
     "not an ISO date"),
    (_with(DAVE, solution_publication_status="maybe"), "solution_publication_status"),
    ({**DAVE, "intake": {"kind": "server", "submission_id": "01890A5D-AC96-774B-BCCE-"
                                                            "B302099A8057"}},
     "field intake.submission_id"),
    ({**DAVE, "intake": {"kind": "server", "submission_id": "01890a5d-ac96-474b-bcce-"
                                                            "b302099a8057"}},  # UUIDv4
     "field intake.submission_id"),
    ({**DAVE, "intake": {"kind": "issue", "issue_number": "7"}}, "field intake.issue_number"),
    ({**DAVE, "submission": {**DAVE["submission"], "ref": "B" * 40}}, "field submission.ref"),
    ({**DAVE, "submission": {**DAVE["submission"], "repo": "noslash"}},
     "field submission.repo"),
    ({**DAVE, "submission": {**DAVE["submission"], "kind": "gitlab"}},
     "field submission.kind"),
    ({**DAVE, "user": "bad user"}, "field user"),
    ({**DAVE, "extra": 1}, "field extra"),
])
def test_invalid_metadata_is_named_and_nothing_is_written(tmp_path: Path, entry: dict[str, Any],
                                                          needle: str) -> None:
    out = _run(tmp_path / "run", [("dave", "double_def")])
    result = _export(out, _metadata(tmp_path / "meta.json", {"dave": entry}),
                     tmp_path / "results")
    assert result.exit_code == 2, result.output
    assert "submission 'dave'" in result.output and needle in result.output, result.output
    assert not (tmp_path / "results").exists()


def test_toml_metadata_is_read_when_the_name_ends_in_toml(tmp_path: Path) -> None:
    out = _run(tmp_path / "run", [("dave", "double_def")])
    meta = tmp_path / "meta.toml"
    meta.write_text('[dave]\nuser = "dave"\ndeclared_model = "M"\n'
                    '[dave.intake]\nkind = "issue"\nissue_number = 3\n'
                    '[dave.submission]\nkind = "gist"\nrepo = "dave/0123abcd"\n'
                    f'ref = "{"b" * 40}"\npublic = false\n'
                    '[dave.production_metadata]\nsolution_publication_status = "planned"\n'
                    'solution_publication_date = "2027-01-15"\n', encoding="utf-8")
    result = _export(out, meta, tmp_path / "results")
    assert result.exit_code == 0, result.output
    (record,) = json.loads((tmp_path / "results" / "dave.json").read_text())["results"]
    assert record["intake"] == {"kind": "issue", "issue_number": 3}
    assert record["production_metadata"]["solution_publication_date"] == "2027-01-15"


def test_a_run_not_scored_from_a_git_checkout_is_refused(tmp_path: Path) -> None:
    out = write_output(tmp_path / "run", [("dave", "double_def")])  # benchmark_commit c0ffee
    result = _export(out, _metadata(tmp_path / "meta.json", {"dave": DAVE}),
                     tmp_path / "results")
    assert result.exit_code == 2
    assert "benchmark_commit 'c0ffee' is not a 40-hex git commit" in result.output
    assert not (tmp_path / "results").exists()


def test_metadata_that_is_not_an_object_or_has_duplicate_keys_is_refused(tmp_path: Path) -> None:
    out = _run(tmp_path / "run", [("dave", "double_def")])
    for text, needle in (("[]", "expected an object keyed by submission id"),
                         ('{"dave": {}, "dave": {}}', "duplicate key 'dave'")):
        meta = tmp_path / "meta.json"
        meta.write_text(text)
        result = _export(out, meta, tmp_path / "results")
        assert result.exit_code == 2 and needle in result.output, result.output
    assert not (tmp_path / "results").exists()


def test_statement_revision_is_the_one_the_verdict_recorded(tmp_path: Path) -> None:
    from lean_eval.records.verdict import Verdict

    out = _run(tmp_path / "run", [("dave", "double_def")], revision=3)
    verdict = Verdict.model_validate_json((out / "dave" / "double_def.json").read_bytes())
    assert export.statement_revision(verdict) == 3


# --- the store lock: concurrent exports keep every record -------------------------------------

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
