"""Configuration: flag > LEAN_EVAL_<OPTION> > config file > built-in default, for every option."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st
from support import REPO, examples

from lean_eval.benchmark import checkout
from lean_eval.cli import config, main
from lean_eval.files import decoding
from lean_eval.supervise import process

# Settings a developer's shell may hold would change what these tests see.
CLEAN: dict[str, str | None] = {
    name: None for name in os.environ
    if name.startswith("LEAN_EVAL_") and name != "LEAN_EVAL_TEST_OUTSIDE"}


def _invoke(args: list[str], env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, args, env={**CLEAN, **(env or {})},
                              catch_exceptions=False)


def _settings(args: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """``lean-eval [args] --json`` of the config command, as {(command, option): setting}."""
    at = args.index("config") + 1
    result = _invoke([*args[:at], "--json", *args[at:]], env)
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert next(iter(document)) == "schema_version"
    document["by"] = {(s["command"], s["option"]): s for s in document["settings"]}
    return document


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --- environment variables ----------------------------------------------------------------------


def _all_options() -> list[tuple[str, click.Option]]:
    found = [("(group)", o) for o in main.params if isinstance(o, click.Option)]
    return found + [(name, p) for name, cmd in sorted(main.commands.items())
                    for p in cmd.params if isinstance(p, click.Option)]


def test_every_option_of_every_command_has_its_lean_eval_variable() -> None:
    by_long: dict[str, set[str]] = {}
    for command, option in _all_options():
        if not option.expose_value:  # --version: an action, not a setting
            continue
        long = config.long_name(option)
        assert long is not None, f"{command} {option.opts} has no long name"
        assert option.envvar == "LEAN_EVAL_" + long.upper().replace("-", "_"), (command, long)
        assert option.show_envvar, (command, long)
        by_long.setdefault(long, set()).add(str(option.envvar))
    assert all(len(names) == 1 for names in by_long.values()), by_long
    for name in ("jobs", "timeout", "memory-limit", "toolchain", "bwrap",
                 "allow-bwrap-version", "config"):
        assert name in by_long, name


def test_the_walker_keeps_an_explicit_envvar_and_reaches_commands_added_later() -> None:
    @click.group(cls=type(main))
    def group() -> None:
        pass

    @group.command("cmd")
    @click.option("--kept", envvar="SOMETHING_ELSE")
    @click.option("--max-things", type=int)
    def cmd(kept: str | None, max_things: int | None) -> None:
        click.echo(f"{kept} {max_things}")

    # Added after the group exists and before it runs: its options still get variables.
    result = CliRunner().invoke(group, ["cmd"], env={"SOMETHING_ELSE": "a",
                                                     "LEAN_EVAL_KEPT": "no",
                                                     "LEAN_EVAL_MAX_THINGS": "7"},
                                catch_exceptions=False)
    assert result.output == "a 7\n"
    assert cmd.params[0].envvar == "SOMETHING_ELSE"


# --- precedence: flag > environment > config file > default -------------------------------------


def test_flag_beats_environment_beats_config_file_beats_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "lean-eval.toml",
           '[run-eval]\njobs = 3\ntimeout = 20\nmemory_limit = "1G"\n')
    doc = _settings(["config", "run-eval", "--jobs", "5"],
                    env={"LEAN_EVAL_JOBS": "4", "LEAN_EVAL_TIMEOUT": "30"})
    by = doc["by"]
    assert (by["run-eval", "--jobs"]["value"], by["run-eval", "--jobs"]["source"]) == (5, "flag")
    assert by["run-eval", "--timeout"]["value"] == 30.0
    assert by["run-eval", "--timeout"]["source"] == "env"
    assert by["run-eval", "--timeout"]["origin"] == "LEAN_EVAL_TIMEOUT"
    assert by["run-eval", "--memory-limit"]["value"] == 1 << 30
    assert by["run-eval", "--memory-limit"]["source"] == "config"
    assert by["run-eval", "--memory-limit"]["origin"] == str(tmp_path / "lean-eval.toml")
    assert by["run-eval", "--max-files"] == {
        "command": "run-eval", "option": "--max-files", "value": 10_000, "source": "default",
        "origin": "built-in default", "envvar": "LEAN_EVAL_MAX_FILES"}


def test_the_environment_sets_what_a_command_does(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    start = ["start-problem", "two_plus_two", str(tmp_path / "dest"), "--benchmark", str(REPO)]
    quiet = _invoke(start, env={"LEAN_EVAL_QUIET": "1"})
    assert (quiet.exit_code, quiet.output) == (0, ""), quiet.output
    _write(tmp_path / "lean-eval.toml", "[start-problem]\nquiet = true\n")
    from_file = _invoke([*start[:2], str(tmp_path / "dest2"), *start[3:]])
    assert (from_file.exit_code, from_file.output) == (0, ""), from_file.output
    loud = _invoke([*start[:2], str(tmp_path / "dest3"), *start[3:]],
                   env={"LEAN_EVAL_QUIET": "0"})
    assert loud.exit_code == 0 and "next:" in loud.output  # the environment beats the file


def test_config_option_beats_the_file_in_the_current_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "lean-eval.toml", "[run-eval]\njobs = 3\n")
    chosen = _write(tmp_path / "etc" / "machine.toml", '[run-eval]\njobs = 7\nwork-dir = "w"\n')
    doc = _settings(["--config", str(chosen), "config", "run-eval"])
    assert doc["config_file"] == str(chosen)
    assert doc["by"]["run-eval", "--jobs"]["value"] == 7
    # A relative path in a config file is relative to the file, wherever lean-eval runs.
    assert doc["by"]["run-eval", "--work-dir"]["value"] == str(tmp_path / "etc" / "w")
    by_env = _settings(["config", "run-eval"], env={"LEAN_EVAL_CONFIG": str(chosen)})
    assert by_env["by"]["run-eval", "--jobs"]["value"] == 7
    here = _settings(["config", "run-eval"])
    assert (here["config_file"], here["by"]["run-eval", "--jobs"]["value"]) == (
        str(tmp_path / "lean-eval.toml"), 3)


def test_the_benchmarks_pyproject_is_read_after_the_current_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bench = tmp_path / "bench"
    _write(bench / "pyproject.toml", '[project]\nname = "b"\n\n[tool.lean-eval.run-eval]\n'
                                     'max_depth = 9\n\n[tool.lean-eval.test]\ntimeout = 77\n')
    monkeypatch.chdir(tmp_path)
    doc = _settings(["config", "run-eval", "--benchmark", str(bench)])
    assert (doc["config_file"], doc["table"]) == (str(bench / "pyproject.toml"),
                                                  "tool.lean-eval")
    assert doc["by"]["run-eval", "--max-depth"]["value"] == 9
    assert doc["by"]["run-eval", "--max-depth"]["source"] == "config"
    # config's own --benchmark, for the listing of every command
    every = _settings(["config", "--benchmark", str(bench)])
    assert every["by"]["test", "--timeout"]["value"] == 77.0
    # a lean-eval.toml in the current directory wins over the pyproject.toml
    _write(tmp_path / "lean-eval.toml", "[run-eval]\nmax_depth = 4\n")
    doc = _settings(["config", "run-eval", "--benchmark", str(bench)])
    assert doc["by"]["run-eval", "--max-depth"]["value"] == 4


def test_the_default_benchmark_is_the_git_checkout_holding_the_current_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bench = tmp_path / "bench"
    _write(bench / "pyproject.toml", "[tool.lean-eval.run-eval]\nmax-depth = 11\n")
    done = process.run_capture(("git", "init", "-q", str(bench)), env={"PATH": "/usr/bin:/bin"},
                               cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stdout
    (bench / "sub").mkdir()
    monkeypatch.chdir(bench / "sub")
    doc = _settings(["config", "run-eval"])
    assert doc["config_file"] == str(bench / "pyproject.toml")
    assert doc["by"]["run-eval", "--max-depth"]["value"] == 11
    # a pyproject.toml without [tool.lean-eval] is no config file
    _write(bench / "pyproject.toml", '[project]\nname = "b"\n')
    assert _settings(["config", "run-eval"])["config_file"] is None


def test_the_default_benchmark_is_the_checkout_holding_the_current_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked of git each time (nothing is kept between calls), so a checkout that appears
    above the current directory, or goes away, is seen at once."""
    top = tmp_path / "top"
    (top / "sub").mkdir(parents=True)
    monkeypatch.chdir(top / "sub")
    assert checkout.default_benchmark() == top / "sub"
    done = process.run_capture(("git", "init", "-q", str(top)), env={"PATH": "/usr/bin:/bin"},
                               cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stdout
    assert checkout.default_benchmark() == top
    shutil.rmtree(top / ".git")
    assert checkout.default_benchmark() == top / "sub"
    monkeypatch.chdir(top)
    assert checkout.default_benchmark() == top


def test_lean_eval_config_lists_every_source(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "lean-eval.toml", "[run-eval]\nmax-files = 12\n")
    result = _invoke(["config", "run-eval", "--jobs", "2"], env={"LEAN_EVAL_TIMEOUT": "9"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"config file: {tmp_path / 'lean-eval.toml'}"
    assert "run-eval --jobs = 2  (flag)" in lines
    assert "run-eval --timeout = 9.0  (env LEAN_EVAL_TIMEOUT)" in lines
    assert f"run-eval --max-files = 12  (config {tmp_path / 'lean-eval.toml'})" in lines
    assert "run-eval --max-depth = 32  (default)" in lines
    shown = {line.split(" = ")[0] for line in lines[1:]}
    assert shown == {f"run-eval --{long}" for long in config.settings(main.commands["run-eval"])}
    # without a command: every setting of every command
    every = _settings(["config"])
    assert {(c, o) for c, o in every["by"]} == {
        (name, f"--{long}") for name, cmd in main.commands.items()
        for long in config.settings(cmd)}
    quiet = _invoke(["config", "-q", "run-eval"], env={"LEAN_EVAL_TIMEOUT": "9"})
    assert quiet.stdout.splitlines()[1:] == [
        f"run-eval --max-files = 12  (config {tmp_path / 'lean-eval.toml'})",
        "run-eval --timeout = 9.0  (env LEAN_EVAL_TIMEOUT)"]


# --- errors name the file, the key and what is allowed ------------------------------------------


@pytest.mark.parametrize(("text", "wanted"), [
    ("[run-eval]\njbos = 3\n", ["[run-eval] has no setting 'jbos'", "(did you mean 'jobs'?)",
                                "jobs", "memory-limit"]),
    ("[run-eval]\njobs = 0\n", ["[run-eval] jobs = 0", "allowed: an integer >= 1"]),
    ("[run-eval]\njobs = [2]\n", ["jobs = [2]", "not a list"]),
    ('[run-eval]\nmemory-limit = "1T"\n', ['memory-limit = "1T"', "not a byte size",
                                           "allowed: a byte size of at least 67108864"]),
    ('[run-eval]\nskip-probes = "maybe"\n', ["skip-probes", "allowed: true or false"]),
    ('[report]\nformat = "pdf"\n', ['[report] format = "pdf"', "allowed: one of table"]),
    ("[runeval]\njobs = 2\n", ["unknown table [runeval]", "(did you mean 'run-eval'?)",
                               "run-eval", "validate-catalog"]),
    ("jobs = 2\n", ["jobs = 2 is outside any table", "[run-eval]"]),
    ("run-eval = 2\n", ["run-eval = 2 is not a table", "under [run-eval]"]),
    ("[run-eval]\njobs = 2\njobs_ = 1\n", ["no setting 'jobs_'"]),
    ("[run-eval]\nmax-files = 2\nmax_files = 3\n", ["sets 'max-files' twice"]),
    ("[run-eval\n", ["is not valid TOML"]),
])
def test_a_bad_config_file_names_the_file_the_key_and_what_is_allowed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, wanted: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    path = _write(tmp_path / "lean-eval.toml", text)
    for args in (["run-eval", "x", "--out", "o"], ["config"], ["report", "-h"]):
        result = _invoke(args)
        assert result.exit_code == 2, (args, result.output)
        assert result.stdout == ""
        (line,) = [x for x in result.stderr.splitlines() if x.startswith("lean-eval: error:")]
        assert str(path) in line, line
        for needed in wanted:
            assert needed in line, (needed, line)
        assert "Traceback" not in result.output


def test_a_bad_pyproject_table_names_its_table(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "b" / "pyproject.toml", "[tool.lean-eval.run-eval]\nmax-dept = 3\n")
    result = _invoke(["config", "--benchmark", str(tmp_path / "b")])
    assert result.exit_code == 2
    assert "[tool.lean-eval.run-eval] has no setting 'max-dept' (did you mean 'max-depth'?)" \
        in result.stderr


def test_a_bad_environment_value_is_named_by_config(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = _invoke(["config", "run-eval"], env={"LEAN_EVAL_JOBS": "many"})
    assert result.exit_code == 2
    assert "lean-eval: error: LEAN_EVAL_JOBS='many':" in result.stderr
    assert "allowed: an integer >= 1" in result.stderr


# --- key spelling ----------------------------------------------------------------------------

EXAMPLES = {"max-file-bytes": "2M", "max-written-file-bytes": "2GiB", "benchmark-rev": "main",
            "intake-timeout": 5, "allow-bwrap-version": "0.8.0", "keep-work": True,
            "max-archive-bytes": 1 << 20, "skip-probes": False, "memory-limit": "512M"}


@settings(max_examples=examples(60), deadline=None)
@given(st.sampled_from(sorted(EXAMPLES)), st.data())
def test_keys_take_dashes_or_underscores_alike(long: str, data: st.DataObject) -> None:
    parts = long.split("-")
    separators = data.draw(st.lists(st.sampled_from("-_"), min_size=len(parts) - 1,
                                    max_size=len(parts) - 1))
    key = parts[0] + "".join(s + p for s, p in zip(separators, parts[1:], strict=True))
    command = main.commands["run-eval"]
    with click.Context(main, info_name="lean-eval") as ctx:
        checked = config.check_table(command, ctx, Path("/etc/lean-eval.toml"), "run-eval",
                                     {key: EXAMPLES[long]})
    assert checked == {config.settings(command)[long].name: EXAMPLES[long]}
    assert config.normalise(key) == long


# --- a setting from the config file reaches the verdicts ----------------------------------------


def test_help_shows_each_options_variable() -> None:
    result = _invoke(["run-eval", "-h"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    for name in ("LEAN_EVAL_JOBS", "LEAN_EVAL_TIMEOUT", "LEAN_EVAL_MEMORY_LIMIT",
                 "LEAN_EVAL_MAX_FILES", "LEAN_EVAL_TOOLCHAIN", "LEAN_EVAL_SIGN_KEY"):
        assert name in text, name


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib; tomli is the same parser")
def test_the_config_module_uses_the_standard_toml_parser() -> None:
    assert config.toml_table is decoding.toml_table  # every TOML goes through one reader
    assert decoding.tomllib.__name__ == "tomllib"


def test_the_readme_config_example_is_valid(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    text = (REPO / "docs" / "scale.md").read_text(encoding="utf-8").split("## Configuration", 1)[1]
    example = text.split("```toml\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "lean-eval.toml", example)
    doc = _settings(["config"])
    assert doc["by"]["run-eval", "--jobs"]["value"] == 4
    assert doc["by"]["run-eval", "--max-total-bytes"]["value"] == 32 << 20
    assert doc["by"]["test", "--timeout"]["source"] == "config"


# --- issue 26: config's own flags anywhere; every problem at once, before any table ----------


def test_configs_own_flags_are_taken_after_the_command_too(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    as_json = _invoke(["config", "run-eval", "--json", "--jobs", "3"])
    assert as_json.exit_code == 0, as_json.output
    rows = {s["option"]: s for s in json.loads(as_json.stdout)["settings"]}
    assert rows["--jobs"]["value"] == 3 and rows["--jobs"]["source"] == "flag"
    quiet = _invoke(["config", "run-eval", "-q", "--jobs", "3"])
    assert quiet.stdout.splitlines()[1:] == ["run-eval --jobs = 3  (flag)"]


def test_every_bad_environment_value_is_named_and_no_table_printed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = _invoke(["config", "run-eval"],
                     env={"LEAN_EVAL_JOBS": "abc", "LEAN_EVAL_TIMEOUT": "x"})
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "LEAN_EVAL_JOBS='abc'" in result.stderr and "LEAN_EVAL_TIMEOUT='x'" in result.stderr


def test_every_bad_key_and_table_of_a_config_file_is_in_one_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "lean-eval.toml", '[run-eval]\nbogus = 1\njobs = "x"\n[nope]\na = 1\n')
    result = _invoke(["config"])
    assert result.exit_code == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    for needed in ("no setting 'bogus'", 'jobs = "x"', "unknown table [nope]"):
        assert needed in line, (needed, line)
