"""What a newcomer meets first: help, common options, environment defaults, byte sizes."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result
from hypothesis import given
from hypothesis import strategies as st
from support import (
    BWRAP_FLOOR,
    REPO,
    STANDIN,
    make_submission,
    outside_problem,
)

from lean_eval.cli import ByteSize, main
from lean_eval.errors import UsageError
from lean_eval.probes import registry
from lean_eval.scoring import arguments

COMMANDS = tuple(sorted(main.commands))


@pytest.mark.parametrize(("text", "expected"), [
    ("1048576", 1 << 20), ("512K", 512 << 10), ("512k", 512 << 10), ("16M", 16 << 20),
    ("16MiB", 16 << 20), ("8G", 8 << 30), ("8GiB", 8 << 30), ("3kib", 3 << 10),
    ("1_000", 1000),
])
def test_byte_sizes_accept_suffixes(text: str, expected: int) -> None:
    assert ByteSize().convert(text, None, None) == expected


@pytest.mark.parametrize("text", ["", "M", "1.5M", "-1", "12T", "1MB", "ten", "1 G G"])
def test_byte_sizes_refuse_what_they_cannot_read(text: str) -> None:
    with pytest.raises(click.BadParameter):
        ByteSize().convert(text, None, None)


def test_byte_sizes_keep_their_minimum() -> None:
    with pytest.raises(click.BadParameter, match="minimum"):
        ByteSize(minimum=1 << 20).convert("512K", None, None)
    assert ByteSize(minimum=1 << 20).convert("1M", None, None) == 1 << 20


@given(st.integers(min_value=1, max_value=1 << 40),
       st.sampled_from([("", 1), ("K", 1 << 10), ("MiB", 1 << 20), ("g", 1 << 30)]))
def test_byte_size_round_trip(number: int, unit: tuple[str, int]) -> None:
    assert ByteSize().convert(f"{number}{unit[0]}", None, None) == number * unit[1]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_byte_option_takes_suffixes(command: str) -> None:
    for param in main.commands[command].params:
        if isinstance(param, click.Option) and "bytes" in param.name.replace("_", "-"):
            assert isinstance(param.type, ByteSize), f"{command} {param.opts} takes plain ints"


@pytest.mark.parametrize("command", COMMANDS)
def test_dash_h_and_help_text_on_every_command(command: str) -> None:
    result = CliRunner().invoke(main, [command, "-h"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
    doc = (main.commands[command].help or "").strip()
    assert doc, f"{command} has no help text"
    assert " ".join(doc.split()[:8]) in " ".join(result.output.split())


def test_dash_h_on_the_group() -> None:
    result = CliRunner().invoke(main, ["-h"], catch_exceptions=False)
    assert result.exit_code == 0 and "run-eval" in result.output


@pytest.mark.parametrize("command", COMMANDS)
def test_environment_defaults_are_click_envvars(command: str) -> None:
    wanted = {"toolchain": "LEAN_EVAL_TOOLCHAIN", "bwrap_path": "LEAN_EVAL_BWRAP",
              "allow_bwrap": "LEAN_EVAL_ALLOW_BWRAP_VERSION"}
    params = {p.name: p for p in main.commands[command].params if isinstance(p, click.Option)}
    for name, envvar in wanted.items():
        if name in params:
            assert params[name].envvar == envvar and params[name].show_envvar


# --- item 1: arguments are judged before any probe runs ------------------------------------


def _no_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a probe ran before the arguments were checked")

    monkeypatch.setattr(registry, "run_probes", refuse)


def _run_eval(bench: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["run-eval", *args, "--benchmark", str(bench),
                                     "--toolchain", str(STANDIN),
                                     "--allow-bwrap-version", BWRAP_FLOOR], catch_exceptions=False)


def test_nonexistent_submission_fails_fast_without_skip_probes(
        bench_copy: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_probes(monkeypatch)  # fast means before any probe: asserted by order, not by time
    result = _run_eval(bench_copy, str(outside / "nope"), "--out", str(outside / "out"))
    assert result.exit_code == 2
    assert "nope does not exist" in result.output
    assert "Traceback" not in result.output
    assert not (outside / "out").exists()


@pytest.mark.parametrize("name", ["sub.zip", "sub.tar.xz", "notes.txt"])
def test_unsupported_archive_names_the_supported_ones(
        bench_copy: Path, outside: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    _no_probes(monkeypatch)
    (outside / name).write_bytes(b"PK\x03\x04")
    result = _run_eval(bench_copy, str(outside / name), "--out", str(outside / "out"))
    assert result.exit_code == 2
    assert ".tar, .tar.gz or .tgz" in result.output
    if name != "notes.txt":
        assert f".{name.split('.', 1)[1]} archives are not supported" in result.output


def test_out_that_is_a_file_or_overlaps_a_submission(
        bench_copy: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_probes(monkeypatch)
    sub = make_submission(outside, "sub", {"two_plus_two": {"Submission.lean": "x"}})
    (outside / "file").write_text("x")
    result = _run_eval(bench_copy, str(sub), "--out", str(outside / "file" / "deeper"))
    assert result.exit_code == 2 and "lies under the file" in result.output
    for out in (sub / "results", outside):
        result = _run_eval(bench_copy, str(sub), "--out", str(out))
        assert result.exit_code == 2 and "overlap" in result.output, result.output


def test_unknown_problem_suggests_close_ids(
        bench_copy: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_probes(monkeypatch)
    sub = make_submission(outside, "sub", {"two_plus_two": {"Submission.lean": "x"}})
    result = _run_eval(bench_copy, str(sub), "--out", str(outside / "out"),
                       "--problem", "two_plus_tow,double_def")
    assert result.exit_code == 2
    assert "'two_plus_tow' (did you mean two_plus_two?)" in result.output
    assert "double_def'" not in result.output


def test_input_checks_accept_what_intake_accepts(outside: Path) -> None:
    sub = make_submission(outside, "sub", {"two_plus_two": {"Submission.lean": "x"}})
    for name in ("a.tar", "b.tar.gz", "c.tgz", "D.TGZ"):
        (outside / name).write_bytes(b"")
        arguments.check_submission(outside / name)
    arguments.check_run([sub], outside / "out", outside / "work", {"two_plus_two"}, REPO)
    (outside / "link").symlink_to(sub)
    with pytest.raises(UsageError, match="symbolic link"):
        arguments.check_submission(outside / "link")


# --- item 7: the suite runs on other machines -----------------------------------------------


def test_leak_test_location_must_lie_outside_lakes_masks(outside: Path) -> None:
    assert "Lake masks itself" in (outside_problem(Path("/tmp/leaks")) or "")
    assert "Lake masks itself" in (outside_problem(Path("/home")) or "")
    assert outside_problem(outside / "new" / "deeper") is None
    assert (outside / "new" / "deeper").is_dir()
    blocker = outside / "file"
    blocker.write_text("")
    assert "cannot create or write" in (outside_problem(blocker / "sub") or "")


def test_temp_files_go_to_a_private_session_base() -> None:
    base = Path(tempfile.gettempdir())
    assert base.parent == Path("/tmp") and base.name.startswith("lean-eval-pytest-")


def test_bwrap_floor_is_read_from_the_installed_bwrap() -> None:
    assert "DISTRO_BWRAP" not in (REPO / "tests" / "conftest.py").read_text()
    assert BWRAP_FLOOR.count(".") >= 1


# --- items 2, 3 and 5: -v, -q, readable probe lines, JSON documents, no litter -------------


# Commands without -v/-q, and why. `report` prints exactly the document asked for (like --json
# elsewhere), so there is nothing to make quieter or more verbose.
NO_VERBOSE = {"report": "its output is the requested document"}
NO_QUIET: dict[str, str] = {}  # report too: -q still writes --output, or is the gate alone


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_takes_verbose_and_quiet(command: str) -> None:
    opts = {o for p in main.commands[command].params for o in getattr(p, "opts", [])}
    assert ("-v" in opts and "--verbose" in opts) != (command in NO_VERBOSE), command
    assert ("-q" in opts and "--quiet" in opts) != (command in NO_QUIET), command


def test_quiet_silences_the_other_commands(bench_copy: Path, outside: Path) -> None:
    runs = {
        "start-problem": ["start-problem", "two_plus_two", str(outside / "dest"),
                          "--benchmark", str(bench_copy), "-q"],
        "validate-catalog": ["validate-catalog", "--benchmark", str(bench_copy), "-q"],
        "validate-submission": ["validate-submission", str(REPO / "examples/submissions/correct"),
                                "--benchmark", str(bench_copy), "-q"],
    }
    for name, args in runs.items():
        loud = CliRunner().invoke(main, [a for a in args if a != "-q"]
                                  if name != "start-problem" else
                                  [*args[:2], str(outside / "loud"), *args[3:-1]],
                                  catch_exceptions=False)
        quiet = CliRunner().invoke(main, args, catch_exceptions=False)
        assert loud.exit_code == 0 and loud.output, (name, loud.output)
        assert (quiet.exit_code, quiet.output) == (0, ""), (name, quiet.output)


# --- issue 16 item 8: one error style, no wrapping without a terminal, names and messages -----


@pytest.mark.parametrize("args", [
    ["run-eval", "--bogus"], ["run-eval", str(REPO / "examples/submissions/correct")],
    ["report", "/nonexistent/out"], ["no-such-command"], ["test", "--timeout", "0"],
    ["--config", "/nonexistent.toml", "report", "x"],
])
def test_click_usage_errors_use_the_one_error_style(args: list[str]) -> None:
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if "rror" in line]
    assert len(errors) == 1 and errors[0].startswith("lean-eval: error: "), result.stderr
    assert not any(line.startswith("Error:") for line in result.output.splitlines())
    assert "Usage: " in result.stderr and "--help' for help." in result.stderr


def test_without_a_terminal_long_lines_are_never_wrapped(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from rich.console import Console as RichConsole
    from rich.table import Table

    from lean_eval import cli
    from lean_eval.cli import group

    monkeypatch.delenv("COLUMNS", raising=False)  # a set COLUMNS rules (as it should), e.g. xdist's
    long = " ".join(f"word{i}" for i in range(60))  # about 400 columns

    def render(console: RichConsole) -> list[str]:
        table = Table()
        table.add_column("pair")
        table.add_column("reason")
        table.add_row("sub/two_plus_two", long)
        console.print(f"[yellow]warning:[/] {long}")
        console.print(table)
        assert isinstance(console.file, io.StringIO)
        return console.file.getvalue().splitlines()

    lines = render(cli.Console(file=io.StringIO()))
    assert lines[0] == f"warning: {long}"
    assert sum(long in line for line in lines) == 2  # the table row holds the reason whole
    huge = cli.Console(file=io.StringIO())
    huge.print("x" * (group.NO_TERMINAL_WIDTH + 10), highlight=False)  # soft wrap keeps it
    assert huge.file.getvalue() == "x" * (group.NO_TERMINAL_WIDTH + 10) + "\n"
    # Negative control: rich's own console cuts both at 80 columns without a terminal.
    plain = render(RichConsole(file=io.StringIO()))
    assert not any(long in line for line in plain) and max(map(len, plain)) <= 80
    # On a terminal, the terminal's width still rules.
    tty = cli.Console(file=io.StringIO(), force_terminal=True, width=60, color_system=None)
    assert max(map(len, render(tty))) <= 60


def test_every_option_of_every_command_has_help_text() -> None:
    missing = [f"{name} {'/'.join(p.opts)}" for name, cmd in [("lean-eval", main),
                                                              *sorted(main.commands.items())]
               for p in cmd.params if isinstance(p, click.Option) and not (p.help or "").strip()]
    assert not missing, f"options without help: {missing}"


# The arguments each command that takes --benchmark needs besides it (default: none).
BENCHMARK_ARGS = {
    "run-eval": [str(REPO / "examples/submissions/correct"), "--out", "{tmp}/out"],
    "start-problem": ["two_plus_two", "{tmp}/dest"],
    "validate-submission": [str(REPO / "examples/submissions/correct")],
    "prepare": ["--dry-run"],
}
# Commands that read something else before the benchmark, and what. (They load it with the
# same cli._load, so they say the same.)
BENCHMARK_LATER = {"replay": "a recorded output directory", "config": "nothing: it only lists"}
NEEDS_BENCHMARK = sorted(n for n, c in main.commands.items() if n not in BENCHMARK_LATER
                         and any(p.name == "benchmark" for p in c.params))


@pytest.mark.parametrize("command", NEEDS_BENCHMARK)
def test_outside_a_benchmark_every_command_says_to_pass_benchmark(
        command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert {"run-eval", "probe", "start-problem", "validate-catalog"} <= set(NEEDS_BENCHMARK)
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")  # under the temp dir: in no git checkout
    args = [a.format(tmp=tmp_path) for a in BENCHMARK_ARGS.get(command, [])]
    for extra in ([], ["--benchmark", str(tmp_path / "here")]):
        result = CliRunner().invoke(main, [command, *args, *extra], catch_exceptions=False)
        assert result.exit_code == 2, result.output
        assert f"{tmp_path / 'here'} is not a benchmark checkout (" in result.stderr
        assert "); pass --benchmark DIR" in result.stderr
        assert "lacks" not in result.stderr
    assert not (tmp_path / "dest").exists()


def test_start_problem_packages_under_a_name_of_ones_own(bench_copy: Path,
                                                        outside: Path) -> None:
    result = CliRunner().invoke(main, ["start-problem", "two_plus_two", str(outside / "d"),
                                       "--benchmark", str(bench_copy)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (line,) = [x.strip() for x in result.stdout.splitlines() if "tar czf" in x]
    archive = line.split()[2]
    assert archive == "YOURNAME-two_plus_two.tgz" and "# YOURNAME: your own name" in line
    from lean_eval.intake import reader

    assert reader.submission_id(Path(archive)) == "YOURNAME-two_plus_two"


def test_two_archives_with_one_id_are_told_to_rename(outside: Path) -> None:
    (outside / "a").mkdir()
    (outside / "b").mkdir()
    for where in ("a", "b"):
        shutil.copytree(REPO / "examples/submissions/correct", outside / where / "mine")
    result = CliRunner().invoke(main, ["run-eval", str(outside / "a" / "mine"),
                                       str(outside / "b" / "mine"), "--out", str(outside / "o"),
                                       "--benchmark", str(REPO)], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert "have the same id 'mine'" in result.stderr
    assert "rename one, e.g. to <submitter>-mine" in result.stderr


def test_counts_and_tally_name_the_same_kinds_as_documented() -> None:
    """`counts` uses the verdict kinds; `tally` (read by leaderboards, in the committed summary
    schema) renames two of them. The mapping is fixed and the README states it."""
    from typing import get_args

    from lean_eval.records import verdict

    kinds = set(get_args(verdict.Verdict.model_fields["verdict"].annotation))
    assert set(verdict.TALLY) == kinds
    assert set(verdict.TALLY.values()) == set(verdict.Tally.model_fields)
    renamed = {k: v for k, v in verdict.TALLY.items() if k != v}
    assert renamed == {"accepted": "solved", "invalid_submission": "invalid"}
    readme = " ".join((REPO / "docs" / "scale.md").read_text(encoding="utf-8").split())
    for kind, name in renamed.items():
        assert f"`{name}` counts `{kind}` pairs" in readme
