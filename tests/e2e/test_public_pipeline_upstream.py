"""The public pipeline's own code, run on our output (issue 31 item 1), where a checkout of
leanprover/lean-eval-submissions is present.

Set ``LEAN_EVAL_REAL_SUBMISSIONS=<checkout of leanprover/lean-eval-submissions>`` to run; skipped
otherwise (nothing is downloaded, nothing of it is copied into this repository: its files are
read from the checkout when the test runs). Three of its pieces, unmodified:

- ``scripts/evaluate_submission.py`` (the consumer): finds the workspaces of a submission by
  their ``lakefile.toml`` name, overlays them, runs ``lake exe lean-eval run-eval --json ...``
  and keeps the problems whose entry has ``succeeded`` true, or nothing when the command exits
  non-zero. A ``lake`` on PATH turns that call into the one docs/pipeline.md documents (plus
  what this machine needs: the stand-in toolchain, the bubblewrap floor, no probes, a memory
  limit one problem's build goes over);
- the workflow's "Comment submission summary" step (``.github/workflows/submission.yml``),
  which reads ``total_problems``, ``attempted_problems`` and ``succeeded_problems``;
- ``scripts/update_leaderboard.py`` and ``scripts/results_schema.py`` (the recorder and the
  store's validator), fed the consumer's ``results.json``.

The batch has every outcome: two accepted problems (which must be recorded), a rejected one, one
whose build goes over its memory limit (``error``) and a pristine one the consumer skips.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from support import (
    BWRAP_FLOOR,
    CORRECT,
    STANDIN,
    correct,
    sh_payload,
    starter,
    with_lines,
)

from lean_eval.supervise import process

LES = os.environ.get("LEAN_EVAL_REAL_SUBMISSIONS")
pytestmark = [
    pytest.mark.skipif(not LES, reason="LEAN_EVAL_REAL_SUBMISSIONS is not set (a checkout of "
                                       "leanprover/lean-eval-submissions); not run"),
    pytest.mark.timeout(600),
]
INCORRECT = CORRECT.parent / "incorrect"
ACCEPTED = ["double_def", "widget_instance"]
COMMIT = "b" * 40
# The call docs/pipeline.md shows, as the `lake` stand-in below makes it from the pipeline's.
SHIM = '''#!{python}
"""`lake` for the public pipeline's evaluate job: its priming steps do nothing here, and its
`lake exe lean-eval run-eval` call becomes lean-eval's (docs/pipeline.md)."""
import argparse, os, sys
args = sys.argv[1:]
if args == ["update"] or args == ["exe", "cache", "get"]:
    sys.exit(0)
if args[:3] != ["exe", "lean-eval", "run-eval"]:
    sys.exit(f"lake stand-in: unexpected call {{args}}")
parser = argparse.ArgumentParser()
parser.add_argument("--json", action="store_true")
parser.add_argument("--workspaces-root", required=True)
parser.add_argument("--problem", default="")
given = parser.parse_args(args[3:])
argv = [{python!r}, "-m", "lean_eval", "run-eval", given.workspaces_root,
        *(["--problem", given.problem] if given.problem else []), "--json", *{fixed!r}]
os.execv(argv[0], argv)
'''


def _module(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """``scripts/<name>.py`` of the checkout, imported as it is (registered while the test
    runs: its dataclasses look their module up)."""
    path = Path(str(LES)) / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"les_{name}", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


def _comment_step() -> str:
    """The Python the workflow's "Comment submission summary" step runs."""
    text = (Path(str(LES)) / ".github" / "workflows" / "submission.yml").read_text()
    step = text[text.index("name: Comment submission summary"):]
    body = step[step.index("<<'PY'\n") + len("<<'PY'\n"):]
    lines = []
    for line in body.splitlines():
        if line.strip() == "PY":
            break
        lines.append(line)
    return textwrap.dedent("\n".join(lines)) + "\n"


def _source(base: Path, bench: Path) -> Path:
    """A submitter's repository in the pipeline's layout: one workspace per problem, found by
    its lakefile.toml name."""
    hog = "python3 -c 'import time; hog = bytearray(1 << 30); time.sleep(300)'"
    texts = {"two_plus_two": with_lines("two_plus_two", sh_payload(hog)),
             "double_def": correct("double_def"), "widget_instance": correct("widget_instance"),
             "add_comm_explicit": (INCORRECT / "add_comm_explicit" / "Submission.lean")
             .read_text(), "multi_hole": starter("multi_hole")}
    for pid, text in texts.items():
        workspace = base / "proofs" / pid
        workspace.mkdir(parents=True)
        (workspace / "lakefile.toml").write_bytes((bench / "workspaces" / pid /
                                                   "lakefile.toml").read_bytes())
        (workspace / "Submission.lean").write_text(text)
    return base


class Pipeline:
    """The consumer, with a `lake` on PATH that runs lean-eval with ``fixed`` options."""

    def __init__(self, base: Path, bench: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.base, self.bench, self.monkeypatch = base, bench, monkeypatch
        self.consumer = _module("evaluate_submission", monkeypatch)
        self.source = _source(base / "src", bench)

    def __call__(self, name: str, *fixed: str) -> dict[str, Any]:
        tools = self.base / name / "bin"
        tools.mkdir(parents=True)
        shim = tools / "lake"
        shim.write_text(SHIM.format(python=sys.executable, fixed=list(fixed)))
        shim.chmod(0o755)
        self.monkeypatch.setenv("PATH", f"{tools}:{os.environ.get('PATH', '/usr/bin:/bin')}")
        repo_root = self.base / name / "lean-eval"
        result: dict[str, Any] = self.consumer.evaluate_submission(
            source_dir=self.source, generated_root=self.bench / "workspaces",
            manifest_dir=self.bench / "problems", output_dir=self.base / name / "evaluate-out",
            repo_root=repo_root)
        return result

    def options(self, out: str, *more: str) -> tuple[str, ...]:
        return ("--out", str(self.base / out), "--benchmark", str(self.bench), "--toolchain",
                str(STANDIN), "--allow-bwrap-version", BWRAP_FLOOR, "--skip-probes",
                "--timeout", "240", "--memory-limit", "256M", "-q", *more)


@pytest.fixture
def pipeline(outside: Path, bench_copy: Path, bwrap: str,
             monkeypatch: pytest.MonkeyPatch) -> Pipeline:
    del bwrap
    return Pipeline(outside, bench_copy, monkeypatch)


def test_the_public_pipeline_records_every_accepted_problem_and_reads_our_counts(
        pipeline: Pipeline) -> None:
    result = pipeline("ok", *pipeline.options("out-ok", "--exit-zero"))
    assert result["results"]["passed"] == ACCEPTED
    assert result["results"]["statement_revisions"] == dict.fromkeys(ACCEPTED, 1)
    document = result["summary"]["run_eval"]
    assert document["exit_code"] == 0  # --exit-zero: an error pair does not lose the rest
    verdicts = {p["problem"]: p["verdict"] for p in document["pairs"]}
    assert verdicts == {"two_plus_two": "error", "double_def": "accepted",
                        "widget_instance": "accepted", "add_comm_explicit": "rejected"}
    # multi_hole is pristine: the consumer skips it before lean-eval sees it
    assert (document["total_problems"], document["attempted_problems"],
            document["succeeded_problems"]) == (4, 4, 2)
    out = pipeline.base / "ok" / "evaluate-out"
    comment = process.run_capture(
        (sys.executable, "-c", _comment_step()), timeout=60, cwd=pipeline.base,
        env={"PATH": "/usr/bin:/bin", "RESULTS_PATH": str(out / "results.json"),
             "SUMMARY_PATH": str(out / "summary.json")})
    assert comment.returncode == 0, comment.stderr
    said = comment.stdout.decode()
    assert "Attempted 4 / 4; succeeded on 2." in said, said
    assert "- `double_def`: pass" in said and "- `two_plus_two`: fail" in said

    pipeline.monkeypatch.syspath_prepend(str(Path(str(LES)) / "scripts"))
    recorder = _module("update_leaderboard", pipeline.monkeypatch)
    schema = _module("results_schema", pipeline.monkeypatch)
    store = pipeline.base / "store"
    assert recorder.main([
        "--user", "alice", "--leaderboard-dir", str(store),
        "--results-json", str(out / "results.json"), "--benchmark-commit", COMMIT,
        "--submission-kind", "github_repo", "--submission-repo", "alice/proofs",
        "--submission-ref", "a" * 40, "--submission-public", "--model", "M",
        "--issue-number", "7", "--now", "2026-12-05T06:00:00Z"]) == 0
    recorded, version = schema.read_results_file(store / "results" / "alice.json")
    assert version == 2
    assert sorted(r["problem_id"] for r in recorded["results"]) == ACCEPTED


def test_without_exit_zero_the_error_pair_loses_the_submissions_accepted_problems(
        pipeline: Pipeline) -> None:
    """The negative control: the consumer counts nothing from a run that exits 1."""
    with pytest.raises(pipeline.consumer.EvaluateError, match="exit code 1"):
        pipeline("plain", *pipeline.options("out-plain"))


def test_a_setup_failure_reaches_the_pipeline_as_a_json_error_document(
        pipeline: Pipeline) -> None:
    options = [*pipeline.options("out-bad")]
    options[options.index("--toolchain") + 1] = str(pipeline.base / "no-toolchain")
    with pytest.raises(pipeline.consumer.EvaluateError) as raised:
        pipeline("bad", *options, "--exit-zero")
    message = str(raised.value)
    assert "exit code 2" in message
    document = json.loads(message[message.index("{"):])
    assert document["status"] == "error" and document["exit_code"] == 2
    assert re.search(r"toolchain", document["message"])
