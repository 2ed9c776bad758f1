"""What a newcomer meets first: help, common options, environment defaults, byte sizes."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from lean_eval.cli import ByteSize, main

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
