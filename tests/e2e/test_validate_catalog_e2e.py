"""`lean-eval validate-catalog`, and `run-eval` refusing a catalog whose pins disagree."""

from __future__ import annotations

import json
from pathlib import Path

from support import (
    UPDATE_INDEX,
    RunEval,
    changed_benchmark,
    correct,
    make_submission,
    validate_catalog,
)


def drift_pin(root: Path) -> None:
    path = root / "workspaces" / "two_plus_two" / "lake-manifest.json"
    manifest = json.loads(path.read_text())
    manifest["packages"] = [{"name": "mathlib", "type": "git", "rev": "0" * 40,
                             "url": "https://github.com/leanprover-community/mathlib4"}]
    path.write_text(json.dumps(manifest))


def test_run_eval_refuses_drifted_pins_before_reading_submissions(outside: Path,
                                                                  bwrap: str) -> None:
    root = changed_benchmark(outside, drift_pin)
    submission = make_submission(outside, "alice",
                                 {"two_plus_two": {"Submission.lean": correct("two_plus_two")}})
    run = RunEval(root, outside)(submission)
    assert run.code == 2
    assert "workspaces/two_plus_two/lake-manifest.json package pins" in run.result.stderr
    assert "Traceback" not in run.result.output
    assert not (run.out / "alice").exists()
    assert not (run.out / "summary.json").exists()


def test_run_eval_refuses_a_challenge_importing_the_solution_only_package(
        outside: Path, bwrap: str) -> None:
    def change(root: Path) -> None:
        path = root / "workspaces" / "two_plus_two" / "Challenge.lean"
        path.write_text("import LeanPool\n" + path.read_text())

    submission = make_submission(outside, "alice",
                                 {"two_plus_two": {"Submission.lean": correct("two_plus_two")}})
    run = RunEval(changed_benchmark(outside, change), outside)(submission)
    assert run.code == 2
    assert "workspaces/two_plus_two/Challenge.lean imports LeanPool" in run.result.stderr
    assert not (run.out / "summary.json").exists()


def test_manifests_accept_the_descriptive_keys_and_report_every_unknown_key(
        outside: Path, bwrap: str) -> None:
    def describe(root: Path) -> None:
        path = root / "problems" / "two_plus_two.toml"
        path.write_text(path.read_text() + (
            'group = "formalization-evaluation"\nmodule = "Bench.TwoPlusTwo"\n'
            'informal_solution = "Compute."\ntest = false\n\n'
            '[[status_history]]\nstatus = "active"\neffective_date = "2026-01-02"\n'
            'reason = "policy"\n\n[[revision_history]]\nrevision = 1\n'
            'effective_date = "2026-01-01"\nreason = "initial"\n'
            'statement_digest = "sha256:' + "0" * 64 + '"\n'))
    assert validate_catalog(changed_benchmark(outside, describe)).exit_code == 0

    def unknown(root: Path) -> None:
        path = root / "problems" / "two_plus_two.toml"
        path.write_text(path.read_text() + 'colour = "red"\nflavour = "sour"\ntest = "yes"\n')
    root = changed_benchmark(outside / "u", unknown)
    result = validate_catalog(root)
    assert result.exit_code == 1
    for key in ("colour", "flavour", "test"):
        assert f"problems/two_plus_two.toml: {key}: " in result.output, result.output
    submission = make_submission(outside, "alice",
                                 {"two_plus_two": {"Submission.lean": correct("two_plus_two")}})
    run = RunEval(root, outside / "u")(submission)
    assert run.code == 2
    assert "colour" in run.result.stderr and "flavour" in run.result.stderr
    assert not (run.out / "summary.json").exists()


def test_extra_workspace_files_are_refused_alike_by_the_index_validate_catalog_and_run_eval(
        outside: Path, bwrap: str) -> None:
    def change(root: Path) -> None:
        (root / "workspaces" / "two_plus_two" / "holes.json").write_text("{}\n")
    root = changed_benchmark(outside, change, reindex=False)
    assert UPDATE_INDEX.main(["--root", str(root)]) == 2
    result = validate_catalog(root)
    assert result.exit_code == 1
    assert ("workspaces/two_plus_two/holes.json: not a trusted or starter file"
            in result.output)
    submission = make_submission(outside, "alice",
                                 {"two_plus_two": {"Submission.lean": correct("two_plus_two")}})
    run = RunEval(root, outside)(submission)
    assert run.code == 2
    assert "workspaces/two_plus_two/holes.json is not a trusted or starter file" in (
        run.result.stderr)
    assert not (run.out / "summary.json").exists()


def test_a_workspace_without_a_lake_manifest_scores_with_the_one_derived_from_the_root(
        outside: Path, bwrap: str) -> None:
    from lean_eval.benchmark import catalog
    root = changed_benchmark(outside, lambda r: (r / "workspaces" / "two_plus_two" /
                                     "lake-manifest.json").unlink())
    assert validate_catalog(root).exit_code == 0
    derived = catalog.load_catalog(root, revision=None).problems["two_plus_two"].trusted[
        "lake-manifest.json"]
    assert json.loads(derived)["name"] == "two_plus_two"
    assert json.loads(derived)["packages"] == json.loads((root / "lake-manifest.json").read_text())[
        "packages"]
    index = json.loads((root / "workspaces" / "index.json").read_text())
    assert index["problems"]["two_plus_two"]["trusted"]["lake-manifest.json"] == (
        catalog.sha256(derived))
    submission = make_submission(outside, "alice",
                                 {"two_plus_two": {"Submission.lean": correct("two_plus_two")}})
    run = RunEval(root, outside)(submission)
    assert run.code == 0, run.result.output
    assert run.verdict("alice", "two_plus_two")["verdict"] == "accepted"
    # the derived bytes are covered: a root manifest edited afterwards is a digest fault
    (root / "lake-manifest.json").write_text((root / "lake-manifest.json").read_text()
                                             .replace('"lakeDir": ".lake"', '"lakeDir": ".lake2"'))
    result = validate_catalog(root)
    assert ("workspaces/two_plus_two/lake-manifest.json: differs from its digest in "
            "workspaces/index.json (derived from the root's)") in result.output
