"""The ``lean-eval`` group's behaviour: one error style, settings from the environment and a
config file, and consoles that never wrap without a terminal (design §3).

Imported by ``lean_eval.cli`` before anything else there, so it imports nothing of the package
at module level (``config`` is imported when the group first runs).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import click

NO_TERMINAL_WIDTH = 10_000  # the width of a table printed to a file or pipe: in effect, none


def no_wrap_console(**kwargs: Any) -> Any:
    """A rich console that, without a terminal, never wraps: a long line stays whole for grep
    in CI logs (rich would cut it at 80 columns); tables get as wide as they need."""
    from rich.console import Console

    console = Console(**kwargs)
    if not console.is_terminal:
        console.soft_wrap = True
        if "width" not in kwargs and "COLUMNS" not in os.environ:
            console.width = NO_TERMINAL_WIDTH
    return console


class LeanEvalGroup(click.Group):
    """The ``lean-eval`` group: one error style, and every option settable by environment
    variable and config file (``lean_eval/cli/config.py``, design §3)."""

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        from lean_eval.cli import config

        name, command, rest = super().resolve_command(ctx, args)
        # The group callback runs before the subcommand parses its arguments; it reads the
        # subcommand's --benchmark from here to find the benchmark's pyproject.toml.
        ctx.meta[config.SUBCOMMAND_KEY] = (name, command, tuple(rest))
        return name, command, rest

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        from lean_eval.cli import config

        config.add_envvars(self)  # again: commands may have been added since import
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
        except click.Abort:
            click.echo("lean-eval: error: interrupted", err=True)
            sys.exit(130)  # EXIT_INTERRUPTED, as every command exits on Ctrl-C
        sys.exit(result if isinstance(result, int) else 0)


def _show_click_error(exc: click.ClickException) -> None:
    """Click's usage errors in lean-eval's one style: the usage line and the help hint as
    click prints them, then ``lean-eval: error: ...`` where click says ``Error: ...``."""
    usage_ctx = exc.ctx if isinstance(exc, click.UsageError) else None
    if usage_ctx is not None:
        click.echo(usage_ctx.get_usage(), err=True)
        if usage_ctx.command.get_help_option(usage_ctx) is not None:
            names = usage_ctx.command.get_help_option_names(usage_ctx)
            click.echo(f"Try '{usage_ctx.command_path} {max(names, key=len)}' for help.\n",
                       err=True)
    click.echo(f"lean-eval: error: {exc.format_message()}", err=True)
