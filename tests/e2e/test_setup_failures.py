"""Setup failures exit 2 and score nothing (design §4.5): trusted files, configs and catalogs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support import CORRECT, RunEval, rehash_trusted


def _copy(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest)
    return dest


def _assert_nothing_scored(run_out: Path) -> None:
    assert not run_out.exists() or not any(run_out.rglob("*.json"))


def test_tampered_trusted_file_is_refused(outside: Path, bench_copy: Path, bwrap: str) -> None:
    bench = _copy(bench_copy, outside / "bench")
    challenge = bench / "workspaces" / "two_plus_two" / "Challenge.lean"
    challenge.write_text(challenge.read_text().replace("2 + 2 = 4", "True"))
    run = RunEval(bench, outside)(CORRECT)
    assert run.code == 2
    assert "workspaces/two_plus_two/Challenge.lean" in run.result.output
    assert "index.json" in run.result.output
    _assert_nothing_scored(run.out)


def test_untampered_copy_scores(outside: Path, bench_copy: Path, bwrap: str) -> None:
    """Control for the tamper tests: the same copy, untouched, is accepted."""
    bench = _copy(bench_copy, outside / "bench")
    run = RunEval(bench, outside)(CORRECT, extra=("--problem", "two_plus_two"))
    assert run.code == 0, run.result.output


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda t: t.replace('"challenge_module": "Challenge"',
                             '"challenge_module": "Challenge", "challenge_module": "X"'),
         "duplicate key 'challenge_module'"),
        (lambda t: t.replace('"enable_nanoda": false', '"enable_nanoda": NaN'), "non-finite"),
    ],
    ids=["duplicate-key", "nan"],
)
def test_malformed_trusted_config_is_refused(outside: Path, bench_copy: Path, bwrap: str,
                                             mutate: object, fragment: str) -> None:
    bench = _copy(bench_copy, outside / "bench")
    config = bench / "workspaces" / "two_plus_two" / "config.json"
    config.write_text(mutate(config.read_text()))  # type: ignore[operator]
    rehash_trusted(bench, "two_plus_two", "config.json")
    run = RunEval(bench, outside)(CORRECT)
    assert run.code == 2, run.result.output
    assert fragment in run.result.output and "two_plus_two/config.json" in run.result.output
    _assert_nothing_scored(run.out)


def test_unknown_problem_filter_is_refused(run_eval: RunEval) -> None:
    run = run_eval(CORRECT, extra=("--problem", "no_such_problem"))
    assert run.code == 2 and "no_such_problem" in run.result.output


def test_missing_submission_path_is_refused(run_eval: RunEval, outside: Path) -> None:
    run = run_eval(outside / "nope")
    assert run.code == 2 and str(outside / "nope") in run.result.output


def test_committed_revision_is_what_scores(outside: Path, bwrap: str) -> None:
    """A dirty working tree in trusted paths is reported and not used (design §5.1)."""
    from support import REPO

    from lean_eval.benchmark import catalog

    if not (REPO / ".git").exists():
        pytest.skip("the repository is not a git checkout here")
    cat = catalog.load_catalog(REPO, revision="HEAD")
    assert cat.commit is not None and len(cat.commit) == 40
    assert set(cat.problems) >= {"two_plus_two"}


def test_toolchain_inside_the_work_dir_is_refused(run_eval: RunEval, outside: Path) -> None:
    from support import STANDIN

    work = outside / "work"
    shutil.copytree(STANDIN, work / "tc")
    run = run_eval(CORRECT, toolchain=work / "tc", extra=("--work-dir", str(work)))
    assert run.code == 2, run.result.output
    assert "lies inside a writable scoring directory" in run.result.output
    _assert_nothing_scored(run.out)


def test_a_pin_drift_in_a_workspace_not_selected_is_refused(outside: Path, bench_copy: Path,
                                                           bwrap: str) -> None:
    """Pins are checked for the whole catalog, not only the --problem selection (design §5.1):
    a drift committed in another workspace (index regenerated) refuses the run, naming it."""
    bench = _copy(bench_copy, outside / "bench")
    pin = bench / "workspaces" / "double_def" / "lean-toolchain"
    pin.write_text("leanprover/lean4:v4.0.0\n")
    rehash_trusted(bench, "double_def", "lean-toolchain")
    run = RunEval(bench, outside)(CORRECT, extra=("--problem", "two_plus_two"))
    assert run.code == 2, run.result.output
    assert "workspaces/double_def/lean-toolchain differs from the root lean-toolchain" \
        in run.result.output
    assert "(workspace double_def)" in run.result.output
    assert "Traceback" not in run.result.output
    _assert_nothing_scored(run.out)


def test_missing_toolchain_and_bwrap_are_named_in_one_message(run_eval: RunEval,
                                                              outside: Path) -> None:
    """Neither can be used: the one error says both, not only the first it met."""
    empty = outside / "emptybin"
    empty.mkdir()
    run = run_eval(CORRECT, toolchain=None, env={
        "HOME": str(outside), "ELAN_HOME": str(outside), "XDG_DATA_HOME": str(outside / "data"),
        "LEAN_EVAL_TOOLCHAIN": "", "LEAN_EVAL_BWRAP": "", "PATH": str(empty)})
    assert run.code == 2, run.result.output
    (line,) = [x for x in run.result.output.splitlines() if x.startswith("lean-eval: error:")]
    assert "leanprover/lean4:v4.35.0 is not installed" in line
    assert "Also, bubblewrap (bwrap) was found neither in" in line
    assert str(outside / "data" / "lean-eval" / "bwrap" / "bin") in line
    assert "nor on the filtered PATH" in line
    _assert_nothing_scored(run.out)
