"""lean_eval.api: the example submissions scored, checked and read back without the CLI
(issue: a documented Python API). Scoring through it (the stand-in toolchain, real bubblewrap)
is in tests/e2e/test_api_e2e.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from support import BWRAP_FLOOR, CORRECT, PROBLEMS, REPO, STANDIN

import lean_eval
from lean_eval import api, errors
from lean_eval.cli import main
from lean_eval.scoring.request import FLAGS
from lean_eval.supervise import process

API_DOC = REPO / "docs" / "api.md"  # the Python API's page (README links it)


def test_validate_submission_checks_without_lean(bench_copy: Path) -> None:
    check = api.validate_submission(CORRECT, benchmark=bench_copy)
    assert isinstance(check, api.SubmissionCheck)
    assert check.ok and check.submission_id == "correct"
    assert {p.problem_id: p.outcome for p in check.problems} == dict.fromkeys(PROBLEMS, "scored")
    narrowed = api.validate_submission(CORRECT, benchmark=bench_copy, problems=["two_plus_two"])
    assert [p.problem_id for p in narrowed.problems] == ["two_plus_two"]
    # The limits are honoured: every file over 16 bytes rejects its own problem.
    tight = api.validate_submission(CORRECT, benchmark=bench_copy,
                                    limits=api.IntakeLimits(max_file_bytes=16))
    assert not tight.ok
    assert {p.outcome for p in tight.problems} == {"invalid_submission"}


def test_load_catalog_reads_and_narrows_the_benchmark(bench_copy: Path) -> None:
    cat = api.load_catalog(bench_copy)
    assert isinstance(cat, api.Catalog)
    assert sorted(cat.problems) == sorted(PROBLEMS)
    assert cat.toolchain_name == (bench_copy / "lean-toolchain").read_text().strip()
    assert list(api.load_catalog(bench_copy, problems=["two_plus_two"]).problems) == [
        "two_plus_two"]


def test_setup_errors_are_typed_and_nothing_is_printed(
        bench_copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    # usable tools, so each call below has exactly one fault (several are one SetupError)
    tools = {"toolchain": STANDIN, "allow_bwrap_version": BWRAP_FLOOR}
    with pytest.raises(api.UsageError, match="does not exist"):
        api.score([tmp_path / "missing"], out, env=os.environ, benchmark=bench_copy, **tools)
    with pytest.raises(api.UsageError, match="unknown problem id"):
        api.score([CORRECT], out, env=os.environ, benchmark=bench_copy, problems=["two_plus_tw"],
                  **tools)
    with pytest.raises(api.UsageError, match="shard") as shard:  # the keyword, not --shard
        api.score([CORRECT], out, env=os.environ, benchmark=bench_copy, shard="3/2", **tools)
    assert "--" not in str(shard.value)
    with pytest.raises(api.UsageError, match=r"score\(\): timeout"):  # a keyword of the wrong type
        api.score([CORRECT], out, benchmark=bench_copy, timeout="soon", **tools)
    with pytest.raises(api.UsageError, match="no_such_option"):
        api.score([CORRECT], out, benchmark=bench_copy, no_such_option=1, **tools)
    # Neither tool usable: one SetupError names both (the CLI's message, exit 2 there).
    with pytest.raises(api.SetupError) as both:
        api.score([CORRECT], out, env=os.environ, benchmark=bench_copy,
                  toolchain=tmp_path / "no-lean", bwrap=str(tmp_path / "no-bwrap"))
    assert "no-lean" in str(both.value) and "no-bwrap" in str(both.value)
    with pytest.raises(api.CatalogError):
        api.load_catalog(tmp_path)
    with pytest.raises(api.UsageError, match=r"summary\.json"):
        api.read_output(tmp_path)
    (tmp_path / "sub.zip").write_bytes(b"PK")
    with pytest.raises(api.UsageError, match="not supported"):
        api.validate_submission(tmp_path / "sub.zip", benchmark=bench_copy)
    assert not out.exists()  # nothing was scored, so nothing was written
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "")


def test_run_eval_scores_through_the_api_with_the_request_it_builds(
        bench_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def recorded(*args: Any, **kwargs: Any) -> api.Summary:
        calls.append((args, kwargs))
        raise api.UsageError("stopped by the test")

    monkeypatch.setattr(api, "run_request", recorded)
    result = CliRunner().invoke(main, [
        "run-eval", str(CORRECT), "--out", str(tmp_path / "out"), "--benchmark",
        str(bench_copy), "--problem", "two_plus_two,double_def", "--jobs", "3"],
        catch_exceptions=False)
    assert result.exit_code == 2
    assert "lean-eval: error: stopped by the test" in result.output
    ((args, _),) = calls
    request = args[0]
    assert isinstance(request, api.ScoreRequest)
    assert request.submissions == (CORRECT,) and request.out == tmp_path / "out"
    assert request.problems == ("two_plus_two", "double_def") and request.jobs == 3


# What run-eval spells differently (its parameter name -> score's); the intake limits are
# score's one `limits` model; the rest prints or sets the exit code, which the API leaves to
# its caller.
RENAMED = {"out_dir": "out", "bwrap_path": "bwrap", "allow_bwrap": "allow_bwrap_version",
           "shard_text": "shard"}
LIMIT_FIELDS = {"max_file_bytes": "max_file_bytes", "max_total_bytes": "max_total_bytes",
                "max_files": "max_files", "max_depth": "max_depth",
                "max_archive_bytes": "max_archive_bytes", "intake_timeout": "intake_seconds"}
CLI_ONLY = {"as_json", "verbose", "quiet", "fail_on", "exit_zero"}


def _cli_default(param: click.Parameter) -> Any:
    default = param.default
    if default is getattr(click.core, "UNSET", None):  # click >= 8.3: no default given
        return None
    if isinstance(default, str) and not isinstance(param.type, click.types.StringParamType):
        default = param.type.convert(default, param, None)
    return default or None  # an empty or false default means "not asked for", like None


def test_the_request_takes_every_run_eval_option_with_the_same_default() -> None:
    command = main.commands["run-eval"]
    fields = api.ScoreRequest.model_fields
    for param in command.params:
        name = param.name
        assert name is not None
        if name in CLI_ONLY:
            continue
        if name in LIMIT_FIELDS:
            expected = api.IntakeLimits.model_fields[LIMIT_FIELDS[name]].default
            assert _cli_default(param) == expected, name
            continue
        target = RENAMED.get(name, name)
        assert target in fields, f"run-eval {name} has no ScoreRequest field"
        if param.required:
            continue
        api_default = fields[target].default
        assert _cli_default(param) == (api_default or None), name
    assert fields["limits"].default == api.IntakeLimits()
    assert set(FLAGS) == set(fields) - {"submissions", "limits"}  # each field's option named
    options = {opt for param in command.params for opt in param.opts}
    assert set(FLAGS.values()) <= options


def _readme_api_section() -> str:
    return API_DOC.read_text(encoding="utf-8")


def test_every_exported_name_exists_and_the_readme_lists_it() -> None:
    assert len(set(api.__all__)) == len(api.__all__)
    missing = [name for name in api.__all__ if not hasattr(api, name)]
    assert missing == []
    fault_classes = {name for name, value in vars(errors).items()
                     if isinstance(value, type) and issubclass(value, errors.LeanEvalError)}
    assert fault_classes | {"ProbesFailedError"} <= set(api.__all__)
    section = _readme_api_section()
    unlisted = [name for name in api.__all__
                if f"`{name}`" not in section and f"`{name}(" not in section]
    assert unlisted == [], "docs/api.md must name every api.__all__ entry"
    assert "semver" in section.lower() or "semantic versioning" in section.lower()
    for name in ("score", "validate_submission", "load_catalog", "read_output"):
        assert (getattr(api, name).__doc__ or "").strip(), name


def test_import_lean_eval_stays_cheap_and_api_is_reachable_from_it() -> None:
    code = ("import sys, lean_eval\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'rich')"
            " or m.startswith('lean_eval.'))\n"
            "print('HEAVY', heavy)\n"
            "print('SCORE', lean_eval.api.score.__name__)\n")
    done = process.run_capture((sys.executable, "-c", code), env={"PYTHONPATH": str(REPO)},
                               cwd=REPO, timeout=60)
    assert done.returncode == 0, done.stdout
    assert b"HEAVY []" in done.stdout and b"SCORE score" in done.stdout, done.stdout[-500:]
    assert lean_eval.api is api


def test_a_request_record_or_keywords_and_the_tools_the_environment_names(
        bench_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    missing = tmp_path / "missing"
    request = api.ScoreRequest(submissions=(missing,), out=out, benchmark=bench_copy,
                               toolchain=STANDIN, allow_bwrap_version=BWRAP_FLOOR)
    with pytest.raises(api.UsageError, match="does not exist"):
        api.score(request)
    with pytest.raises(api.UsageError, match="not both"):
        api.score(request, timeout=5.0)
    # LEAN_EVAL_TOOLCHAIN and LEAN_EVAL_BWRAP name the tools as they do for run-eval...
    env = {**os.environ, "LEAN_EVAL_TOOLCHAIN": str(tmp_path / "env-lean"),
           "LEAN_EVAL_BWRAP": str(tmp_path / "env-bwrap")}
    with pytest.raises(api.SetupError) as named:
        api.score([CORRECT], out, env=env, benchmark=bench_copy)
    assert "env-lean" in str(named.value) and "env-bwrap" in str(named.value)
    # ...unless a keyword names one, and env defaults to the process environment
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(api.SetupError) as given:
        api.score([CORRECT], out, benchmark=bench_copy, toolchain=tmp_path / "kw-lean")
    assert "kw-lean" in str(given.value) and "env-lean" not in str(given.value)
    assert "env-bwrap" in str(given.value)
    assert not out.exists()
