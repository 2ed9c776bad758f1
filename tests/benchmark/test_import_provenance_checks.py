"""What a fresh ``import-catalog`` of a git checkout checks beyond its files (issue 31 item 3).

Provenance that holds: a work tree that differs from its commit in what the import takes (a
tracked file changed, staged, deleted, or an untracked file the import reads) is refused
naming every path, and ``--allow-dirty`` imports it recording the paths in
``provenance.json`` and the loaded catalog; a clean checkout, an untracked file the import does
not read and a file git ignores are no difference.

Revisions that hold: each problem whose trusted statement changed since the commit that set its
``statement_revision`` is a warning (exit 0) naming the problem and both commits, in either
manifest layout; a bumped revision, a comment, and a change reverted later are none.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
import tomli_w
import tomllib
from click.testing import CliRunner, Result
from support import SOURCE
from support.histories import History, git

from lean_eval.benchmark import catalog, importer, provenance
from lean_eval.cli import main
from lean_eval.errors import CatalogError

STATEMENT = "generated/scaled_norm/Challenge.lean"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, ["import-catalog", *args], catch_exceptions=False)


def checkout(tmp_path: Path) -> History:
    h = History(tmp_path / "src", copy_of=SOURCE)
    h.write(".gitignore", "generated/*/lake-manifest.json\ngenerated/*/build/\n")
    h.commit("the fixture source")
    return h


def revise(h: History, rel: str = STATEMENT, extra: str = "theorem added_lemma : True") -> None:
    path = h.root / rel
    path.write_text(path.read_text() + f"\n{extra} := trivial\n")


def bump(h: History, pid: str, revision: int) -> None:
    rel = f"manifests/problems/{pid}.toml"
    table = tomllib.loads((h.root / rel).read_text())
    history = [*table.get("revision_history", []),
               {"revision": revision, "effective_date": "2026-04-01",
                "reason": "statement-change"}]
    h.write(rel, tomli_w.dumps({**table, "statement_revision": revision,
                                "revision_history": history}))


def unbumped(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if "without a new statement_revision"
            in line]


# --- uncommitted changes ----------------------------------------------------------------------


@pytest.mark.parametrize("change", ["modified", "staged", "deleted", "untracked-read",
                                    "outside-the-catalog"])
def test_a_work_tree_that_differs_from_its_commit_is_refused_naming_the_paths(
        tmp_path: Path, change: str) -> None:
    h = checkout(tmp_path)
    path = {"modified": STATEMENT, "staged": STATEMENT,
            "deleted": "generated/widget_facts/README.md",
            "untracked-read": "generated/scaled_norm/ChallengeDeps.lean",
            "outside-the-catalog": "Fixture/Tool.lean"}[change]
    if change == "deleted":
        h.remove(path)
    elif change == "untracked-read":
        h.write(path, "import Mathlib\n\ndef helper : Nat := 1\n")
    else:
        revise(h, path)
    if change == "staged":
        git(h.root, "add", path)
    dest = tmp_path / "bench"
    result = invoke(str(h.root), str(dest))
    assert result.exit_code == 2, result.output
    assert "differs from its commit" in result.stderr and path in result.stderr
    assert "--allow-dirty" in result.stderr
    assert not dest.exists()


@pytest.mark.parametrize("extra", ["none", "untracked-unread", "ignored-read"])
def test_a_clean_work_tree_imports_and_provenance_records_no_uncommitted_paths(
        tmp_path: Path, extra: str) -> None:
    h = checkout(tmp_path)
    if extra == "untracked-unread":
        h.write("notes.txt", "a maintainer's scratch file, never imported\n")
    elif extra == "ignored-read":  # read (and dropped) by the import, ignored by git
        h.write("generated/scaled_norm/lake-manifest.json", "{}\n")
    dest = tmp_path / "bench"
    result = invoke(str(h.root), str(dest))
    assert result.exit_code == 0, result.output
    raw = json.loads((dest / "provenance.json").read_text())
    assert "uncommitted" not in raw  # the file of a clean import is as before
    assert raw["commit"] == git(h.root, "rev-parse", "HEAD")


def test_allow_dirty_imports_and_records_the_paths_in_provenance_and_the_catalog(
        tmp_path: Path) -> None:
    h = checkout(tmp_path)
    revise(h, STATEMENT, "-- a comment: still a different file")
    h.write("generated/scaled_norm/ChallengeDeps.lean", "import Mathlib\n")
    dest = tmp_path / "bench"
    result = invoke(str(h.root), str(dest), "--allow-dirty")
    assert result.exit_code == 0, result.output
    paths = sorted(["generated/scaled_norm/ChallengeDeps.lean", STATEMENT])
    assert provenance.parse((dest / "provenance.json").read_bytes()).uncommitted == tuple(paths)
    head = git(h.root, "rev-parse", "HEAD")
    assert (f"the work tree differs from its commit {head[:12]} in 2 file(s), "
            "imported as they stand and recorded in provenance.json (--allow-dirty): "
            f"{', '.join(paths)}") in result.stderr
    loaded = catalog.load_catalog(dest, revision=None)
    assert loaded.upstream_uncommitted == tuple(paths)
    assert loaded.upstream_commit == git(h.root, "rev-parse", "HEAD")


def test_the_domain_refusal_is_a_catalog_error(tmp_path: Path) -> None:
    h = checkout(tmp_path)
    revise(h)
    with pytest.raises(CatalogError, match=r"scaled_norm/Challenge\.lean"):
        importer.plan_import(h.root)
    assert importer.plan_import(h.root, allow_dirty=True).files["provenance.json"]


# --- statements changed under their revision ----------------------------------------------


def test_a_statement_changed_without_a_bump_warns_naming_the_problem_and_both_commits(
        tmp_path: Path) -> None:
    h = checkout(tmp_path)
    first = git(h.root, "rev-parse", "HEAD")
    revise(h)
    changed = h.commit("scaled_norm: an added lemma, revision kept")
    result = invoke(str(h.root), str(tmp_path / "bench"))
    assert result.exit_code == 0, result.output
    (line,) = unbumped(result)
    assert line.startswith("warning: manifests/problems/scaled_norm.toml: the trusted "
                           f"statement of 'scaled_norm' changed in {changed[:12]} ")
    assert f"revision 2 was set in {first[:12]}" in line


def test_a_bump_a_comment_and_a_reverted_change_do_not_warn(tmp_path: Path) -> None:
    h = checkout(tmp_path)
    revise(h)
    bump(h, "scaled_norm", 3)
    h.commit("scaled_norm: revised, revision 3")
    revise(h, "generated/counter_where/Challenge.lean", "-- only a comment")
    h.commit("counter_where: a comment")
    original = (h.root / "generated/widget_facts/Challenge.lean").read_text()
    revise(h, "generated/widget_facts/Challenge.lean")
    h.commit("widget_facts: changed")
    h.write("generated/widget_facts/Challenge.lean", original)
    h.commit("widget_facts: reverted")
    result = invoke(str(h.root), str(tmp_path / "bench"))
    assert result.exit_code == 0, result.output
    assert unbumped(result) == []


def test_the_commit_that_set_a_revision_is_found_across_the_manifest_layouts(
        tmp_path: Path) -> None:
    h = History(tmp_path / "src", copy_of=SOURCE)  # its history starts in the earliest layout
    tables = [{k: v for k, v in tomllib.loads((h.root / f"manifests/problems/{pid}.toml")
                                              .read_text()).items()
               if k not in ("status", "visible", "statement_revision", "tags",
                            "status_history", "revision_history", "group")}
              for pid in ("counter_where", "scaled_norm", "widget_facts")]
    later = {pid: (h.root / f"manifests/problems/{pid}.toml").read_text()
             for pid in ("counter_where", "scaled_norm", "widget_facts")}
    h.remove("manifests/problems")
    h.single_file(tables)  # the earliest layout: every problem at revision 1
    early = h.commit("one manifest file, no lifecycle keys")
    for pid, text in later.items():
        h.write(f"manifests/problems/{pid}.toml", text)
    h.remove("manifests/problems.toml")
    split = h.commit("one manifest per problem; scaled_norm at revision 2")
    revise(h)
    revise(h, "generated/counter_where/Challenge.lean")
    changed = h.commit("two statements changed, no revision bumped")
    result = invoke(str(h.root), str(tmp_path / "bench"))
    assert result.exit_code == 0, result.output
    lines = {line.split("'")[1]: line for line in unbumped(result)}
    assert sorted(lines) == ["counter_where", "scaled_norm"]
    assert f"revision 1 was set in {early[:12]}" in lines["counter_where"]
    assert f"revision 2 was set in {split[:12]}" in lines["scaled_norm"]
    assert all(f"changed in {changed[:12]} " in line for line in lines.values())


def test_an_uncommitted_statement_change_allowed_warns_as_the_work_tree(tmp_path: Path) -> None:
    h = checkout(tmp_path)
    revise(h)
    result = invoke(str(h.root), str(tmp_path / "bench"), "--allow-dirty")
    assert result.exit_code == 0, result.output
    (line,) = unbumped(result)
    assert "changed in the work tree (uncommitted)" in line


def test_a_source_that_is_no_git_checkout_is_not_walked(tmp_path: Path) -> None:
    h = checkout(tmp_path)
    revise(h)
    h.commit("changed")
    git(h.root, "archive", "-o", str(tmp_path / "src.tar"), "HEAD")
    plain = tmp_path / "plain"
    plain.mkdir()
    with tarfile.open(tmp_path / "src.tar") as tar:
        tar.extractall(plain, filter="data")
    plan = importer.plan_import(plain, commit="1" * 40)
    assert not [n for n in plan.notes if "statement_revision" in n.message]
