"""`lean-eval start-problem`: the submitter's starting point, and the path from it to a score."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from support import PROBLEMS, REPO

from lean_eval.benchmark import catalog, pins, starter
from lean_eval.cli import main

WORKSPACES = REPO / "workspaces"


def start(benchmark: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["start-problem", *args, "--benchmark", str(benchmark)],
                                catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("pid", PROBLEMS)
def test_writes_the_starters_and_read_only_references(bench_copy: Path, outside: Path,
                                                      pid: str) -> None:
    dest = outside / "mine"
    code, out, err = start(bench_copy, pid, str(dest))
    assert code == 0, err
    target = dest / pid
    for rel in ("Submission.lean", "Submission/Helpers.lean"):
        assert (target / rel).read_bytes() == (WORKSPACES / pid / rel).read_bytes()
        assert (target / rel).stat().st_mode & stat.S_IWUSR
    for rel in ("Challenge.lean", "README.md", "Solution.lean", "config.json"):
        assert (target / rel).read_bytes() == (WORKSPACES / pid / rel).read_bytes()
        assert not (target / rel).stat().st_mode & 0o222, rel
    assert sorted(p.name for p in dest.iterdir()) == [pid]  # no staging directory left behind
    for step in ("Submission.lean", f"lean-eval validate-submission {dest}",
                 f"lean-eval test {dest}/{pid}", f"tar czf YOURNAME-{pid}.tgz -C {dest}"):
        assert step in out, step


def test_default_destination_is_submission(bench_copy: Path, outside: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(outside)
    code, out, err = start(bench_copy, "two_plus_two")
    assert code == 0, err
    assert (outside / "submission" / "two_plus_two" / "Submission.lean").is_file()
    assert "lean-eval validate-submission submission\n" in out
    # a second problem goes beside the first
    assert start(bench_copy, "double_def")[0] == 0
    assert (outside / "submission" / "double_def" / "Submission.lean").is_file()


def test_refuses_to_overwrite_and_changes_nothing(bench_copy: Path, outside: Path) -> None:
    dest = outside / "mine"
    (dest / "two_plus_two").mkdir(parents=True)
    mine = dest / "two_plus_two" / "Submission.lean"
    mine.write_text("my work\n")
    code, _, err = start(bench_copy, "two_plus_two", str(dest))
    assert code == 2
    assert f"{dest / 'two_plus_two'} already exists" in err
    assert mine.read_text() == "my work\n"
    assert sorted(p.name for p in (dest / "two_plus_two").iterdir()) == ["Submission.lean"]
    assert sorted(p.name for p in dest.iterdir()) == ["two_plus_two"]
    # an empty directory of that name is refused too (rename(2) would silently replace it)
    (outside / "empty" / "two_plus_two").mkdir(parents=True)
    assert start(bench_copy, "two_plus_two", str(outside / "empty"))[0] == 2


def test_a_failure_while_writing_leaves_nothing_behind(bench_copy: Path, outside: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[Path] = []
    real_write = starter._write

    def failing(path: Path, data: bytes, mode: int) -> None:
        if len(written) == 3:
            raise OSError(28, "No space left on device")
        written.append(path)
        real_write(path, data, mode)

    monkeypatch.setattr(starter, "_write", failing)
    with pytest.raises(OSError, match="No space left"):
        starter.start_problem(catalog.load_catalog(bench_copy), "multi_hole", outside / "d")
    assert len(written) == 3
    assert list((outside / "d").iterdir()) == []


def test_unknown_problem_and_file_destination(bench_copy: Path, outside: Path) -> None:
    code, _, err = start(bench_copy, "three_plus_three", str(outside / "d"))
    assert code == 2
    assert "unknown problem id 'three_plus_three'" in err
    assert not (outside / "d").exists() or not any((outside / "d").iterdir())
    (outside / "file").write_text("x")
    code, _, err = start(bench_copy, "two_plus_two", str(outside / "file"))
    assert code == 2
    assert "file" in err


def test_json_output(bench_copy: Path, outside: Path) -> None:
    result = CliRunner().invoke(main, ["start-problem", "multi_hole", str(outside / "d"),
                                       "--benchmark", str(bench_copy), "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["problem"] == "multi_hole"
    assert data["directory"] == str(outside / "d" / "multi_hole")
    assert any(step.startswith("lean-eval validate-submission") for step in data["next"])


def test_writes_the_lake_manifest_derived_for_a_workspace_without_one(bench_copy: Path,
                                                                     outside: Path) -> None:
    import importlib.util
    (bench_copy / "workspaces" / "double_def" / "lake-manifest.json").unlink()
    spec = importlib.util.spec_from_file_location("update_index",
                                                  REPO / "scripts" / "update_index.py")
    assert spec is not None and spec.loader is not None
    update_index = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(update_index)
    assert update_index.main(["--root", str(bench_copy)]) == 0
    code, _, err = start(bench_copy, "double_def", str(outside / "mine"))
    assert code == 0, err
    written = outside / "mine" / "double_def" / "lake-manifest.json"
    expected = pins.derived_lake_manifest(
        (bench_copy / "lake-manifest.json").read_bytes(),
        (bench_copy / "workspaces" / "double_def" / "lakefile.toml").read_bytes(), "lakefile")
    assert written.read_bytes() == expected
    assert json.loads(expected)["name"] == "double_def"
