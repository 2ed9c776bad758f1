"""The ``lean-eval`` group class and its consoles (design §3)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from lean_eval.cli.config import SUBCOMMAND_KEY, add_envvars
from lean_eval.cli.exits import EXIT_INTERRUPTED, Wording, fail, handled, wording_of

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


class LeanEvalGroup(click.Group):
    """One error style, ``exits.handled`` applied once, and every option's envvar."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        add_envvars(self)

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        super().add_command(cmd, name)
        add_envvars(self)  # a command registered later gets its variables too

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

        with handled(wording):  # the group callback (the config file) and the command
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
    """Click's usage and help hint, then ``lean-eval: error: ...`` where click says ``Error:``."""
    usage_ctx = exc.ctx if isinstance(exc, click.UsageError) else None
    if usage_ctx is not None:
        click.echo(usage_ctx.get_usage(), err=True)
        if usage_ctx.command.get_help_option(usage_ctx) is not None:
            names = usage_ctx.command.get_help_option_names(usage_ctx)
            click.echo(f"Try '{usage_ctx.command_path} {max(names, key=len)}' for help.\n",
                       err=True)
    click.echo(f"lean-eval: error: {exc.format_message()}", err=True)
