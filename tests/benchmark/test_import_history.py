"""import-catalog across the source layout's history (issue 27 items 2 and 3).

Each fixture is the ``SOURCE`` catalog rewritten into one convention the public catalog used:
every problem in a single ``manifests/problems.toml``; manifests without the lifecycle keys; the
earliest ``theorem = NAME``; a manifest whose workspace was not generated yet and a workspace
without a manifest; a root toolchain bumped before the workspaces were regenerated. Each
imports, with the warnings documented; a tampered source (a symlink anywhere, ``sorryAx`` in
``permitted_axioms``, a statement revised without a new revision) is refused by name, and the
clean counterpart passes.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import tomli_w
import tomllib
from click.testing import CliRunner, Result
from support import SOURCE

from lean_eval.benchmark import importer, provenance
from lean_eval.benchmark.validation import validate_catalog
from lean_eval.cli import main
from lean_eval.errors import CatalogError

LIFECYCLE = ("status", "visible", "statement_revision", "tags", "status_history",
             "revision_history", "group")
IDS = ("counter_where", "scaled_norm", "widget_facts")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def source(tmp_path: Path) -> Path:
    src = tmp_path / "source"
    shutil.copytree(SOURCE, src)
    return src


def manifest(src: Path, pid: str) -> dict[str, object]:
    return tomllib.loads((src / "manifests" / "problems" / f"{pid}.toml").read_text())


def strip_lifecycle(src: Path) -> None:
    for pid in IDS:
        table = {k: v for k, v in manifest(src, pid).items() if k not in LIFECYCLE}
        (src / "manifests" / "problems" / f"{pid}.toml").write_text(tomli_w.dumps(table))


def warnings(plan: importer.ImportPlan) -> list[tuple[str, str]]:
    return [(n.path, n.message) for n in plan.notes if n.action == "warning"]


def revision(plan: importer.ImportPlan, pid: str) -> int:
    value = tomllib.loads(plan.files[f"problems/{pid}.toml"].decode())["statement_revision"]
    assert isinstance(value, int)
    return value


def test_a_single_file_manifest_catalog_imports(tmp_path: Path) -> None:
    src = source(tmp_path)
    tables = [{k: v for k, v in manifest(src, pid).items() if k not in LIFECYCLE}
              for pid in IDS]
    shutil.rmtree(src / "manifests" / "problems")
    (src / "manifests" / "problems.toml").write_text(tomli_w.dumps({"version": 1,
                                                                    "problem": tables}))
    plan = importer.plan_import(src, commit="1" * 40)
    assert sorted(p for p in plan.files if p.startswith("problems/")) == [
        f"problems/{pid}.toml" for pid in IDS]
    assert all(revision(plan, pid) == 1 for pid in IDS)
    assert ("manifests/problems.toml [[problem]] 'scaled_norm'" in
            [path for path, _ in warnings(plan)])


def test_manifests_without_lifecycle_keys_read_as_the_public_pipeline_reads_them(
        tmp_path: Path) -> None:
    src = source(tmp_path)
    strip_lifecycle(src)
    plan = importer.plan_import(src, commit="1" * 40)
    found = dict(warnings(plan))
    assert "has no status, visible, statement_revision, tags" in found[
        "manifests/problems/scaled_norm.toml"]
    table = tomllib.loads(plan.files["problems/scaled_norm.toml"].decode())
    assert (table["status"], table["visible"], table["statement_revision"], table["tags"]) == (
        "draft", True, 1, [])
    # the frozen set lists scaled_norm at revision 2, which this history does not have
    assert any(path == "manifests/sets/v1.toml" for path, _ in warnings(plan))


def test_the_earliest_theorem_key_is_read_as_the_one_hole(tmp_path: Path) -> None:
    src = source(tmp_path)
    strip_lifecycle(src)
    table = manifest(src, "scaled_norm")
    (hole,) = table.pop("holes")  # type: ignore[misc]
    (src / "manifests" / "problems" / "scaled_norm.toml").write_text(
        tomli_w.dumps({**table, "theorem": hole}))
    plan = importer.plan_import(src, commit="1" * 40)
    assert "scaled_norm_eq" in plan.files["problems/scaled_norm.toml"].decode()
    assert any("`theorem = NAME`" in n.message for n in plan.notes)


def test_a_manifest_without_a_workspace_and_a_workspace_without_a_manifest_are_skipped(
        tmp_path: Path) -> None:
    src = source(tmp_path)
    (src / "manifests" / "problems" / "new_draft.toml").write_text(
        'id = "new_draft"\ntitle = "Not generated yet"\nholes = ["x"]\nsubmitter = "me"\n')
    shutil.copytree(src / "generated" / "scaled_norm", src / "generated" / "orphan")
    result = invoke("import-catalog", str(src), str(tmp_path / "bench"), "--upstream-commit",
                    "1" * 40)
    assert result.exit_code == 0, result.output
    assert ("warning: manifests/problems/new_draft.toml: problem 'new_draft' has no workspace "
            "generated/new_draft/") in result.stderr
    assert "warning: generated/orphan/: workspace has no manifest" in result.stderr
    assert sorted(p.stem for p in (tmp_path / "bench" / "problems").iterdir()) == list(IDS)
    assert validate_catalog(tmp_path / "bench").ok


def test_a_root_toolchain_bumped_before_the_workspaces_imports_with_their_toolchain(
        tmp_path: Path) -> None:
    src = source(tmp_path)
    (src / "lean-toolchain").write_text("leanprover/lean4:v4.36.0\n")
    plan = importer.plan_import(src, commit="1" * 40)
    assert plan.files["lean-toolchain"] == b"leanprover/lean4:v4.35.0\n"
    (message,) = [m for path, m in warnings(plan) if path == "lean-toolchain"]
    assert "the root names leanprover/lean4:v4.36.0, all 3 workspaces" in message


def test_workspaces_that_disagree_on_the_toolchain_name_every_one(tmp_path: Path) -> None:
    src = source(tmp_path)
    for pid in ("scaled_norm", "widget_facts"):
        (src / "generated" / pid / "lean-toolchain").write_text("leanprover/lean4:v4.36.0\n")
    with pytest.raises(CatalogError) as caught:
        importer.plan_import(src)
    text = str(caught.value)
    for pid in IDS:
        assert f"generated/{pid}/lean-toolchain" in text
    assert "regenerate them upstream" in text


def test_every_fault_is_listed_not_only_the_first(tmp_path: Path) -> None:
    src = source(tmp_path)
    (src / "generated" / "counter_where" / "extra.txt").write_text("x")
    (src / "manifests" / "problems" / "widget_facts.toml").write_text("colour = 'red'\n")
    with pytest.raises(CatalogError) as caught:
        importer.plan_import(src)
    text = str(caught.value)
    assert "(2 fault(s))" in text
    assert "generated/counter_where/extra.txt" in text
    assert "manifests/problems/widget_facts.toml" in text


@pytest.mark.parametrize("where", [
    "lake-manifest.json", "lean-toolchain", "lakefile.toml", "manifests/problems/scaled_norm.toml",
    "manifests/sets/v1.toml", "generated/scaled_norm", "generated/scaled_norm/Challenge.lean",
    "generated/scaled_norm/Submission"])
def test_a_symlink_anywhere_in_the_source_is_refused_by_name(tmp_path: Path, where: str) -> None:
    src = source(tmp_path)
    assert importer.plan_import(src, commit="1" * 40).files  # the clean counterpart
    secret = tmp_path / "host"
    target = src / where
    if target.is_dir():
        shutil.copytree(target, secret)
        shutil.rmtree(target)
    else:
        secret.write_bytes(target.read_bytes())
        secret.chmod(0o600)
        target.unlink()
    os.symlink(secret, target)
    result = invoke("import-catalog", str(src), str(tmp_path / "bench"))
    assert result.exit_code == 2
    assert f"{where}: is a symbolic link" in result.stderr
    assert not (tmp_path / "bench").exists()


def test_sorry_ax_in_permitted_axioms_is_refused_naming_problem_and_axiom(tmp_path: Path) -> None:
    src = source(tmp_path)
    config = src / "generated" / "scaled_norm" / "config.json"
    data = json.loads(config.read_text())
    data["permitted_axioms"] = [*data["permitted_axioms"], "sorryAx"]
    config.write_text(json.dumps(data))
    result = invoke("import-catalog", str(src), str(tmp_path / "bench"))
    assert result.exit_code == 2
    assert "'scaled_norm'" in result.stderr and "'sorryAx'" in result.stderr


def test_provenance_names_the_commit_and_is_covered_by_the_index(tmp_path: Path) -> None:
    src = source(tmp_path)
    dest = tmp_path / "bench"
    assert invoke("import-catalog", str(src), str(dest), "--upstream-commit",
                  "1" * 40).exit_code == 0
    record = provenance.parse((dest / "provenance.json").read_bytes())
    assert (record.commit, record.repository) == ("1" * 40, None)
    assert set(record.statements) == set(IDS)
    assert record.statements["scaled_norm"].keys() == {"2"}
    index = json.loads((dest / "workspaces" / "index.json").read_text())
    assert "provenance.json" in index["root"]
    (dest / "provenance.json").write_text((dest / "provenance.json").read_text().replace(
        "1" * 40, "2" * 40))
    report = validate_catalog(dest)
    assert [f.path for f in report.findings] == ["provenance.json"]


def _revise_statement(src: Path) -> None:
    challenge = src / "generated" / "scaled_norm" / "Challenge.lean"
    text = challenge.read_text()
    assert "theorem scaled_norm_eq" in text
    challenge.write_text(text + "\ntheorem added_lemma : True := trivial\n")


def test_a_statement_revised_without_a_new_revision_is_refused_by_check(tmp_path: Path) -> None:
    src = source(tmp_path)
    dest = tmp_path / "bench"
    assert invoke("import-catalog", str(src), str(dest)).exit_code == 0
    comment = src / "generated" / "scaled_norm" / "Challenge.lean"
    comment.write_text(comment.read_text() + "\n-- a comment is not a statement change\n")
    assert "changed while" not in invoke("import-catalog", str(src), str(dest),
                                         "--check").output
    _revise_statement(src)
    result = invoke("import-catalog", str(src), str(dest), "--check")
    assert result.exit_code == 2
    assert ("the trusted statement of 'scaled_norm' changed while its statement_revision "
            "stayed 2") in result.stderr
    table = manifest(src, "scaled_norm")  # the bumped counterpart is merely stale
    (src / "manifests" / "problems" / "scaled_norm.toml").write_text(tomli_w.dumps(
        {**table, "statement_revision": 3, "revision_history": [
            *table["revision_history"],  # type: ignore[misc]
            {"revision": 3, "effective_date": "2026-04-01", "reason": "statement-change"}]}))
    bumped = invoke("import-catalog", str(src), str(dest), "--check")
    assert bumped.exit_code == 1 and "stale" in bumped.output


def test_validate_catalog_tells_a_statement_edited_in_place(tmp_path: Path) -> None:
    src = source(tmp_path)
    dest = tmp_path / "bench"
    assert invoke("import-catalog", str(src), str(dest)).exit_code == 0
    _revise_statement(dest.parent / "source")
    shutil.copy(src / "generated" / "scaled_norm" / "Challenge.lean",
                dest / "workspaces" / "scaled_norm" / "Challenge.lean")
    from support import UPDATE_INDEX

    assert UPDATE_INDEX.main(["--root", str(dest)]) == 0  # the index refreshed to match
    report = validate_catalog(dest)
    assert [(f.path, "stayed 2" in f.message) for f in report.findings] == [
        ("problems/scaled_norm.toml", True)]
    from lean_eval.benchmark.catalog import load_catalog

    with pytest.raises(CatalogError, match="changed while its statement_revision stayed 2"):
        load_catalog(dest, revision=None)  # run-eval's catalog check


def _sorry_ax(root: Path) -> None:
    config = root / "workspaces" / "two_plus_two" / "config.json"
    data = json.loads(config.read_text())
    data["permitted_axioms"] = [*data["permitted_axioms"], "sorryAx"]
    config.write_text(json.dumps(data, indent=2) + "\n")


def test_sorry_ax_is_a_fault_of_validate_catalog_and_of_the_run_catalog_check(
        tmp_path: Path) -> None:
    from support import changed_benchmark

    from lean_eval.benchmark.catalog import load_catalog

    clean = changed_benchmark(tmp_path / "clean", lambda root: None)
    assert validate_catalog(clean).ok and load_catalog(clean, revision=None).problems
    bench = changed_benchmark(tmp_path / "bad", _sorry_ax)
    report = validate_catalog(bench)
    assert [(f.path, "'sorryAx'" in f.message and "'two_plus_two'" in f.message)
            for f in report.findings] == [("workspaces/two_plus_two/config.json", True)]
    with pytest.raises(CatalogError, match=r"two_plus_two.*'sorryAx'"):
        load_catalog(bench, revision=None)
