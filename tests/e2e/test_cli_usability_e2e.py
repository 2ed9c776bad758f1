"""What a newcomer meets first: help, common options, environment defaults, byte sizes."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from support import (
    BWRAP_FLOOR,
    REPO,
    STANDIN,
    correct,
    make_submission,
    with_lines,
)

from lean_eval.cli import main, options
from lean_eval.outputs.report.run_report import FORMATS
from lean_eval.probes import registry
from lean_eval.records import documents

# --- items 2, 3 and 5: -v, -q, readable probe lines, JSON documents, no litter -------------

UNSANDBOXED = """#!/bin/sh
[ "$1" = --version ] && { echo 'bubblewrap 0.12.0'; exit 0; }
while [ "$#" -gt 0 ] && [ "$1" != -- ]; do shift; done
shift
exec "$@"
"""


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--toolchain", str(STANDIN),
                                     "--allow-bwrap-version", BWRAP_FLOOR], catch_exceptions=False)


def _probe(bench: Path, outside: Path, *args: str) -> Result:
    return _invoke("probe", "--benchmark", str(bench), "--work-dir", str(outside / "w"), *args)


@pytest.mark.slow
@pytest.mark.usefixtures("replayed_probes")  # how results are printed, not the probes
def test_probe_prints_one_line_per_probe_and_details_under_verbose(
        bench_copy: Path, outside: Path, bwrap: str) -> None:
    plain = _probe(bench_copy, outside, "--only", "env_dump", "--only", "tool_path")
    assert plain.exit_code == 0, plain.output
    lines = plain.stdout.splitlines()
    assert [line.split()[:3] for line in lines] == [["probe", "env_dump", "pass"],
                                                    ["probe", "tool_path", "pass"]]
    assert all(line.endswith(" s") for line in lines)
    verbose = _probe(bench_copy, outside, "--only", "env_dump", "-v")
    assert verbose.exit_code == 0
    assert len(verbose.stdout.splitlines()) > 2 and "ok     " in verbose.stdout
    quiet = _probe(bench_copy, outside, "--only", "env_dump", "-q")
    assert (quiet.exit_code, quiet.output) == (0, "")


@pytest.mark.usefixtures("replayed_probes")
def test_probe_json_is_a_versioned_document(bench_copy: Path, outside: Path,
                                            bwrap: str) -> None:
    result = _probe(bench_copy, outside, "--only", "env_dump", "--json", "-q")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert next(iter(data)) == "schema_version"
    report = documents.ProbeReport.model_validate(data)
    assert report.ok and report.probes[0].checks and report.probes[0].seconds > 0


def test_a_failing_probe_prints_its_failing_checks_in_full(
        bench_copy: Path, outside: Path, bwrap: str) -> None:
    fake = outside / "fakebin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text(UNSANDBOXED)
    fake.chmod(0o755)
    for quiet in ((), ("-q",)):
        result = _probe(bench_copy, outside, "--only", "sandbox_engaged", "--bwrap", str(fake),
                        *quiet)
        assert result.exit_code == 1
        assert result.output.splitlines()[0].split()[:3] == ["probe", "sandbox_engaged", "fail"]
        failed = [line for line in result.output.splitlines() if "FAILED" in line]
        assert failed and "…" not in result.output and "..." not in result.output


def _run_with_probes(bench: Path, outside: Path, *args: str) -> Result:
    sub = make_submission(outside, "sub", {"two_plus_two": {
        "Submission.lean": (REPO / "examples/submissions/correct/two_plus_two/Submission.lean"
                            ).read_text()}})
    return _invoke("run-eval", str(sub), "--out", str(outside / "out"), "--benchmark",
                   str(bench), "--problem", "two_plus_two", "--work-dir", str(outside / "w"),
                   *args)


@pytest.mark.slow
@pytest.mark.usefixtures("replayed_probes")  # the probes' output, not the probes, is tested
def test_preflight_prints_one_line_per_probe_and_records_details(
        bench_copy: Path, outside: Path, bwrap: str) -> None:
    result = _run_with_probes(bench_copy, outside)
    assert result.exit_code == 0, result.output
    probe_lines = [line for line in result.stderr.splitlines() if line.startswith("probe ")]
    assert len(probe_lines) == len(registry.PROBE_NAMES)
    assert not any("ok     " in line for line in result.stderr.splitlines())
    summary = json.loads((outside / "out" / "summary.json").read_text())
    for entry in summary["preflight"]["probes"]:
        assert entry["checks"] and entry["seconds"] > 0
        assert all(c["ok"] and c["evidence"] for c in entry["checks"])


def _workspace(bench: Path, outside: Path, text: str) -> Path:
    ws = outside / "ws"
    shutil.copytree(bench / "workspaces" / "two_plus_two", ws)
    (ws / "Submission.lean").write_text(text)
    return ws


def _lean_eval_temp() -> set[str]:
    # only what `lean-eval test` creates: other tests may run alongside this one
    return {p.name for p in Path(tempfile.gettempdir()).glob("lean-eval-test-*")}


def test_test_command_cleans_up_or_says_where_it_kept(bench_copy: Path, outside: Path,
                                                      bwrap: str) -> None:
    ws = _workspace(bench_copy, outside, correct("two_plus_two"))
    before = _lean_eval_temp()
    plain = _invoke("test", str(ws))
    assert plain.exit_code == 0, plain.output
    assert plain.stdout.startswith("ws: accepted") and "kept" not in plain.output
    assert _lean_eval_temp() == before
    kept = _invoke("test", str(ws), "--keep-work")
    new = _lean_eval_temp() - before
    try:
        assert kept.exit_code == 0 and len(new) == 1
        where = Path(tempfile.gettempdir()) / new.pop()
        assert f"kept: harness files and raw log in {where}" in kept.stderr
        assert (where / "test.log").is_file()
    finally:
        for name in _lean_eval_temp() - before:
            shutil.rmtree(Path(tempfile.gettempdir()) / name)


def test_test_command_verbose_quiet_and_json(bench_copy: Path, outside: Path,
                                             bwrap: str) -> None:
    ws = _workspace(bench_copy, outside, correct("two_plus_two"))
    verbose = _invoke("test", str(ws), "-v")
    assert verbose.exit_code == 0 and "kernels: nanoda accepted" in verbose.stdout
    quiet = _invoke("test", str(ws), "-q")
    assert (quiet.exit_code, quiet.output) == (0, "")
    data = json.loads(_invoke("test", str(ws), "--json").stdout)
    assert next(iter(data)) == "schema_version"
    assert documents.WorkspaceTestReport.model_validate(data).log is None
    assert "--benchmark" not in _invoke("test", "-h").output


@pytest.mark.slow
def test_selfcheck_verbose_quiet_and_json(bench_copy: Path, outside: Path, bwrap: str) -> None:
    args = ("check-comparator-installation", "--benchmark", str(bench_copy), "--work-dir",
            str(outside / "w"))
    quiet = _invoke(*args, "-q")
    assert (quiet.exit_code, quiet.output) == (0, "")
    plain = _invoke(*args)
    verbose = _invoke(*args, "-v")
    assert "generated files:" in verbose.stdout and "generated files:" not in plain.stdout
    data = json.loads(_invoke(*args, "--json").stdout)
    assert next(iter(data)) == "schema_version"
    assert documents.SelfCheckReport.model_validate(data).ok


def test_run_eval_quiet_prints_nothing(bench_copy: Path, outside: Path, bwrap: str) -> None:
    result = _run_with_probes(bench_copy, outside, "-q", "--skip-probes")
    assert (result.exit_code, result.output) == (0, "")


# --- startup: --help imports neither pydantic, rich nor the pipeline ------------------------


def test_help_imports_no_heavy_module() -> None:
    import sys

    from lean_eval import cli
    from lean_eval.supervise import process

    code = ("import sys, runpy; sys.argv = ['lean-eval', '--help']\n"
            "try:\n    runpy.run_module('lean_eval', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'rich')"
            " or m in ('lean_eval.scoring.batch', 'lean_eval.benchmark.catalog',"
            " 'lean_eval.records.verdict'))\n"
            "print('HEAVY', heavy)\n")
    done = process.run_capture((sys.executable, "-c", code), env={"PYTHONPATH": str(REPO)},
                               cwd=REPO, timeout=60)
    assert done.returncode == 0, done.stdout
    assert b"HEAVY []" in done.stdout, done.stdout[-500:]
    assert cli.PROBE_NAMES == registry.PROBE_NAMES
    assert options.REPORT_FORMATS == FORMATS


def test_keep_work_says_where_the_workspaces_are(bench_copy: Path, outside: Path,
                                                  bwrap: str) -> None:
    result = _run_with_probes(bench_copy, outside, "--skip-probes", "--keep-work")
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("kept: ")]
    run_dir = Path(line.split(" in ", 1)[1].split(" (", 1)[0])
    assert run_dir.parent == outside / "w"
    assert (run_dir / "sub" / "two_plus_two" / "workspace" / "Submission.lean").is_file()
    plain = _run_with_probes(bench_copy, outside / "again", "--skip-probes")
    assert "kept: " not in plain.output


# Commands without -v/-q, and why. `report` prints exactly the document asked for (like --json
# elsewhere), so there is nothing to make quieter or more verbose.


def test_environment_defaults_take_effect(bench_copy: Path, outside: Path, bwrap: str) -> None:
    ws = _workspace(bench_copy, outside, correct("two_plus_two"))
    env = {"LEAN_EVAL_TOOLCHAIN": str(STANDIN), "LEAN_EVAL_ALLOW_BWRAP_VERSION": BWRAP_FLOOR}
    result = CliRunner().invoke(main, ["test", str(ws)], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    missing = CliRunner().invoke(main, ["test", str(ws)],
                                 env={**env, "LEAN_EVAL_BWRAP": str(outside / "no-bwrap")},
                                 catch_exceptions=False)
    assert missing.exit_code == 2 and "no-bwrap" in missing.output
    flag_wins = CliRunner().invoke(main, ["test", str(ws), "--toolchain", str(outside)],
                                   env=env, catch_exceptions=False)
    assert flag_wins.exit_code == 2 and "bin/lake" in flag_wins.output


@pytest.mark.slow
@pytest.mark.usefixtures("replayed_probes")
def test_run_eval_verbose_shows_every_probe_check(bench_copy: Path, outside: Path,
                                                  bwrap: str) -> None:
    result = _run_with_probes(bench_copy, outside, "-v")
    assert result.exit_code == 0, result.output
    checks = [line for line in result.stderr.splitlines() if line.startswith("    ok ")]
    summary = json.loads((outside / "out" / "summary.json").read_text())
    assert len(checks) == sum(len(p["checks"]) for p in summary["preflight"]["probes"])


def test_test_timeout_and_work_dirs_take_effect(bench_copy: Path, outside: Path,
                                                bwrap: str) -> None:
    ws = _workspace(bench_copy, outside, with_lines("two_plus_two", "-- standin-io: sleep 20"))
    result = _invoke("test", str(ws), "--timeout", "2", "-v")  # the outcome shows it applied:
    assert result.exit_code == 1 and "execution timed_out" in result.stdout, result.output
    probes = _probe(bench_copy, outside, "--only", "env_dump", "-q")
    assert probes.exit_code == 0 and (outside / "w").is_dir()
    assert not any((outside / "w").iterdir())  # the probes' scratch is removed afterwards


# --- issue 16 item 8: one error style, no wrapping without a terminal, names and messages -----


# The arguments each command that takes --benchmark needs besides it (default: none).
# Commands that read something else before the benchmark, and what. (They load it with the
# same cli._load, so they say the same.)


def test_test_names_a_verdict_once(bench_copy: Path, outside: Path, bwrap: str) -> None:
    ws = _workspace(bench_copy, outside, correct("two_plus_two"))
    result = _invoke("test", str(ws))
    assert result.exit_code == 0, result.output
    (line,) = result.stdout.splitlines()
    assert line.startswith("ws: accepted: ") and "(accepted)" not in line, line
