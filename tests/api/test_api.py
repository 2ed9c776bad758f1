"""lean_eval.api: the example submissions scored, checked and read back without the CLI
(issue: a documented Python API), with the stand-in toolchain and real bubblewrap."""

from __future__ import annotations

import inspect
import os
import re
import sys
from pathlib import Path
from typing import Any, NamedTuple

import click
import pytest
from click.testing import CliRunner
from support import BWRAP_FLOOR, CORRECT, PROBLEMS, REPO, STANDIN, no_survivor

import lean_eval
from lean_eval import api, errors, session
from lean_eval.cli import main
from lean_eval.probes import registry
from lean_eval.records.probe_result import ProbeResult
from lean_eval.supervise import process

INCORRECT = REPO / "examples" / "submissions" / "incorrect"
README = REPO / "README.md"


class Scored(NamedTuple):
    """One api.score of the two example submissions, and what its callbacks received."""

    out: Path
    summary: api.Summary
    events: list[api.Progress]
    probes: list[tuple[api.ProbeResult, ...]]
    warnings: list[str]


@pytest.fixture(scope="module")
def scored(bench_copy: Path, bwrap: str, tmp_path_factory: pytest.TempPathFactory) -> Scored:
    """Both example submissions, scored once through the API with its defaults: probes on."""
    del bwrap
    base = tmp_path_factory.mktemp("api")
    out = base / "out"
    events: list[api.Progress] = []
    probes: list[tuple[api.ProbeResult, ...]] = []
    warnings: list[str] = []
    summary = api.score([CORRECT, INCORRECT], out, env=os.environ, benchmark=bench_copy,
                        toolchain=STANDIN, allow_bwrap_version=BWRAP_FLOOR, timeout=60,
                        work_dir=base / "work",
                        on_progress=events.append, on_probes=probes.append,
                        on_warning=warnings.append)
    return Scored(out, summary, events, probes, warnings)


def _verdicts(summary: api.Summary) -> dict[tuple[str, str], tuple[str, str]]:
    return {(p.submission, p.problem): (p.verdict, p.reason) for p in summary.pairs}


def test_score_accepts_the_correct_and_rejects_the_incorrect_examples(scored: Scored) -> None:
    summary = scored.summary
    assert isinstance(summary, api.Summary)
    verdicts = _verdicts(summary)
    for problem in PROBLEMS:
        assert verdicts[("correct", problem)] == ("accepted", "accepted"), problem
    assert verdicts[("incorrect", "two_plus_two")] == ("rejected", "illegal_axiom")
    assert verdicts[("incorrect", "add_comm_explicit")] == ("rejected", "statement_mismatch")
    assert len(verdicts) == len(PROBLEMS) + 2
    assert summary.exit_code == 0 and not summary.interrupted
    # What the API returns is what it wrote.
    assert api.Summary.model_validate_json((scored.out / "summary.json").read_bytes()) == summary
    no_survivor(scored.out)


def test_score_runs_the_probes_and_reports_through_its_callbacks(scored: Scored) -> None:
    (entries,) = scored.probes  # once, before any pair
    assert [e.name for e in entries] == list(registry.PROBE_NAMES)
    assert all(e.status == "pass" for e in entries), entries
    assert scored.summary.preflight.skipped is False
    assert [p.name for p in scored.summary.preflight.probes] == list(registry.PROBE_NAMES)
    finished = [e.verdict for e in scored.events if e.verdict is not None]
    assert sorted((v.submission.id, v.problem.id) for v in finished) == sorted(
        _verdicts(scored.summary))
    last = scored.events[-1]
    assert last.done == last.total == len(scored.summary.pairs)
    assert scored.warnings == []  # the benchmark copy is no git checkout: nothing is dirty


def test_read_output_gives_the_summary_and_every_verdict(scored: Scored) -> None:
    run = api.read_output(scored.out)
    assert isinstance(run, api.Run)
    assert run.summary == scored.summary
    assert len(run.verdicts) == len(scored.summary.pairs)
    by_pair = {(v.submission.id, v.problem.id): v for v in run.verdicts if v is not None}
    assert set(by_pair) == set(_verdicts(scored.summary))
    assert isinstance(by_pair[("correct", "two_plus_two")], api.Verdict)
    assert by_pair[("incorrect", "two_plus_two")].verdict == "rejected"


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
    with pytest.raises(api.UsageError, match="--shard"):
        api.score([CORRECT], out, env=os.environ, benchmark=bench_copy, shard="3/2", **tools)
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


def test_a_failed_probe_raises_probes_failed_error_and_records_the_refusal(
        bench_copy: Path, bwrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    del bwrap
    entry = ProbeResult(name="sandbox_engaged", status="fail", proves="the sandbox",
                        message="writes reached the host", seconds=0.0, checks=())
    monkeypatch.setattr(session, "run_probes", lambda *a, **k: (entry,))
    seen: list[tuple[api.ProbeResult, ...]] = []
    out = tmp_path / "out"
    with pytest.raises(api.ProbesFailedError) as refused:
        api.score([CORRECT], out, env=os.environ, benchmark=bench_copy, toolchain=STANDIN,
                  allow_bwrap_version=BWRAP_FLOOR, on_probes=seen.append)
    assert isinstance(refused.value, api.SetupError)
    assert seen == [(entry,)]
    assert [p.status for p in refused.value.preflight.probes] == ["fail"]
    assert f"the probes' outcome is in {out / 'summary.json'}" in str(refused.value)
    summary = api.read_output(out).summary
    assert summary.pairs == () and summary.exit_code == 2
    assert summary.refused is not None and "sandbox_engaged" in summary.refused


def test_run_eval_scores_through_api_score(bench_copy: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def recorded(*args: Any, **kwargs: Any) -> api.Summary:
        calls.append((args, kwargs))
        raise api.UsageError("stopped by the test")

    monkeypatch.setattr(api, "score", recorded)
    result = CliRunner().invoke(main, [
        "run-eval", str(CORRECT), "--out", str(tmp_path / "out"), "--benchmark",
        str(bench_copy), "--problem", "two_plus_two,double_def", "--jobs", "3"],
        catch_exceptions=False)
    assert result.exit_code == 2
    assert "lean-eval: error: stopped by the test" in result.output
    ((args, kwargs),) = calls
    assert [Path(p) for p in args[0]] == [CORRECT] and Path(args[1]) == tmp_path / "out"
    assert kwargs["problems"] == ["two_plus_two", "double_def"] and kwargs["jobs"] == 3


# What run-eval spells differently (its parameter name -> score's); the intake limits are
# score's one `limits` model; the rest prints or sets the exit code, which the API leaves to
# its caller.
RENAMED = {"out_dir": "out", "bwrap_path": "bwrap", "allow_bwrap": "allow_bwrap_version",
           "shard_text": "shard"}
LIMIT_FIELDS = {"max_file_bytes": "max_file_bytes", "max_total_bytes": "max_total_bytes",
                "max_files": "max_files", "max_depth": "max_depth",
                "max_archive_bytes": "max_archive_bytes", "intake_timeout": "intake_seconds"}
CLI_ONLY = {"as_json", "verbose", "quiet", "fail_on"}


def _cli_default(param: click.Parameter) -> Any:
    default = param.default
    if default is getattr(click.core, "UNSET", None):  # click >= 8.3: no default given
        return None
    if isinstance(default, str) and not isinstance(param.type, click.types.StringParamType):
        default = param.type.convert(default, param, None)
    return default or None  # an empty or false default means "not asked for", like None


def test_score_takes_every_run_eval_option_with_the_same_default() -> None:
    command = main.commands["run-eval"]
    signature = inspect.signature(api.score)
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
        assert target in signature.parameters, f"run-eval {name} has no api.score parameter"
        if param.required:
            continue
        api_default = signature.parameters[target].default
        assert _cli_default(param) == (api_default or None), name
    assert signature.parameters["limits"].default == api.IntakeLimits()


def _readme_api_section() -> str:
    text = README.read_text(encoding="utf-8")
    return text.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]


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
    assert unlisted == [], "README.md's Python API section must name every api.__all__ entry"
    assert "semver" in section.lower() or "semantic versioning" in section.lower()
    for name in ("score", "validate_submission", "load_catalog", "read_output"):
        assert (getattr(api, name).__doc__ or "").strip(), name


@pytest.mark.slow
def test_the_readme_example_runs_as_written(bench_copy: Path, bwrap: str, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's example, run from the repository with the stand-in toolchain and the
    installed bubblewrap (the suite's stand-ins for an installed machine)."""
    del bwrap
    (code,) = re.findall(r"```python\n(.*?)```", _readme_api_section(), re.S)
    monkeypatch.chdir(tmp_path)
    real_score, real_validate = api.score, api.validate_submission

    def score(*args: Any, **kwargs: Any) -> api.Summary:
        kwargs.update(benchmark=bench_copy, toolchain=STANDIN, allow_bwrap_version=BWRAP_FLOOR,
                      skip_probes=True, timeout=60)
        return real_score(*args, **kwargs)

    def validate(*args: Any, **kwargs: Any) -> api.SubmissionCheck:
        return real_validate(*args, **{**kwargs, "benchmark": bench_copy})

    monkeypatch.setattr(api, "score", score)
    monkeypatch.setattr(api, "validate_submission", validate)
    code = code.replace("examples/submissions/", f"{REPO}/examples/submissions/")
    exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})  # noqa: S102
    assert (tmp_path / "results" / "summary.json").is_file()


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
