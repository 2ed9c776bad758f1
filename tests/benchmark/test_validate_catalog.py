"""`lean-eval validate-catalog`, and `run-eval` refusing a catalog whose pins disagree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import (
    REPO,
    changed_benchmark,
    validate_catalog,
)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def drift_pin(root: Path) -> None:
    path = root / "workspaces" / "two_plus_two" / "lake-manifest.json"
    manifest = json.loads(path.read_text())
    manifest["packages"] = [{"name": "mathlib", "type": "git", "rev": "0" * 40,
                             "url": "https://github.com/leanprover-community/mathlib4"}]
    path.write_text(json.dumps(manifest))


def test_passes_on_the_repository() -> None:
    result = validate_catalog(REPO)
    assert result.exit_code == 0, result.output
    assert "5 problem(s), catalog consistent" in result.output
    data = json.loads(validate_catalog(REPO, "--json").stdout)
    assert data["ok"] is True
    assert data["findings"] == []
    assert data["solution_only_modules"] == ["LeanPool"]


def test_names_a_drifted_workspace_pin(outside: Path) -> None:
    result = validate_catalog(changed_benchmark(outside, drift_pin))
    assert result.exit_code == 1
    assert "workspaces/two_plus_two/lake-manifest.json: package pins" in result.output
    assert "mathlib" in result.output
    assert "workspaces/double_def" not in result.output


def test_names_a_package_pinned_at_another_rev(outside: Path) -> None:
    """Same package, same URL, another commit in one workspace: still a drifted pin."""
    package = {"name": "batteries", "type": "git", "rev": "1" * 40,
               "url": "https://github.com/leanprover-community/batteries"}

    def change(root: Path) -> None:
        for path in [root / "lake-manifest.json",
                     *sorted((root / "workspaces").glob("*/lake-manifest.json"))]:
            manifest = json.loads(path.read_text())
            rev = "2" * 40 if path.parent.name == "multi_hole" else package["rev"]
            manifest["packages"] = [{**package, "rev": rev}]
            path.write_text(json.dumps(manifest))

    result = validate_catalog(changed_benchmark(outside, change))
    assert result.exit_code == 1
    assert "workspaces/multi_hole/lake-manifest.json: package pins" in result.output
    assert "2222222222" in result.output
    assert result.output.count("lake-manifest.json") == 1


def test_names_a_drifted_require_and_toolchain(outside: Path) -> None:
    def change(root: Path) -> None:
        with (root / "workspaces" / "double_def" / "lakefile.toml").open("a") as handle:
            handle.write('\n[[require]]\nname = "batteries"\npath = "../batteries"\n')
        (root / "workspaces" / "multi_hole" / "lean-toolchain").write_text(
            "leanprover/lean4:v4.35.1\n")

    result = validate_catalog(changed_benchmark(outside, change))
    assert result.exit_code == 1
    assert "workspaces/double_def/lakefile.toml: [[require]] entries differ" in result.output
    assert "workspaces/multi_hole/lean-toolchain: differs from the root" in result.output


def test_names_a_mismatched_hole_name(outside: Path) -> None:
    def change(root: Path) -> None:
        edit(root / "workspaces" / "double_def" / "config.json", '"double_eq"', '"double_eq2"')
        edit(root / "workspaces" / "add_comm_explicit" / "Challenge.lean",
             "theorem add_comm_explicit", "theorem add_comm_explicit'")

    result = validate_catalog(changed_benchmark(outside, change))
    assert result.exit_code == 1
    assert "workspaces/double_def/config.json: theorem_names" in result.output
    assert ("workspaces/add_comm_explicit/Challenge.lean: declares no theorem hole "
            "'add_comm_explicit'") in result.output


def test_names_a_config_naming_a_module_the_workspace_lacks(outside: Path) -> None:
    result = validate_catalog(changed_benchmark(outside, lambda root: edit(
        root / "workspaces" / "widget_instance" / "config.json", '"Solution"', '"Bridge"')))
    assert result.exit_code == 1
    assert ("workspaces/widget_instance/config.json: solution_module 'Bridge' is not a module "
            "of the workspace") in result.output


def test_names_a_bridge_and_starter_that_disagree(outside: Path) -> None:
    def change(root: Path) -> None:
        edit(root / "workspaces" / "two_plus_two" / "Solution.lean",
             "Submission.two_plus_two", "Submission.other")
        edit(root / "workspaces" / "multi_hole" / "Submission.lean",
             "theorem base_value", "theorem base_value'")

    result = validate_catalog(changed_benchmark(outside, change))
    assert result.exit_code == 1
    assert ("workspaces/two_plus_two/Solution.lean: bridge 'two_plus_two' does not use "
            "Submission.two_plus_two") in result.output
    assert ("workspaces/multi_hole/Submission.lean: starter declares no theorem "
            "Submission.base_value") in result.output


def test_names_a_starter_or_bridge_stating_a_hole_differently(outside: Path) -> None:
    def change(root: Path) -> None:
        edit(root / "workspaces" / "two_plus_two" / "Submission.lean", ": 2 + 2 = 4", ": 2 + 2 = 5")
        edit(root / "workspaces" / "double_def" / "Solution.lean", "(n : Nat)", "(m : Nat)")

    result = validate_catalog(changed_benchmark(outside, change))
    assert result.exit_code == 1
    assert ("workspaces/two_plus_two/Submission.lean: starter states Submission.two_plus_two "
            "as ': 2 + 2 = 5', Challenge.lean as ': 2 + 2 = 4'") in result.output
    assert "workspaces/double_def/Solution.lean: bridge states 'double'" in result.output


@pytest.mark.parametrize("name", ["Challenge.lean", "ChallengeDeps.lean"])
def test_names_trusted_lean_importing_the_solution_only_package(outside: Path,
                                                                name: str) -> None:
    def change(root: Path) -> None:
        path = root / "workspaces" / "widget_instance" / name
        path.write_text("/- a header comment -/\nimport LeanPool.Basic\n" + path.read_text())

    result = validate_catalog(changed_benchmark(outside, change))
    assert result.exit_code == 1
    assert (f"workspaces/widget_instance/{name}: imports LeanPool.Basic, which benchmark.toml "
            "declares solution-only") in result.output


def test_a_trusted_header_the_checker_refuses_is_a_fault(outside: Path) -> None:
    """An escaped module name could hide a solution-only import: fail closed, as for
    submissions (the same parser reads both)."""
    def change(root: Path) -> None:
        path = root / "workspaces" / "widget_instance" / "Challenge.lean"
        path.write_text("import «LeanPool».Basic\n" + path.read_text())

    result = validate_catalog(changed_benchmark(outside, change))
    assert result.exit_code == 1
    assert "workspaces/widget_instance/Challenge.lean: import header" in result.output
    assert "cannot tell what it imports" in result.output


def test_names_a_stale_digest_and_an_edited_benchmark_config(outside: Path) -> None:
    def change(root: Path) -> None:
        edit(root / "workspaces" / "two_plus_two" / "README.md", "#", "##")
        edit(root / "benchmark.toml", '["LeanPool"]', "[]")

    result = validate_catalog(changed_benchmark(outside, change, reindex=False))
    assert result.exit_code == 1
    assert ("workspaces/two_plus_two/README.md: differs from its digest in "
            "workspaces/index.json") in result.output
    assert "benchmark.toml: differs from its digest" in result.output


def _with_auxiliary(root: Path, bridge_repeat: str, starter_repeat: str) -> None:
    """two_plus_two with an auxiliary (non-hole) definition in its Challenge, repeated by the
    bridge and the starter as the lean-eval generator writes them."""
    ws = root / "workspaces" / "two_plus_two"
    edit(ws / "Challenge.lean", "/-- Hole (theorem)",
         "def Scale (r : Nat) (f : Nat → Nat) : Nat := f (r + 0)\n\n/-- Hole (theorem)")
    edit(ws / "Solution.lean", "theorem two_plus_two", bridge_repeat + "\n\ntheorem two_plus_two")
    edit(ws / "Submission.lean", "theorem two_plus_two",
         starter_repeat + "\n\ntheorem two_plus_two")


def test_bridges_and_starters_may_repeat_challenge_declarations_verbatim(outside: Path) -> None:
    repeat = "def Scale (r : Nat) (f : Nat → Nat) : Nat := f (r + 0)"
    result = validate_catalog(changed_benchmark(
        outside, lambda root: _with_auxiliary(root, repeat, repeat)))
    assert result.exit_code == 0, result.output


def test_a_repeat_stating_a_challenge_declaration_differently_names_both_files(
        outside: Path) -> None:
    good = "def Scale (r : Nat) (f : Nat → Nat) : Nat := f (r + 0)"
    bad = "def Scale (r : Nat) (f : Nat → Nat) : Int := f (r + 0)"
    result = validate_catalog(changed_benchmark(
        outside, lambda root: _with_auxiliary(root, bad, good)))
    assert result.exit_code == 1
    lines = [ln for ln in result.output.splitlines() if "Scale" in ln]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("workspaces/two_plus_two/Solution.lean: repeats 'Scale' of "
                               "workspaces/two_plus_two/Challenge.lean")
    assert "': Int'" not in lines[0] and "Int" in lines[0]
    result = validate_catalog(changed_benchmark(
        outside / "s", lambda root: _with_auxiliary(root, good, bad)))
    assert result.exit_code == 1
    assert ("workspaces/two_plus_two/Submission.lean: repeats 'Scale' of "
            "workspaces/two_plus_two/Challenge.lean") in result.output


def test_a_change_after_a_named_argument_in_a_bridge_is_a_fault(outside: Path) -> None:
    def change(root: Path) -> None:
        ws = root / "workspaces" / "two_plus_two"
        for name in ("Challenge.lean", "Solution.lean", "Submission.lean"):
            edit(ws / name, "2 + 2 = 4", "Nat.add (n := 2) 2 = 4")
    assert validate_catalog(changed_benchmark(outside, change)).exit_code == 0

    def mutate(root: Path) -> None:
        change(root)
        edit(root / "workspaces" / "two_plus_two" / "Solution.lean", "(n := 2) 2", "(n := 2) 3")
    result = validate_catalog(changed_benchmark(outside / "m", mutate))
    assert result.exit_code == 1
    assert ("workspaces/two_plus_two/Solution.lean: bridge states 'two_plus_two' as "
            "': Nat.add (n := 2) 3 = 4', Challenge.lean as ': Nat.add (n := 2) 2 = 4'"
            ) in result.output


def test_a_theorem_hole_may_be_a_prop_valued_instance(outside: Path) -> None:
    def change(root: Path) -> None:
        ws = root / "workspaces" / "two_plus_two"
        for name in ("Challenge.lean", "Solution.lean", "Submission.lean"):
            edit(ws / name, "theorem two_plus_two : 2 + 2 = 4",
                 "instance two_plus_two : Fact (2 + 2 = 4)")
    result = validate_catalog(changed_benchmark(outside, change))
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(("old", "new", "fault"), [
    ('defaultTargets = ["Challenge"]', 'defaultTargets = ["Challenge", "Solution"]',
     "defaultTargets includes 'Solution', which builds submitted code"),
    ('globs = ["Submission", "Submission.+"]', "",
     "[[lean_lib]] 'Submission' must have globs"),
    ('defaultTargets = ["Challenge"]',
     'defaultTargets = ["Challenge"]\ntestDriver = "workspace_test"\n\n[[lean_exe]]\n'
     'name = "workspace_test"\nroot = "WorkspaceTest"',
     "[[lean_exe]] 'workspace_test' root 'WorkspaceTest' has no file WorkspaceTest.lean"),
    ('name = "Solution"', 'name = "Solutions"', "declares no [[lean_lib]] 'Solution'"),
])
def test_names_a_workspace_lakefile_the_harness_cannot_rely_on(outside: Path, old: str,
                                                                new: str, fault: str) -> None:
    def change(root: Path) -> None:
        text = (root / "workspaces" / "multi_hole" / "lakefile.toml").read_text()
        assert old in text
        if "[[lean_exe]]" in new:  # the driver's lines go up top, its target at the end
            head, tail = new.split("\n\n", 1)
            text = text.replace(old, head) + "\n" + tail + "\n"
        else:
            text = text.replace(old, new)
        (root / "workspaces" / "multi_hole" / "lakefile.toml").write_text(text)
    result = validate_catalog(changed_benchmark(outside, change))
    assert result.exit_code == 1
    assert f"workspaces/multi_hole/lakefile.toml: {fault}" in result.output, result.output
