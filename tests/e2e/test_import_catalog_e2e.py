"""`lean-eval import-catalog`: a catalog in the lean-eval source layout becomes this layout.

The fixture ``tests/fixtures/source_catalog`` is written here in the source layout's
conventions: holes as names (short and qualified) with kinds in ``holes.json`` and
``config.json``, descriptive manifest keys, a Prop-valued instance theorem hole, an instance
hole written with ``where``, a ``noncomputable section``, a Solution and starter repeating the
Challenge's auxiliary declarations, named arguments and a structure instance in a statement,
no workspace lake manifests, a root Lean project that differs from the pin set, a frozen set.
"""


from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner, Result
from support import BWRAP_FLOOR, SOLVED, SOURCE, UPDATE_INDEX, RunEval, make_submission, solved

from lean_eval.cli import main


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def source_copy(base: Path) -> Path:
    src = base / "source"
    shutil.copytree(SOURCE, src)
    return src


def test_the_fixture_imports_validates_clean_and_every_problem_scores_accepted(
        outside: Path, bwrap: str) -> None:
    dest = outside / "bench"
    result = invoke("import-catalog", str(SOURCE), str(dest), "--upstream-commit", "1" * 40)
    assert result.exit_code == 0, result.output
    for said in ("removed testDriver", "defaultTargets", "globs", "dropped: generated/",
                 "holes.json", "WorkspaceTest.lean", "mentions `lake test`",
                 "replaced by the pin set"):
        assert said in result.output, said
    assert "warning" not in result.output  # v4.35.0 can run the driver
    validated = invoke("validate-catalog", "--benchmark", str(dest))
    assert validated.exit_code == 0, validated.output
    assert UPDATE_INDEX.main(["--root", str(dest), "--check"]) == 0
    assert not any((dest / "workspaces").glob("*/lake-manifest.json"))
    manifest = (dest / "problems" / "widget_facts.toml").read_text(encoding="utf-8")
    assert '{ name = "Widgets.Solid.instFactWidget", kind = "theorem" }' in manifest
    assert '{ name = "Widgets.Solid.instInhabitedCarrier", kind = "instance" }' in manifest
    assert 'group = "formalization-evaluation"' in manifest
    assert (dest / "sets" / "v1.toml").read_bytes() == (
        SOURCE / "manifests" / "sets" / "v1.toml").read_bytes()
    for name in ("Challenge.lean", "Solution.lean", "ChallengeDeps.lean", "Submission.lean",
                 "README.md", "config.json"):
        assert (dest / "workspaces" / "widget_facts" / name).read_bytes() == (
            SOURCE / "generated" / "widget_facts" / name).read_bytes()
    problems = {pid: {"Submission.lean": solved(SOURCE, pid)} for pid in SOLVED}
    run = RunEval(dest, outside)(make_submission(outside, "alice", problems))
    assert run.code == 0, run.result.output
    assert {pid: run.verdict("alice", pid)["verdict"] for pid in SOLVED} == dict.fromkeys(
        SOLVED, "accepted")
    assert (run.out / "summary.json").is_file()
    assert "Traceback" not in run.result.output
    unchanged = RunEval(dest, outside / "u")(make_submission(
        outside / "u", "bob", {pid: {"Submission.lean": (
            SOURCE / "generated" / pid / "Submission.lean").read_text()} for pid in SOLVED}))
    assert {unchanged.verdict("bob", pid)["verdict"] for pid in SOLVED} == {"unchanged"}


def test_a_release_without_lake_comparator_is_said_up_front(outside: Path, bwrap: str) -> None:
    src = source_copy(outside)
    for path in [src / "lean-toolchain", *src.glob("generated/*/lean-toolchain")]:
        path.write_text("leanprover/lean4:v4.33.0\n")
    dest = outside / "bench"
    imported = invoke("import-catalog", str(src), str(dest))
    assert imported.exit_code == 0
    assert "warning: lean-toolchain: the pinned Lean release leanprover/lean4:v4.33.0" in (
        imported.output)
    assert "v4.35.0-rc2" in imported.output
    validated = invoke("validate-catalog", "--benchmark", str(dest))
    assert validated.exit_code == 0  # consistent, only unscorable
    assert "predates `lake comparator`" in validated.output
    submission = make_submission(outside, "alice", {"scaled_norm": {
        "Submission.lean": solved(src, "scaled_norm")}})
    refused = CliRunner().invoke(main, [
        "run-eval", str(submission), "--out", str(outside / "out"), "--benchmark", str(dest),
        "-q", "--allow-bwrap-version", BWRAP_FLOOR, "--skip-probes"],
        env={"LEAN_EVAL_TOOLCHAIN": ""}, catch_exceptions=False)
    assert refused.exit_code == 2
    assert "v4.35.0-rc2" in refused.output and "must bump lean-toolchain" in refused.output
    assert not (outside / "out" / "summary.json").exists()
    prepared = CliRunner().invoke(main, ["prepare", "--dry-run", "--benchmark", str(dest)],
                                  env={"LEAN_EVAL_TOOLCHAIN": ""}, catch_exceptions=False)
    assert prepared.exit_code == 2
    assert "v4.35.0-rc2" in prepared.output
    # with --toolchain DIR the check is DIR's own bin/ (the stand-in bundles both tools)
    run = RunEval(dest, outside)(submission)
    assert run.code == 0, run.result.output
    assert run.verdict("alice", "scaled_norm")["verdict"] == "accepted"
