"""The results store's rules equal the public store validator's (issue 27 item 6). Each case is
one the public validator decides (its `validate_v2`, and its schema's note that
`production_metadata` may grow compatibly); a store file here validates exactly when it does
there, and export-results appends to such a file keeping every byte of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic import ValidationError
from support import make_identity, write_output

from lean_eval.cli import main
from lean_eval.outputs import export, results_store
from lean_eval.records.results_store import MetadataEntry, UserFile

COMMIT = "c" * 40


def record(user: str, problem: str = "two_plus_two", **changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "result_id": results_store.result_id(user, "M", problem, 1), "problem_id": problem,
        "statement_revision": 1, "declared_model": "M", "accepted_at": "2026-01-01T00:00:00Z",
        "benchmark_commit": COMMIT, "intake": {"kind": "issue", "issue_number": 3},
        "submission": {"kind": "github_repo", "repo": "some-owner/proofs", "ref": "a" * 40,
                       "public": True},
        "production_metadata": {}}
    return {**base, **changes}


def store(user: str, *records: dict[str, Any]) -> dict[str, Any]:
    return {"schema_version": 2, "user": user, "results": list(records)}


@pytest.mark.parametrize(("case", "document"), [
    # production_metadata "may grow compatibly": a key it does not know is kept
    ("extra production_metadata key", store("alice", record("alice", production_metadata={
        "production_description": "one pass", "compute_hours": 3}))),
    # a login is alphanumerics with hyphens inside, doubled ones too
    ("login with --", store("a--b", record("a--b"))),
    ("login longer than 39", store("a" * 45, record("a" * 45))),
    # an owner may hold _ and .
    ("owner with _", store("alice", record("alice", submission={
        "kind": "gist", "repo": "some_owner.x/0123abcd", "ref": "b" * 40, "public": True}))),
    # the store reads any non-empty problem id, hyphenated ones included
    ("hyphenated problem id", store("alice", record("alice", "erdos-straus"))),
])
def test_what_the_public_validator_accepts_validates(case: str, document: dict[str, Any]) -> None:
    UserFile.model_validate(document)


@pytest.mark.parametrize(("case", "document"), [
    # accepted_at must be a real time, not only second-precision UTC in shape
    ("impossible date", store("alice", record("alice", accepted_at="2026-02-30T00:00:00Z"))),
    ("impossible hour", store("alice", record("alice", accepted_at="2026-02-03T24:00:00Z"))),
    ("login ending in -", store("alice-", record("alice-"))),
    ("publication date impossible", store("alice", record("alice", production_metadata={
        "solution_publication_status": "published", "solution_publication_date": "2026-02-30"}))),
    ("published but private", store("alice", record("alice", submission={
        "kind": "gist", "repo": "alice/0123abcd", "ref": "b" * 40, "public": False},
        production_metadata={"solution_publication_status": "published",
                             "solution_publication_date": "2026-01-02"}))),
    ("empty problem id", store("alice", record("alice", ""))),
    ("extra record key", store("alice", {**record("alice"), "note": "x"})),
])
def test_what_the_public_validator_refuses_is_refused(case: str,
                                                      document: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        UserFile.model_validate(document)


def test_an_extra_production_metadata_key_no_longer_refuses_a_users_file(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    existing = store("alice", record("alice", "double_def", production_metadata={
        "compute_hours": 3}))
    text = json.dumps(existing, indent=2, sort_keys=True) + "\n"
    (results / "alice.json").write_text(text)
    out = write_output(tmp_path / "run", [("alice", "two_plus_two")],
                       identity=make_identity(benchmark_commit=COMMIT))
    meta = tmp_path / "meta.json"
    meta.write_text(json.dumps({"alice": {
        "user": "alice", "declared_model": "M", "intake": {"kind": "issue", "issue_number": 1},
        "submission": {"kind": "gist", "repo": "alice/0123abcd", "ref": "a" * 40,
                       "public": True},
        "production_metadata": {"model_card": "https://example.invalid/card"}}}))
    result = CliRunner().invoke(main, ["export-results", str(out), "--metadata", str(meta),
                                       "--results-dir", str(results)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    written = json.loads((results / "alice.json").read_text())
    assert written["results"][0] == existing["results"][0]  # the old record, every key kept
    assert written["results"][1]["production_metadata"] == {
        "model_card": "https://example.invalid/card"}
    assert export.render(written).startswith(text[:text.index('"results"')])


def test_metadata_entries_follow_the_same_login_rule() -> None:
    entry = {"user": "a--b", "declared_model": "M", "intake": {"kind": "issue",
                                                               "issue_number": 1},
             "submission": {"kind": "gist", "repo": "a--b/x", "ref": "a" * 40, "public": True}}
    assert MetadataEntry.model_validate(entry).user == "a--b"
