"""``lean-eval config``: each setting read as its command would read it (a resilient parse of
its arguments under the same ``default_map``)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import click
from click.core import ParameterSource

from lean_eval.cli.config import (
    Loaded,
    allowed,
    did_you_mean,
    group_of,
    resolve,
    settings,
    show_value,
)
from lean_eval.cli.deferred import documents
from lean_eval.cli.exits import EXIT_SETUP, fail

# Taken as config's own after COMMAND too; the command's own -q, -v and --json then show as
# their defaults. The count is what each adds to --verbose.
OWN_FLAGS = {"--json": 0, "-q": 0, "--quiet": 0, "-v": 1, "-vv": 2, "--verbose": 1}

SOURCES = {ParameterSource.COMMANDLINE: "flag", ParameterSource.ENVIRONMENT: "env",
           ParameterSource.DEFAULT_MAP: "config", ParameterSource.DEFAULT: "default",
           ParameterSource.PROMPT: "flag"}


def _plain(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def describe(command: click.Command, name: str, parent: click.Context, args: Sequence[str],
             loaded: Loaded) -> tuple[list[documents.ConfigSetting], list[str]]:
    """Each setting of ``command`` run with ``args``, with its source; and each refused envvar."""
    ctx = command.make_context(name, list(args), parent=parent, resilient_parsing=True)
    rows, errors = [], []
    for long, option in sorted(settings(command).items()):
        key = str(option.name)
        source = SOURCES.get(ctx.get_parameter_source(key) or ParameterSource.DEFAULT,
                             "default")
        envvar = option.envvar if isinstance(option.envvar, str) else None
        origin = {"flag": "command line", "env": envvar or "environment",
                  "config": str(loaded.path), "default": "built-in default"}[source]
        if source == "env":
            try:  # resilient parsing swallowed it; the command itself would refuse the value
                option.process_value(ctx, option.value_from_envvar(ctx))
            except click.BadParameter as exc:
                errors.append(f"{envvar}={option.resolve_envvar_value(ctx)!r}: "
                              f"{exc.message.rstrip('.')}; allowed: {allowed(option)}")
        rows.append(documents.ConfigSetting(
            command=name, option=f"--{long}", value=_plain(ctx.params.get(key)),
            source=source, origin=origin, envvar=envvar))
    return rows, errors


def _take_config(words: Sequence[str]) -> tuple[list[str], Path | None]:
    """``words`` without ``--config F`` / ``--config=F``, and F (the last one given); exits 2
    when F is missing or is no file, as the group's own option would."""
    kept: list[str] = []
    found: Path | None = None
    rest = iter(words)
    for word in rest:
        if word == "--config":
            value = next(rest, None)
            if value is None:
                fail("--config needs a FILE")
            found = Path(value)
        elif word.startswith("--config="):
            found = Path(word.partition("=")[2])
        else:
            kept.append(word)
    if found is not None and not found.is_file():
        fail(f"--config {found}: no such file")
    return kept, found


@click.command("config", context_settings={"ignore_unknown_options": True,
                                           "allow_interspersed_args": False})
@click.argument("command_name", metavar="[COMMAND [ARGS]...]", required=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option("--benchmark", type=click.Path(path_type=Path, file_okay=False),
              help="Benchmark whose pyproject.toml [tool.lean-eval] is read when there is no "
                   "--config and no ./lean-eval.toml (default: the current git checkout).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the settings as a JSON document (schema_version first).")
@click.option("-v", "--verbose", count=True,
              help="Also each setting's environment variable.")
@click.option("-q", "--quiet", is_flag=True,
              help="Print only the settings that are not built-in defaults.")
@click.pass_context
def config_command(ctx: click.Context, command_name: str | None, args: tuple[str, ...],
                   benchmark: Path | None, as_json: bool, verbose: int, quiet: bool) -> NoReturn:
    """Print the effective value of every setting of every command and where it comes from:
    flag, env (LEAN_EVAL_<OPTION>), the config file, or the built-in default.

    With COMMAND [ARGS]..., only that command, as `lean-eval COMMAND ARGS...` would see it
    (so flags show as `flag`); config's own --json, -q and -v, and --config FILE (as in
    `lean-eval --config FILE config`), are taken wherever they stand.
    Exits 2 naming every bad environment value (and prints no table) when there is one.
    """
    # the group's --config, given after `config` (before or after COMMAND): `lean-eval
    # --config F config ...` means the same, and a command never takes --config itself
    words = [command_name, *args] if command_name is not None else list(args)
    words, given_config = _take_config(words)
    # config's own flags are its own wherever they stand (`config run-eval --json` too)
    own = [a for a in words if a in OWN_FLAGS]
    words = [a for a in words if a not in OWN_FLAGS]
    command_name, args = (words[0], tuple(words[1:])) if words else (None, ())
    as_json = as_json or "--json" in own
    quiet = quiet or "-q" in own or "--quiet" in own
    verbose += sum(OWN_FLAGS[a] for a in own if a.startswith("-v") or a == "--verbose")
    group_ctx, group = ctx.find_root(), group_of(ctx)
    explicit = given_config or group_ctx.params.get("config_file")
    names = sorted(group.commands) if command_name is None else [command_name]
    if command_name is not None and command_name not in group.commands:
        fail(f"no command {command_name!r}{did_you_mean(command_name, group.commands)}; "
             f"the commands are: {', '.join(sorted(group.commands))}")
    # the pyproject.toml of this COMMAND's --benchmark, as the command itself would read it
    loaded = resolve(group_ctx, explicit, command_name, group.commands.get(command_name or ""),
                     args, benchmark)
    group_ctx.default_map = loaded.default_map
    rows: list[documents.ConfigSetting] = []
    errors: list[str] = []
    for name in names:
        found, bad = describe(group.commands[name], name, group_ctx,
                              args if command_name else (), loaded)
        rows.extend(found)
        errors.extend(bad)
    if errors:  # every bad value at once, and no table that would hide them
        for error in errors:
            click.echo(f"lean-eval: error: {error}", err=True)
        sys.exit(EXIT_SETUP)
    if as_json:
        click.echo(documents.ConfigReport(
            config_file=str(loaded.path) if loaded.path else None,
            table=loaded.table.rstrip("."), settings=tuple(rows)).model_dump_json(indent=2))
    else:
        where = f"{loaded.path}" + (f" [{loaded.table.rstrip('.')}]" if loaded.table else "")
        click.echo(f"config file: {where if loaded.path else 'none'}")
        for row in rows:
            if quiet and row.source == "default":
                continue
            env = f", {row.envvar}" if verbose and row.envvar and row.source != "env" else ""
            shown = "unset" if row.value is None else show_value(row.value)
            origin = f" {row.origin}" if row.source in ("env", "config") else ""
            click.echo(f"{row.command} {row.option} = {shown}  ({row.source}{origin}{env})")
    sys.exit(0)


COMMANDS = (config_command,)
