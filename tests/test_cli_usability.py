"""What a newcomer meets first: help, common options, environment defaults, byte sizes."""

from __future__ import annotations

import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result
from conftest import BWRAP_FLOOR, REPO, STANDIN, make_submission
from hypothesis import given
from hypothesis import strategies as st

from lean_eval import inputs, probe
from lean_eval.cli import ByteSize, main
from lean_eval.errors import UsageError

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
    result = CliRunner().invoke(main, [command, "-h"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
    doc = (main.commands[command].help or "").strip()
    assert doc, f"{command} has no help text"
    assert " ".join(doc.split()[:8]) in " ".join(result.output.split())


def test_dash_h_on_the_group() -> None:
    result = CliRunner().invoke(main, ["-h"])
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

    monkeypatch.setattr(probe, "run_probes", refuse)


def _run_eval(bench: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["run-eval", *args, "--benchmark", str(bench),
                                     "--toolchain", str(STANDIN),
                                     "--allow-bwrap-version", BWRAP_FLOOR])


def test_nonexistent_submission_fails_fast_without_skip_probes(
        bench_copy: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_probes(monkeypatch)
    started = time.monotonic()
    result = _run_eval(bench_copy, str(outside / "nope"), "--out", str(outside / "out"))
    assert time.monotonic() - started < 3
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
        inputs.check_submission(outside / name)
    inputs.check_run([sub], outside / "out", outside / "work", {"two_plus_two"}, REPO)
    (outside / "link").symlink_to(sub)
    with pytest.raises(UsageError, match="symbolic link"):
        inputs.check_submission(outside / "link")
