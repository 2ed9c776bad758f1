"""Configuration: flag > LEAN_EVAL_<OPTION> > config file > built-in default, for every option:
a config file's setting reaches the verdicts of a real run, and a submission never configures
lean-eval (real bubblewrap, the stand-in toolchain)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from support import BWRAP_FLOOR, CORRECT, STANDIN

from lean_eval.cli import main

# Settings a developer's shell may hold would change what these tests see.
CLEAN: dict[str, str | None] = {
    name: None for name in os.environ
    if name.startswith("LEAN_EVAL_") and name != "LEAN_EVAL_TEST_OUTSIDE"}


def _invoke(args: list[str], env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, args, env={**CLEAN, **(env or {})},
                              catch_exceptions=False)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --- a setting from the config file reaches the verdicts ----------------------------------------


def test_a_config_file_setting_is_recorded_in_the_verdicts(
        bench_copy: Path, outside: Path, bwrap: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(outside)
    _write(outside / "lean-eval.toml",
           f'[run-eval]\nbenchmark = "{bench_copy}"\ntoolchain = "{STANDIN}"\n'
           f'allow-bwrap-version = "{BWRAP_FLOOR}"\nskip_probes = true\nquiet = true\n'
           'problem = ["two_plus_two"]\nmemory-limit = "300M"\nmax-processes = 77\n')
    run = _invoke(["run-eval", str(CORRECT), "--out", str(outside / "out")])
    assert run.exit_code == 0, run.output
    verdict = json.loads((outside / "out" / "correct" / "two_plus_two.json").read_text())
    assert verdict["verdict"] == "accepted"
    assert verdict["limits"]["memory_bytes"] == 300 << 20
    assert verdict["limits"]["max_processes"] == 77
    flags = _invoke(["run-eval", str(CORRECT), "--out", str(outside / "out2"),
                     "--memory-limit", "200M"])
    assert flags.exit_code == 0, flags.output
    again = json.loads((outside / "out2" / "correct" / "two_plus_two.json").read_text())
    assert again["limits"]["memory_bytes"] == 200 << 20  # the flag beats the file
    assert again["limits"]["max_processes"] == 77
    assert again["resume_key"] != verdict["resume_key"]  # a re-run sees the options changed


def test_a_submission_never_configures_lean_eval(bench_copy: Path, outside: Path, bwrap: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Config files inside a submission (or beside it) are submitted bytes, never settings."""
    sub = outside / "subs" / "mine"
    shutil.copytree(CORRECT, sub)
    hostile = ('[run-eval]\nmemory-limit = "64M"\nno-such-key = 1\n'
               f'toolchain = "{outside / "evil"}"\n')
    for where in (sub, sub / "two_plus_two", outside / "subs"):
        _write(where / "lean-eval.toml", hostile)
        _write(where / "pyproject.toml", hostile.replace("[run-eval]", "[tool.lean-eval.run-eval]"))
    (outside / "cwd").mkdir()
    monkeypatch.chdir(outside / "cwd")
    run = _invoke(["run-eval", str(sub), "--out", str(outside / "out"), "--benchmark",
                   str(bench_copy), "--toolchain", str(STANDIN), "--allow-bwrap-version",
                   BWRAP_FLOOR, "--skip-probes", "-q", "--problem", "two_plus_two"])
    assert run.exit_code == 0, run.output
    verdict = json.loads((outside / "out" / "mine" / "two_plus_two.json").read_text())
    assert verdict["verdict"] == "accepted"
    assert verdict["limits"]["memory_bytes"] == 8 << 30  # the built-in default, not the file's
    # Negative control: the same file in the current directory is read (and refused).
    _write(outside / "cwd" / "lean-eval.toml", hostile)
    assert _invoke(["config"]).exit_code == 2
