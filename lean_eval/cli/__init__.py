"""The ``lean-eval`` command line: the only package that parses options, prints and exits.

This module holds the group ``main`` and registers every command; nothing imports it back.
Below it, each importing only those listed before it: ``deferred``, ``exits``, ``options``,
``config``, ``group``, ``steps``, then the command modules, each listing its ``COMMANDS``.
"""

from __future__ import annotations

from pathlib import Path

import click

from lean_eval import __version__
from lean_eval.cli import (
    authoring,
    catalog_commands,
    config,
    config_command,
    probe_script,
    publish,
    replay,
    results,
    scoring,
)
from lean_eval.cli.group import Console, LeanEvalGroup
from lean_eval.cli.options import CONTEXT_SETTINGS, PROBE_NAMES, ByteSize


@click.group(cls=LeanEvalGroup, context_settings=CONTEXT_SETTINGS)
@click.option("--config", "config_file", metavar="FILE",
              type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="Settings file: TOML, one table per command ([run-eval]), keyed by long "
                   "option names (default: ./lean-eval.toml, else [tool.lean-eval] in the "
                   "benchmark's pyproject.toml). Flags and LEAN_EVAL_<OPTION> override it.")
@click.version_option(__version__, prog_name="lean-eval")
@click.pass_context
def main(ctx: click.Context, config_file: Path | None) -> None:
    """Score untrusted Lean 4 proofs against a trusted benchmark, inside bubblewrap.

    Every option can also be set by the environment variable LEAN_EVAL_<OPTION> or in a
    config file; `lean-eval config` shows each setting and where it comes from.
    """
    config.apply(ctx, config_file)


for _module in (scoring, replay, authoring, catalog_commands, results, publish, config_command,
                probe_script):
    for _command in _module.COMMANDS:
        main.add_command(_command)

__all__ = ["PROBE_NAMES", "ByteSize", "Console", "main"]
