"""lean_eval.api: the example submissions scored, checked and read back without the CLI
(issue: a documented Python API), with the stand-in toolchain and real bubblewrap."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from support import BWRAP_FLOOR, CORRECT, PROBLEMS, REPO, STANDIN, no_survivor, passable

from lean_eval import api
from lean_eval.probes import preflight, registry
from lean_eval.records.probe_result import ProbeResult

INCORRECT = REPO / "examples" / "submissions" / "incorrect"
API_DOC = REPO / "docs" / "api.md"  # the Python API's page (README links it)


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
    base = passable(tmp_path_factory.mktemp("api"))  # the sandbox identity reaches its pairs
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


def test_a_failed_probe_raises_probes_failed_error_and_records_the_refusal(
        bench_copy: Path, bwrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    del bwrap
    entry = ProbeResult(name="sandbox_engaged", status="fail", proves="the sandbox",
                        message="writes reached the host", seconds=0.0, checks=())
    monkeypatch.setattr(preflight, "run_probes", lambda *a, **k: (entry,))
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


# What run-eval spells differently (its parameter name -> score's); the intake limits are
# score's one `limits` model; the rest prints or sets the exit code, which the API leaves to
# its caller.


def _readme_api_section() -> str:
    return API_DOC.read_text(encoding="utf-8")


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
    exec(compile(code, "docs/api.md", "exec"), {"__name__": "readme_example"})  # noqa: S102
    assert (tmp_path / "results" / "summary.json").is_file()
