"""Project-level promises: the README's commands, CI, committed schemas, one model base."""

from __future__ import annotations

import ast
import json
import re
import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from support import REPO

from lean_eval.records import registry, verdict


def _sh_blocks() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return [b.strip() for b in re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL)]


VENV = "python3 -m venv .venv && . .venv/bin/activate && python3 -m pip install "


def test_readme_gives_exactly_two_setup_commands() -> None:
    blocks = _sh_blocks()
    assert len(blocks) == 2
    assert all("\n" not in b for b in blocks)
    assert "run-eval examples/submissions/" in blocks[0]
    # A distribution Python (Debian 12) refuses pip outside a virtual environment
    # (externally-managed-environment): both commands install into .venv, never system-wide.
    for block in blocks:
        assert VENV in block and block.count("pip install") == 1, block
    # what prepare builds bubblewrap with, installed by the main job itself (issue 26)
    assert blocks[0].startswith("apt-get update -qq && apt-get install -y -qq python3-venv curl "
                                "xz-utils meson ninja-build gcc pkg-config libcap-dev && ")


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    command = _sh_blocks()[1]
    assert command in ci
    assert "apt-get install" in command and "bubblewrap" in command and "shellcheck" in command
    assert command.index("apt-get install") < command.index(VENV)


def test_the_virtual_environment_is_ignored_by_git_and_the_linters() -> None:
    assert ".venv/" in (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert ".venv" in config["tool"]["ruff"]["extend-exclude"]
    assert config["tool"]["mypy"]["files"] == ["lean_eval"]
    assert config["tool"]["pytest"]["ini_options"]["testpaths"] == ["tests"]


def test_committed_json_schemas_match_the_models() -> None:
    for name, schema in registry.schemas().items():
        committed = json.loads((registry.SCHEMA_DIR / name).read_text(encoding="utf-8"))
        assert committed == schema, (
            f"{name} drifted from the model; regenerate it with "
            "`python3 -m lean_eval.records.registry` and bump SCHEMA_VERSION if the change is "
            "breaking")


def test_every_pydantic_model_derives_from_record() -> None:
    # Frozen and closed to unknown keys is declared once, in records.base.Record; a model that
    # subclassed BaseModel itself could silently be mutable or drop keys it does not know.
    base = REPO / "lean_eval" / "records" / "base.py"
    offenders = []
    for path in sorted((REPO / "lean_eval").rglob("*.py")):
        if path == base:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "")
                     for b in getattr(node, "bases", ())]
            configures = isinstance(node, ast.ClassDef) or (
                isinstance(node, ast.Call) and getattr(node.func, "id", "") == "ConfigDict")
            keywords = {k.arg for k in getattr(node, "keywords", ())}
            if "BaseModel" in bases or (configures and keywords & {"frozen", "extra"}):
                offenders.append(f"{path.relative_to(REPO)}:{getattr(node, 'lineno', 0)}")
    assert not offenders, offenders


def test_verdict_keys_required_by_the_issue_exist() -> None:
    props = verdict.Verdict.model_json_schema()["properties"]
    for key in ("schema_version", "submission", "problem", "verdict", "execution", "reason",
                "checkers", "exit_code", "timings"):
        assert key in props
    assert next(iter(props)) == "schema_version"
