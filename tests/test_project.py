"""Project-level promises: the README's commands, CI, committed schemas."""

from __future__ import annotations

import json
import re

from conftest import REPO

from lean_eval import verdict


def _sh_blocks() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return [b.strip() for b in re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL)]


def test_readme_gives_exactly_two_setup_commands() -> None:
    blocks = _sh_blocks()
    assert len(blocks) == 2
    assert all("\n" not in b for b in blocks)
    assert "run-eval examples/submissions/" in blocks[0]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    command = _sh_blocks()[1]
    assert command in ci
    assert "apt-get install" in command and "bubblewrap" in command


def test_committed_json_schemas_match_the_models() -> None:
    for name, schema in verdict.schemas().items():
        committed = json.loads((verdict.SCHEMA_DIR / name).read_text(encoding="utf-8"))
        assert committed == schema, (
            f"{name} drifted from the model; regenerate it with "
            "`python3 -m lean_eval.verdict` and bump SCHEMA_VERSION if the change is breaking")


def test_verdict_keys_required_by_the_issue_exist() -> None:
    props = verdict.Verdict.model_json_schema()["properties"]
    for key in ("schema_version", "submission", "problem", "verdict", "execution", "reason",
                "checkers", "exit_code", "timings"):
        assert key in props
    assert next(iter(props)) == "schema_version"
