"""`lean-eval import-catalog`: a catalog in the lean-eval source layout becomes this layout.

The fixture ``tests/fixtures/source_catalog`` is written here in the source layout's
conventions: holes as names (short and qualified) with kinds in ``holes.json`` and
``config.json``, descriptive manifest keys, a Prop-valued instance theorem hole, an instance
hole written with ``where``, a ``noncomputable section``, a Solution and starter repeating the
Challenge's auxiliary declarations, named arguments and a structure instance in a statement,
no workspace lake manifests, a root Lean project that differs from the pin set, a frozen set.
"""

# ruff: noqa: RUF001  (Lean statements use the Unicode letters Mathlib writes)
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from support import SOURCE, UPDATE_INDEX

from lean_eval.benchmark import importer
from lean_eval.cli import main


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def source_copy(base: Path) -> Path:
    src = base / "source"
    shutil.copytree(SOURCE, src)
    return src


def test_a_change_after_a_named_argument_in_one_bridge_is_a_validate_catalog_fault(
        outside: Path) -> None:
    dest = outside / "bench"
    assert invoke("import-catalog", str(SOURCE), str(dest)).exit_code == 0
    bridge = dest / "workspaces" / "scaled_norm" / "Solution.lean"
    text = bridge.read_text(encoding="utf-8")
    bridge.write_text(text.replace("ContinuousAt f (x := r))", "ContinuousAt f (x := r + 1))"),
                      encoding="utf-8")
    assert UPDATE_INDEX.main(["--root", str(dest)]) == 0
    result = invoke("validate-catalog", "--benchmark", str(dest))
    assert result.exit_code == 1
    assert ("workspaces/scaled_norm/Solution.lean: bridge states 'scaled_norm_eq' as "
            "'(r : ℝ) (f : ℝ → ℝ) (hf : ContinuousAt f (x := r + 1))") in result.output


def test_importing_twice_gives_the_same_bytes_and_check_reports_a_stale_dest(
        outside: Path) -> None:
    first, second = outside / "one", outside / "two"
    assert invoke("import-catalog", str(SOURCE), str(first)).exit_code == 0
    assert invoke("import-catalog", str(SOURCE), str(second), "-q").exit_code == 0
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    assert all((first / f).read_bytes() == (second / f).read_bytes() for f in files)
    assert importer.plan_import(SOURCE) == importer.plan_import(SOURCE)
    assert invoke("import-catalog", str(SOURCE), str(first), "--check").exit_code == 0
    (first / "problems" / "scaled_norm.toml").write_text("id = 'edited'\n")
    (first / "workspaces" / "scaled_norm" / "Solution.lean").unlink()
    (first / "stray.txt").write_text("x")
    stale = invoke("import-catalog", str(SOURCE), str(first), "--check")
    assert stale.exit_code == 1
    for line in ("problems/scaled_norm.toml: differs",
                 "workspaces/scaled_norm/Solution.lean: missing",
                 "stray.txt: not written by the import"):
        assert line in stale.output, stale.output
    again = invoke("import-catalog", str(SOURCE), str(first))
    assert again.exit_code == 2
    assert "exists" in again.output


@pytest.mark.parametrize(("change", "named"), [
    (lambda src: (src / "generated" / "scaled_norm" / "Extra.lean").write_text("-- x\n"),
     "generated/scaled_norm/Extra.lean"),
    (lambda src: (src / "generated" / "counter_where" / "holes.json").write_text(
        (src / "generated" / "counter_where" / "holes.json").read_text().replace(
            '"kind": "def"', '"kind": "theorem"')),
     "generated/counter_where/holes.json"),
    (lambda src: (src / "manifests" / "problems" / "scaled_norm.toml").write_text(
        (src / "manifests" / "problems" / "scaled_norm.toml").read_text().replace(
            'holes = ["scaled_norm_eq"]', 'holes = ["scaled_norm_eq", "missing_hole"]')),
     "manifests/problems/scaled_norm.toml"),
    (lambda src: (src / "manifests" / "problems" / "scaled_norm.toml").write_text(
        'colour = "red"\n' + (src / "manifests" / "problems" / "scaled_norm.toml").read_text()),
     "manifests/problems/scaled_norm.toml: colour"),
    (lambda src: (src / "generated" / "widget_facts" / "lakefile.toml").write_text(
        (src / "generated" / "widget_facts" / "lakefile.toml").read_text().replace(
            "1111111111111111111111111111111111111111", "4" * 40)),
     "generated/widget_facts/lakefile.toml require"),
    (lambda src: (src / "generated" / "scaled_norm" / "lean-toolchain").write_text(
        "leanprover/lean4:v4.36.0\n"), "generated/scaled_norm/lean-toolchain"),
], ids=["unknown-file", "holes-json-kind", "hole-not-in-config", "unknown-key", "pins",
        "toolchain"])
def test_refuses_what_it_cannot_import_faithfully_naming_the_file(outside: Path, change: object,
                                                                   named: str) -> None:
    src = source_copy(outside)
    change(src)  # type: ignore[operator]
    dest = outside / "bench"
    result = invoke("import-catalog", str(src), str(dest))
    assert result.exit_code == 2
    assert named in result.output, result.output
    assert "Traceback" not in result.output
    assert not dest.exists()
    assert [p.name for p in outside.iterdir()] == ["source"]  # no staging directory left


def test_the_import_json_lists_every_note(outside: Path) -> None:
    result = invoke("import-catalog", str(SOURCE), str(outside / "bench"), "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    dropped = {n["path"] for n in data["notes"] if n["action"] == "dropped"}
    assert "generated/widget_facts/holes.json" in dropped
    assert "generated/widget_facts/WorkspaceTest.lean" in dropped
