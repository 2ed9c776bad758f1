"""The options, parameter types and option groups the commands share (design §3), declared
once. Nothing here imports the pipeline: ``--help`` builds every command from this alone."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from lean_eval.cli.deferred import reader, run_report, verdict
from lean_eval.cli.exits import gate_message
from lean_eval.errors import SetupError
from lean_eval.outputs.report.names import FORMATS
from lean_eval.records import kinds

F = TypeVar("F", bound=Callable[..., Any])
# Spelled here so --help need not import probes.registry (a test checks they are equal).
PROBE_NAMES = ("sandbox_engaged", "env_dump", "tool_path", "artifact_tamper", "comparator")
# The outputs' own list, from a module that imports nothing (not a copy).
REPORT_FORMATS = FORMATS

_BYTE_UNITS = {"": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20,
               "g": 1 << 30, "gib": 1 << 30}


if TYPE_CHECKING:  # click's ParamType is generic for type checkers only before click 8.3
    _IntParamType = click.ParamType[int]
else:
    _IntParamType = click.ParamType


class ByteSize(_IntParamType):
    """A byte count, ``K``/``M``/``G`` suffixes in powers of 1024, at least ``minimum``."""

    name = "bytes"

    def __init__(self, minimum: int = 1) -> None:
        self.minimum = minimum

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> int:
        if isinstance(value, int):
            number = value
        else:
            text = str(value).strip().replace("_", "")
            digits = text.rstrip("KkMmGgIiBb")
            unit = text[len(digits):].lower()
            if not digits.isdigit() or unit not in _BYTE_UNITS:
                self.fail(f"{value!r} is not a byte size (e.g. 1048576, 512K, 16M, 8GiB)",
                          param, ctx)
            number = int(digits) * _BYTE_UNITS[unit]
        if number < self.minimum:
            self.fail(f"{value} is below the minimum of {self.minimum} bytes", param, ctx)
        return number


CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}


def _options(func: F, benchmark: bool) -> F:
    decorators = [
        *([click.option("--benchmark", type=click.Path(path_type=Path, file_okay=False),
                        help="Benchmark checkout (default: the current git checkout).")]
          if benchmark else []),
        click.option("--toolchain", type=click.Path(path_type=Path, file_okay=False),
                     envvar="LEAN_EVAL_TOOLCHAIN", show_envvar=True,
                     help="Lean toolchain directory with bin/lake (default: the elan install "
                          "of lean-toolchain)."),
        click.option("--bwrap", "bwrap_path", type=str, envvar="LEAN_EVAL_BWRAP",
                     show_envvar=True,
                     help="bubblewrap executable (default: the one `lean-eval prepare` "
                          "installed, else bwrap on the filtered PATH)."),
        click.option("--allow-bwrap-version", "allow_bwrap", metavar="MIN",
                     envvar="LEAN_EVAL_ALLOW_BWRAP_VERSION", show_envvar=True,
                     help="Accept bubblewrap older than 0.12.0, down to MIN. Recorded in every "
                          "verdict."),
        click.option("--json", "as_json", is_flag=True,
                     help="Machine output (JSON with schema_version) on stdout."),
        click.option("-v", "--verbose", count=True,
                     help="More detail (each command says which: `verbose_help`)."),
        click.option("-q", "--quiet", is_flag=True,
                     help="Print nothing but errors (and the --json document, if asked for)."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def verbose_help(text: str) -> Callable[[click.Command], click.Command]:
    """What ``-v`` adds for one command; put it above ``@click.command`` (it edits the
    command's ``params``)."""
    def apply(command: click.Command) -> click.Command:
        for param in command.params:
            if param.name == "verbose" and isinstance(param, click.Option):
                param.help = text
        return command

    return apply


def common_options(func: F) -> F:
    """Options every benchmark command honours (design §3)."""
    return _options(func, benchmark=True)


def tool_options(func: F) -> F:
    """The common options without --benchmark, for commands that read no benchmark."""
    return _options(func, benchmark=False)


def intake_limit_options(func: F) -> F:
    """The intake limits (design §5.2), shared by run-eval and validate-submission."""
    decorators = [
        click.option("--max-file-bytes", type=ByteSize(), default="1MiB", show_default=True,
                     help="Largest submitted file (bytes; K/M/G suffixes); a file over it is "
                          "refused from its size and rejects its own problem only."),
        click.option("--max-total-bytes", type=ByteSize(), default="16MiB", show_default=True,
                     help="Bytes of all the files of one submission that are read (K/M/G "
                          "suffixes)."),
        click.option("--max-files", type=click.IntRange(min=1), default=10_000,
                     show_default=True,
                     help="Entries walked in one submission (archive members included)."),
        click.option("--max-depth", type=click.IntRange(min=1, max=256), default=32,
                     show_default=True,
                     help="Path components of any entry; deeper ones are never read."),
        click.option("--max-archive-bytes", type=ByteSize(), default="64MiB",
                     show_default=True,
                     help="Largest submission archive file (K/M/G suffixes)."),
        click.option("--intake-timeout", type=click.FloatRange(min=0.1), default=60.0,
                     show_default=True, help="Seconds to read one submission before rejecting it."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def intake_limits(max_file_bytes: int, max_total_bytes: int, max_files: int, max_depth: int,
                  max_archive_bytes: int, intake_timeout: float) -> reader.IntakeLimits:
    return reader.IntakeLimits(max_file_bytes=max_file_bytes, max_total_bytes=max_total_bytes,
                               max_files=max_files, max_depth=max_depth,
                               max_archive_bytes=max_archive_bytes,
                               intake_seconds=intake_timeout)


TOOL_OPTIONS = frozenset({"toolchain", "bwrap_path", "allow_bwrap"})


def without_tool_options(command: click.Command) -> click.Command:
    """Drop the tool options from a command that runs neither Lean nor bubblewrap; put it above
    ``@click.command`` (it edits the command's ``params``)."""
    command.params = [p for p in command.params if p.name not in TOOL_OPTIONS]
    return command


def selection_options(func: F) -> F:
    """--set, --status and --tag: which problems of the catalog a command works on."""
    decorators = [
        click.option("--set", "set_name", metavar="NAME",
                     help="Only the members of sets/NAME.toml (a frozen set must match the "
                          "catalog's statement revisions)."),
        click.option("--status", "statuses", multiple=True, metavar="STATUS",
                     help="Only problems with this status (repeatable: any of them)."),
        click.option("--tag", "tags", multiple=True, metavar="TAG",
                     help="Only problems with this tag (repeatable: any of them)."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


# --fail-on's kinds for --help: records.kinds (no pydantic, so --help stays fast)
FAIL_ON_KINDS = kinds.FAIL_ON_KINDS


if TYPE_CHECKING:  # click's ParamType is generic for type checkers only before click 8.3
    _KindsParamType = click.ParamType[frozenset[str]]
else:
    _KindsParamType = click.ParamType


class FailOn(_KindsParamType):
    """A comma-separated subset of ``run_report.FAIL_ON``, as a frozenset."""

    name = "KIND[,KIND...]"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> frozenset[str]:
        if isinstance(value, frozenset):
            return value
        try:
            return run_report.failure_kinds([str(value)])
        except SetupError as exc:
            self.fail(str(exc).removeprefix("--fail-on: "), param, ctx)


def sandbox_user_option(command: F) -> F:
    """``--sandbox-user``: who a root harness runs the comparator and every build as."""
    return click.option(
        "--sandbox-user", "sandbox_user", metavar="USER[:GROUP]", default=None,
        help="A root harness runs Lake, every build and every kernel as this unprivileged "
             "user and group (name or number; no supplementary groups). Default: nobody and "
             "its group. A harness that is not root runs them as itself. Recorded in every "
             "verdict.",
    )(command)


def fail_on_option(command: F) -> F:
    """``--fail-on``, the same for every command that gates CI on verdicts."""
    return click.option(
        "--fail-on", "fail_on", type=FailOn(), default="", show_default=False,
        help=f"Exit 1 when any pair's verdict is one of these ({FAIL_ON_KINDS}; comma-"
             "separated; verdict names such as invalid_submission too); a submission that "
             "scored nothing (rejected as a whole, or no problem directory) counts as "
             "invalid, and a pair no run scored (a shard missing from a merge) fails any "
             "gate. Default: none; the usual exit codes apply.",
    )(command)


def failing_exit(summary: verdict.Summary, fail_on: frozenset[str], code: int) -> int:
    """``report``'s gate: ``code``, or 1 when it is 0 or 1 and ``run_report.failures`` finds
    something (named on stderr). run-eval's code is decided before its summary is written
    (``scoring.gate``)."""
    found = run_report.failures(summary, fail_on) if fail_on else ()
    if found and code in (0, 1):
        click.echo(gate_message(fail_on, found, 1), err=True)
        return 1
    return code
