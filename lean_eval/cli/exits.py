"""Every command's exit code, decided in one place from ``errors.py``'s typed errors (the codes:
design §3). The group applies ``handled`` once around its callback and the command, so no
command catches an error to choose a code. SIGTERM is raised as ``TerminatedError`` so cleanup
runs; a bug's traceback goes to a file in the temp directory (the command's output may be
read-only). A command that chose its exit code calls ``sys.exit``, which passes through."""

from __future__ import annotations

import contextlib
import errno
import os
import platform
import re
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import Any, NamedTuple, NoReturn

import click

from lean_eval import __version__
from lean_eval.errors import LeanEvalError, SetupError, TerminatedError

EXIT_FAULT = 1  # a harness fault (or, for a command's result, "something failed")
EXIT_SETUP = 2  # a setup failure: nothing was done
EXIT_UNEXPECTED = 3  # a bug: the traceback is in a file the message names
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TERMINATED = 143  # 128 + SIGTERM
CRASH_PREFIX = "lean-eval-crash-"
# ctx.meta key (click shares meta between a context and its children): the command asked for
# --json and prints a setup failure as a JSON error document too (``json_errors``)
JSON_ERRORS = "lean_eval.json_errors"


def fail(message: str, code: int = EXIT_SETUP, document: str | None = None) -> NoReturn:
    """``lean-eval: error: message`` on stderr and exit ``code``; ``document``: the kind of
    failure, when the command asked for a JSON error document on stdout as well."""
    if document is not None:
        from lean_eval.records.run_report import ErrorDocument  # pydantic: only on this path

        click.echo(ErrorDocument(message=message, error=document, exit_code=code)
                   .model_dump_json(indent=2))
    click.echo(f"lean-eval: error: {message}", err=True)
    sys.exit(code)


def gate_message(fail_on: frozenset[str], found: Sequence[str], code: int,
                 note: str = "") -> str:
    """The stderr line naming what tripped ``--fail-on`` (``scoring.gate.failures``: a pair is
    "submission/problem", a bare id a submission that scored nothing) and the code returned."""
    shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    pairs = sum("/" in item for item in found)
    counted = " and ".join(f"{n} {noun}" for n, noun in (
        (pairs, "pair(s)"), (len(found) - pairs, "submission(s) that scored nothing")) if n)
    return (f"lean-eval: --fail-on {','.join(sorted(fail_on))}: {counted} failed the gate: "
            f"{_printable(shown)}; exit {code}{note}")


def _printable(text: str) -> str:
    from lean_eval.outputs.report.run_report import printable  # only when a gate tripped

    return printable(text)


def error_kind(exc: BaseException) -> str:
    """``ProbesFailedError`` -> ``probes_failed``: the ``error`` of a JSON error document."""
    name = type(exc).__name__.removesuffix("Error") or "setup"
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def json_errors(command: click.Command) -> click.Command:
    """Under ``--json``, a setup failure (exit 2) also prints an ``ErrorDocument`` on stdout,
    the shape the public pipeline reads (design §3); put it above ``@click.command``. --json
    becomes eager, so an argument error found after it is reported so too."""
    for param in command.params:
        if param.name == "as_json" and isinstance(param, click.Option):
            param.is_eager = True
            param.callback = _ask_for_json_errors
    return command


def asks_for_json(command: click.Command | None, args: Sequence[str]) -> bool:
    """Whether ``command``, given ``args`` it has not parsed yet, will print its failures as
    JSON too: for a failure before it parses them (the ``--config`` file's, read first)."""
    if command is None or not any(p.name == "as_json" and p.callback is _ask_for_json_errors
                                  for p in command.params):
        return False
    options = args[:args.index("--")] if "--" in args else args  # after "--": arguments
    return "--json" in options


def _ask_for_json_errors(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    del param
    if value:
        ctx.meta[JSON_ERRORS] = True
    return value


class Wording(NamedTuple):
    """What a command's failure messages add about the work it leaves behind."""

    fault: str = ""  # after a harness fault's message: "; the run stopped, ..."
    stopped: str = ""  # after "interrupted" or "terminated": "; verdicts ... stay valid"


PLAIN = Wording()


class Worded(click.Command):
    """``@click.command(NAME, cls=Worded, wording=Wording(...))``."""

    def __init__(self, *args: Any, wording: Wording = PLAIN, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.wording = wording


def wording_of(command: click.Command | None) -> Wording:
    return command.wording if isinstance(command, Worded) else PLAIN


@contextlib.contextmanager
def handled(wording: Callable[[], Wording] = lambda: PLAIN,
            as_json: Callable[[], bool] = lambda: False) -> Iterator[None]:
    """Map what escapes the body to an exit code; ``wording`` is asked only when needed, and
    ``as_json`` (whether a setup failure prints a JSON error document too) only on one."""
    previous = _raise_on_sigterm()
    try:
        yield
    except SetupError as exc:
        fail(str(exc), EXIT_SETUP, error_kind(exc) if as_json() else None)
    except LeanEvalError as exc:
        fail(f"{exc}{wording().fault}", EXIT_FAULT)
    except KeyboardInterrupt:
        fail(f"interrupted{wording().stopped}", EXIT_INTERRUPTED)
    except TerminatedError:
        fail(f"terminated{wording().stopped}", EXIT_TERMINATED)
    except (click.ClickException, click.exceptions.Exit, click.Abort):
        raise  # click's: its own messages and codes (the group prints them in our style)
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            raise  # stdout closed early (`| head`): click's quiet exit 1, as before
        crashed(exc)
    except Exception as exc:  # noqa: BLE001 - the one place that turns a bug into exit 3
        crashed(exc)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _terminate(signum: int, frame: FrameType | None) -> None:
    del signum, frame
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise TerminatedError


def _raise_on_sigterm() -> Any:
    """The SIGTERM handler replaced (None: not the main thread, where none can be installed)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _terminate)


def crashed(exc: BaseException) -> NoReturn:
    """Exit 3 naming ``exc`` and its traceback's file (none writable: the traceback follows)."""
    from lean_eval.intake.bounds import show  # pydantic comes with it: only on this rare path

    lines = str(exc).strip().splitlines()
    # the message may hold a submitted name: escaped, as every other message is
    what = f"unexpected {type(exc).__name__}" + (f": {show(lines[0])}" if lines else "")
    report = "".join([
        f"lean-eval {__version__}, Python {platform.python_version()} on {platform.platform()}\n",
        f"argv: {sys.argv!r}\n\n",
        *traceback.format_exception(type(exc), exc, exc.__traceback__)])
    try:
        handle, name = tempfile.mkstemp(prefix=CRASH_PREFIX, suffix=".txt")
        with os.fdopen(handle, "w", encoding="utf-8") as crash_file:
            crash_file.write(report)
    except OSError as cannot:
        click.echo(f"lean-eval: error: {what}; this is a bug in lean-eval, please report it "
                   f"(the traceback could not be saved: {cannot}; it follows)", err=True)
        click.echo(report, err=True, nl=False)
        sys.exit(EXIT_UNEXPECTED)
    fail(f"{what}; this is a bug in lean-eval, please report it with the traceback in {name}",
         EXIT_UNEXPECTED)
