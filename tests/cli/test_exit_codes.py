"""One mapping from errors to exit codes for every command (lean_eval/cli/exits.py).

Each exit class once, raised from inside a command (the setup step it calls is replaced), so
what is checked is the mapping alone: 2 setup, 1 harness fault, 130 Ctrl-C, 143 SIGTERM, 3 an
unexpected exception whose traceback is in the file the one-line message names.
"""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from lean_eval import api
from lean_eval.benchmark import checkout
from lean_eval.cli import exits, main
from lean_eval.errors import CatalogError, OutputError


def _list_problems_raising(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                           exc: BaseException | None = None, *, sigterm: bool = False) -> Result:
    """``lean-eval list-problems`` whose catalog load raises ``exc`` (or receives SIGTERM)."""
    def load_selected(*args: Any, **kwargs: Any) -> Any:
        if sigterm:
            os.kill(os.getpid(), signal.SIGTERM)
        raise exc if exc is not None else AssertionError("SIGTERM did not stop the command")

    monkeypatch.setattr(checkout, "load_selected", load_selected)
    monkeypatch.chdir(tmp_path)  # in no git checkout: no config file is found
    return CliRunner().invoke(main, ["list-problems"], catch_exceptions=False)


def _run_eval_raising(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                      exc: BaseException) -> Result:
    def score(*args: Any, **kwargs: Any) -> Any:
        raise exc

    monkeypatch.setattr(api, "run_request", score)
    monkeypatch.chdir(tmp_path)
    return CliRunner().invoke(main, ["run-eval", str(tmp_path / "sub"), "--out",
                                     str(tmp_path / "out")], catch_exceptions=False)


def test_a_setup_error_exits_2_with_its_message(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    result = _list_problems_raising(monkeypatch, tmp_path, CatalogError("problems/x.toml: bad"))
    assert result.exit_code == exits.EXIT_SETUP == 2
    assert result.stderr == "lean-eval: error: problems/x.toml: bad\n"


def test_a_harness_fault_exits_1_saying_what_became_of_the_work(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    plain = _list_problems_raising(monkeypatch, tmp_path, OutputError("disk full"))
    assert plain.exit_code == exits.EXIT_FAULT == 1
    assert plain.stderr == "lean-eval: error: disk full\n"
    run = _run_eval_raising(monkeypatch, tmp_path, OutputError("disk full"))
    assert run.exit_code == 1
    assert run.stderr == ("lean-eval: error: disk full; the run stopped, verdicts already "
                          "written stay valid\n")


def test_ctrl_c_exits_130(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    plain = _list_problems_raising(monkeypatch, tmp_path, KeyboardInterrupt())
    assert plain.exit_code == exits.EXIT_INTERRUPTED == 130
    assert plain.stderr == "lean-eval: error: interrupted\n"
    run = _run_eval_raising(monkeypatch, tmp_path, KeyboardInterrupt())
    assert run.exit_code == 130
    assert run.stderr == "lean-eval: error: interrupted; verdicts already written stay valid\n"


def test_sigterm_exits_143_and_the_handler_is_restored(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    before = signal.getsignal(signal.SIGTERM)
    result = _list_problems_raising(monkeypatch, tmp_path, sigterm=True)
    assert result.exit_code == exits.EXIT_TERMINATED == 143, result.output
    assert result.stderr == "lean-eval: error: terminated\n"
    assert signal.getsignal(signal.SIGTERM) == before


def test_an_unexpected_exception_exits_3_naming_its_traceback_file(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    result = _list_problems_raising(monkeypatch, tmp_path, ValueError("boom\nsecond line"))
    assert result.exit_code == exits.EXIT_UNEXPECTED == 3
    (line,) = result.stderr.splitlines()  # one line, whatever the exception's text
    prefix = ("lean-eval: error: unexpected ValueError: boom; this is a bug in lean-eval, "
              "please report it with the traceback in ")
    assert line.startswith(prefix), line
    crash = Path(line.removeprefix(prefix))
    assert crash.parent == tmp_path / "tmp" and crash.name.startswith(exits.CRASH_PREFIX)
    text = crash.read_text(encoding="utf-8")
    assert "Traceback (most recent call last)" in text
    assert "ValueError: boom\nsecond line" in text and "in load_selected" in text
    assert "Traceback" not in result.output


def test_a_usage_error_and_a_chosen_exit_code_pass_through(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """Negative control: click's errors and a command's own exit code are not remapped."""
    monkeypatch.chdir(tmp_path)
    usage = CliRunner().invoke(main, ["list-problems", "--no-such-option"],
                               catch_exceptions=False)
    assert usage.exit_code == 2 and "lean-eval: error: No such option" in usage.stderr
    unknown = CliRunner().invoke(main, ["config", "no-such-command"], catch_exceptions=False)
    assert unknown.exit_code == 2
    assert unknown.stderr.startswith("lean-eval: error: no command 'no-such-command'")
    assert not list(tmp_path.glob(f"{exits.CRASH_PREFIX}*"))


def test_an_unexpected_exception_s_message_is_printed_escaped(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A submitted name in an unexpected error reaches the terminal with its control
    characters escaped (ESC here), as in every other message."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    result = _list_problems_raising(monkeypatch, tmp_path, ValueError("bad \x1b[2J name"))
    assert result.exit_code == exits.EXIT_UNEXPECTED
    assert "\x1b" not in result.stderr and "bad \\x1b[2J name" in result.stderr
