"""The ``lean-eval`` group class and its consoles (design §3)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from lean_eval.cli.config import SUBCOMMAND_KEY, add_envvars
from lean_eval.cli.exits import (
    EXIT_INTERRUPTED,
    JSON_ERRORS,
    Wording,
    asks_for_json,
    fail,
    handled,
    wording_of,
)

__all__ = ["NO_TERMINAL_WIDTH", "Console", "LeanEvalGroup", "no_wrap_console", "warn"]

NO_TERMINAL_WIDTH = 10_000  # the width of a table printed to a file or pipe: in effect, none


def no_wrap_console(**kwargs: Any) -> Any:
    """A rich console that never wraps without a terminal: a long line stays whole for grep in
    CI logs (rich would cut it at 80 columns)."""
    from rich.console import Console  # rich is slow to import: not for --help

    console = Console(**kwargs)
    if not console.is_terminal:
        console.soft_wrap = True
        if "width" not in kwargs and "COLUMNS" not in os.environ:
            console.width = NO_TERMINAL_WIDTH
    return console


if TYPE_CHECKING:
    from rich.console import Console
else:
    Console = no_wrap_console


def warn(message: str, quiet: bool = False) -> None:
    """One ``warning:`` line on stderr (none under -q)."""
    Console(stderr=True, quiet=quiet).print(f"[yellow]warning:[/] {message}")


# ``lean-eval --help``: each command once, under who uses it, in one complete sentence (click
# would cut a docstring's first sentence at 45 characters). tests/cli/test_messages.py checks
# every visible command is here.
SECTIONS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("Submitters", (
        ("list-problems", "List the benchmark's problems with their holes, sets and tags."),
        ("start-problem", "Copy a problem's workspace to write a proof in."),
        ("validate-submission", "Check a submission's layout and files, without Lean."),
        ("test", "Build and judge one workspace as it stands, for local reproduction."),
    )),
    ("Maintainers", (
        ("prepare", "Install what scoring needs: elan, Lean, bubblewrap, shared packages."),
        ("run-eval", "Score submissions against the benchmark, each pair in a sandbox."),
        ("probe", "Run the sandbox and environment probes that guard every run."),
        ("check-comparator-installation", ("Check that this installation accepts a known-good "
                                          "proof and rejects a wrong one.")),
        ("check-eval-workflow", ("Score a generated batch and compare it with the expected "
                                "verdicts.")),
        ("validate-catalog", "Check the benchmark's catalog, pins and workspaces."),
        ("import-catalog", "Turn a checkout in another benchmark layout into this one."),
        ("audit-results", ("Find the results store's records scored on a statement that "
                           "changed without a new revision.")),
        ("config", "Show every setting's value and where it comes from."),
    )),
    ("CI and results", (
        ("report", "Render a finished run as a table, Markdown, JUnit, JSON, CSV or HTML."),
        ("merge", "Combine the outputs of one batch's shards into one output."),
        ("verify", "Check offline that a run's verdicts carry valid signatures."),
        ("replay", "Score a run's recorded pairs again and compare the verdicts."),
        ("export-results", "Append a run's accepted pairs to a results store."),
    )),
)


class LeanEvalGroup(click.Group):
    """One error style, ``exits.handled`` applied once, every option's envvar, and the command
    list in ``SECTIONS``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        add_envvars(self)

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        super().add_command(cmd, name)
        add_envvars(self)  # a command registered later gets its variables too

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        del ctx
        listed = {name for _, rows in SECTIONS for name, _ in rows}
        for title, rows in SECTIONS:
            shown = [(name, text) for name, text in rows if name in self.commands]
            if shown:
                with formatter.section(title):
                    formatter.write_dl(shown)
        other = [(name, cmd.get_short_help_str(200)) for name, cmd in sorted(self.commands.items())
                 if name not in listed and not cmd.hidden]
        if other:
            with formatter.section("Other commands"):
                formatter.write_dl(other)

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        # The group callback runs before the subcommand parses its arguments; it reads the
        # subcommand's --benchmark from here to find the benchmark's pyproject.toml.
        ctx.meta[SUBCOMMAND_KEY] = (name, command, tuple(rest))
        return name, command, rest

    def invoke(self, ctx: click.Context) -> Any:
        def wording() -> Wording:
            name = ctx.invoked_subcommand
            return wording_of(self.get_command(ctx, name) if name else None)

        def as_json() -> bool:
            _, command, args = ctx.meta.get(SUBCOMMAND_KEY, (None, None, ()))
            return bool(ctx.meta.get(JSON_ERRORS)) or asks_for_json(command, args)

        with handled(wording, as_json):  # the group callback (the config file) and the command
            return super().invoke(ctx)

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            result = super().main(args, prog_name, complete_var, False, **extra)
        except click.ClickException as exc:
            if isinstance(exc, getattr(click.exceptions, "NoArgsIsHelpError", ())):
                exc.show()  # click >= 8.2: `lean-eval` alone prints the help, as it should
            else:
                _show_click_error(exc)
            sys.exit(exc.exit_code)
        except click.Abort:  # Ctrl-C while click parsed the arguments, before any command ran
            fail("interrupted", EXIT_INTERRUPTED)
        sys.exit(result if isinstance(result, int) else 0)


def _show_click_error(exc: click.ClickException) -> None:
    """Click's usage and help hint, then ``lean-eval: error: ...`` where click says ``Error:``
    (and the JSON error document on stdout when the command asked for one, ``json_errors``)."""
    usage_ctx = exc.ctx if isinstance(exc, click.UsageError) else None
    if usage_ctx is not None and usage_ctx.meta.get(JSON_ERRORS):
        from lean_eval.records.run_report import ErrorDocument  # pydantic: only on this path

        click.echo(ErrorDocument(message=exc.format_message(), error="usage",
                                 exit_code=exc.exit_code).model_dump_json(indent=2))
    if usage_ctx is not None:
        click.echo(usage_ctx.get_usage(), err=True)
        if usage_ctx.command.get_help_option(usage_ctx) is not None:
            names = usage_ctx.command.get_help_option_names(usage_ctx)
            click.echo(f"Try '{usage_ctx.command_path} {max(names, key=len)}' for help.\n",
                       err=True)
    click.echo(f"lean-eval: error: {exc.format_message()}", err=True)
