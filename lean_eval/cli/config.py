"""Settings from the environment and a config file (design §3; shown by ``config_command``).

Invariants: click's own precedence (flag, ``LEAN_EVAL_<OPTION>``, config file, default) for
every option of every command; every config value is checked up front with its option's click
type, so a bad file fails before anything runs, naming the file, the key and what is allowed.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import click

from lean_eval.cli.deferred import checkout
from lean_eval.cli.options import ByteSize
from lean_eval.errors import ConfigError, LeanEvalError
from lean_eval.files.decoding import toml_table

ENV_PREFIX = "LEAN_EVAL_"
CONFIG_NAME = "lean-eval.toml"
PYPROJECT = "pyproject.toml"
TOOL_TABLE = ("tool", "lean-eval")
# Where the group's resolve_command leaves the subcommand and its arguments for apply().
SUBCOMMAND_KEY = "lean_eval.subcommand"
LOADED_KEY = "lean_eval.config"


class Loaded(NamedTuple):
    """The config file in effect (None: none) and its settings, by command and parameter."""

    path: Path | None
    table: str  # "" for lean-eval.toml, "tool.lean-eval." for a pyproject.toml
    default_map: dict[str, dict[str, Any]]


NO_CONFIG = Loaded(None, "", {})


# --- environment variables -------------------------------------------------------------------


def long_name(option: click.Option) -> str | None:
    """The option's first long name without its dashes (``--max-file-bytes``: max-file-bytes)."""
    return next((o[2:] for o in option.opts if o.startswith("--")), None)


def envvar_name(long: str) -> str:
    return ENV_PREFIX + long.upper().replace("-", "_")


def settings(command: click.Command) -> dict[str, click.Option]:
    """``command``'s settings by long name (valueless ones such as ``--version`` are not)."""
    found = {}
    for param in command.params:
        if isinstance(param, click.Option) and param.expose_value and param.name:
            long = long_name(param)
            if long is not None:
                found[long] = param
    return found


def add_envvars(group: click.Group) -> None:
    """Give every option of ``group`` and its commands, recursively, ``LEAN_EVAL_<OPTION>``
    unless it names an envvar itself; run again for commands added later."""
    commands: list[click.Command] = [group]
    while commands:
        command = commands.pop()
        for long, option in settings(command).items():
            if option.envvar is None:
                option.envvar = envvar_name(long)
                option.show_envvar = True
        if isinstance(command, click.Group):
            commands.extend(command.commands.values())


# --- the config file -------------------------------------------------------------------------


def find_config(explicit: Path | None, cwd: Path,
                benchmark: Callable[[], Path | None]) -> tuple[Path, str] | None:
    """The config file and its table prefix, in design §3's order."""
    if explicit is not None:
        return explicit, "tool.lean-eval." if explicit.name == PYPROJECT else ""
    if (cwd / CONFIG_NAME).is_file():
        return cwd / CONFIG_NAME, ""
    root = benchmark()
    if root is not None and (root / PYPROJECT).is_file():
        tool = _read(root / PYPROJECT).get("tool", {})
        if isinstance(tool, dict) and TOOL_TABLE[1] in tool:
            return root / PYPROJECT, "tool.lean-eval."
    return None


def _read(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    return toml_table(data, f"config file {path} is not valid TOML", ConfigError)


def load(group: click.Group, ctx: click.Context, path: Path, table: str) -> Loaded:
    """Read ``path`` and check every table and value against ``group``'s commands."""
    data: Any = _read(path)
    if table:
        for part in TOOL_TABLE:
            data = data.get(part, {}) if isinstance(data, dict) else data
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: [{table.rstrip('.')}] must be a table of command tables")
    default_map = {}
    problems: list[str] = []  # every bad table, key and value of the file, in one error
    for name, values in data.items():
        command = group.commands.get(name)
        if command is None and not isinstance(values, dict):
            having = [f"[{table}{c}]" for c, cmd in sorted(group.commands.items())
                      if normalise(name) in settings(cmd)]
            problems.append(f"{path}: {table}{name} = {show_value(values)} is outside any "
                            "table; a setting goes in the table of its command"
                            + (f": {', '.join(having)}" if having else ""))
        elif command is None:
            problems.append(
                f"{path}: unknown table [{table}{name}]{did_you_mean(name, group.commands)}; "
                f"each table is named after a command: {', '.join(sorted(group.commands))}")
        elif not isinstance(values, dict):
            problems.append(f"{path}: {table}{name} = {show_value(values)} is not a table: "
                            f"write the settings of {name} under [{table}{name}]")
        else:
            try:
                default_map[name] = check_table(command, ctx, path, f"{table}{name}", values)
            except ConfigError as exc:
                problems.append(str(exc))
    if problems:
        raise ConfigError(". Also, ".join(problems))
    return Loaded(path, table, default_map)


def normalise(key: str) -> str:
    """A config key as a long option name: ``max_file_bytes`` and ``max-file-bytes`` alike."""
    return key.replace("_", "-")


def check_table(command: click.Command, parent: click.Context, path: Path, table: str,
                values: Mapping[str, Any]) -> dict[str, Any]:
    """``command``'s ``default_map`` from one config table, each value checked."""
    known = settings(command)
    ctx = click.Context(command, info_name=table.rsplit(".", 1)[-1], parent=parent)
    checked: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    problems: list[str] = []
    for key, written in values.items():
        option = known.get(normalise(key))
        if option is None or not option.name:
            problems.append(
                f"{path}: [{table}] has no setting {key!r}{did_you_mean(normalise(key), known)}"
                f"; the settings are: {', '.join(sorted(known))} (`-` or `_` alike)")
            continue
        if option.name in spelled:
            problems.append(f"{path}: [{table}] sets {spelled[option.name]!r} twice "
                            f"(also as {key!r})")
            continue
        spelled[option.name] = key
        value = _relative_to(option, written, path.parent)
        problem = _problem(option, ctx, value)
        if problem is not None:
            problems.append(f"{path}: [{table}] {key} = {show_value(written)}: {problem}; "
                            f"allowed: {allowed(option)}")
            continue
        many = option.multiple or option.nargs != 1
        checked[option.name] = [value] if many and not isinstance(value, list) else value
    if problems:
        raise ConfigError(". Also, ".join(problems))
    return checked


_SCALARS = (str, int, float, bool)


def _problem(option: click.Option, ctx: click.Context, value: Any) -> str | None:
    """Why ``value`` cannot be ``option``'s, or None when click's type accepts it."""
    many = option.multiple or option.nargs != 1
    items = value if isinstance(value, list) else [value]
    if isinstance(value, list) and not many:
        return "expected a single value, not a list"
    if not all(isinstance(v, _SCALARS) for v in items):
        return "expected a string, a number or a boolean"
    try:
        option.type_cast_value(ctx, items if many else value)
    except click.BadParameter as exc:  # the message without click's "Invalid value for ..."
        return exc.message.rstrip(".")
    return None


def _relative_to(option: click.Option, value: Any, base: Path) -> Any:
    """Relative paths in a config file mean the file's directory, wherever lean-eval runs."""
    if not isinstance(option.type, click.Path):
        return value
    if isinstance(value, str) and value and not Path(value).is_absolute():
        return str(base / value)
    if isinstance(value, list):
        return [_relative_to(option, v, base) for v in value]
    return value


def allowed(option: click.Option) -> str:
    """What ``option`` takes, in words, for error messages."""
    kind = option.type
    if option.count:
        text = "a count (an integer >= 0)"
    elif option.is_flag:
        text = "true or false"
    elif isinstance(kind, click.Choice):
        text = "one of " + ", ".join(str(c) for c in kind.choices)
    elif isinstance(kind, ByteSize):
        text = f"a byte size of at least {kind.minimum} (e.g. 1048576, 512K, 16M, 8GiB)"
    elif isinstance(kind, (click.IntRange, click.FloatRange)):
        bounds = [f"{'>' if kind.min_open else '>='} {kind.min}" if kind.min is not None else "",
                  f"{'<' if kind.max_open else '<='} {kind.max}" if kind.max is not None else ""]
        noun = "an integer" if isinstance(kind, click.IntRange) else "a number"
        text = " ".join([noun, " and ".join(b for b in bounds if b)]).strip()
    elif isinstance(kind, click.Path):
        text = "a path (relative: to the config file's directory)"
    elif kind is click.INT:
        text = "an integer"
    elif kind is click.FLOAT:
        text = "a number"
    else:
        text = "a string"
    return f"a list, each {text}" if option.multiple else text


def did_you_mean(word: str, choices: Sequence[str] | Mapping[str, Any]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def show_value(value: Any) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


# --- the group callback ----------------------------------------------------------------------


def resolve(ctx: click.Context, explicit: Path | None, name: str | None,
            command: click.Command | None, args: Sequence[str],
            fallback: Path | None = None) -> Loaded:
    """The config for ``command`` run with ``args`` (its ``--benchmark``'s pyproject.toml, else
    ``fallback``'s, else the current git checkout's)."""
    def benchmark() -> Path | None:
        given = _benchmark_argument(ctx, name, command, args) or fallback
        if given is not None:
            return given
        try:
            return checkout.default_benchmark()
        except (OSError, LeanEvalError):  # no git: no benchmark, so no pyproject.toml
            return None

    found = find_config(explicit, Path.cwd(), benchmark)
    if found is None:
        return NO_CONFIG
    return load(group_of(ctx), ctx, *found)


def group_of(ctx: click.Context) -> click.Group:
    """The ``lean-eval`` group ``ctx`` runs under: its commands are the config file's tables."""
    group = ctx.find_root().command
    if not isinstance(group, click.Group):
        raise TypeError(f"{group.name} is not a command group")
    return group


def _benchmark_argument(ctx: click.Context, name: str | None, command: click.Command | None,
                        args: Sequence[str]) -> Path | None:
    """The ``--benchmark`` of ``args`` (or ``LEAN_EVAL_BENCHMARK``), read without failing."""
    if command is None or name is None or "benchmark" not in settings(command):
        return None
    parsed = command.make_context(name, list(args), parent=ctx, resilient_parsing=True)
    value = parsed.params.get("benchmark")
    return value if isinstance(value, Path) else None


def apply(ctx: click.Context, explicit: Path | None) -> None:
    """The group callback's part: the config into ``ctx.default_map``, which commands inherit."""
    name, command, args = ctx.meta.get(SUBCOMMAND_KEY, (None, None, ()))
    loaded = resolve(ctx, explicit, name, command, args)
    ctx.meta[LOADED_KEY] = loaded
    ctx.default_map = loaded.default_map
