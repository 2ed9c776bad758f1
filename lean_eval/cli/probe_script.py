"""``lean-eval probe-script NAME``: the hidden command the probe scripts (``scripts/*_probe.py``)
run, so their options, environment defaults and errors are the command line's (design §3)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

import click

from lean_eval.cli.deferred import registry
from lean_eval.cli.exits import EXIT_FAULT, EXIT_SETUP
from lean_eval.cli.options import PROBE_NAMES, tool_options, verbose_help
from lean_eval.cli.steps import resolve_tools
from lean_eval.errors import LeanEvalError


@verbose_help("Accepted for symmetry: every check of the probe is printed anyway.")
@click.command("probe-script", hidden=True)
@click.argument("name", metavar="NAME", type=click.Choice(PROBE_NAMES))
@click.option("--scratch", type=click.Path(path_type=Path, file_okay=False),
              help="Keep the probe's files under this directory.")
@click.option("--timeout", type=click.FloatRange(min=1), default=300.0, show_default=True,
              help="Deadline per pair in seconds.")
@tool_options
def probe_script_command(name: str, scratch: Path | None, timeout: float,
                         toolchain: Path | None, bwrap_path: str | None,
                         allow_bwrap: str | None, as_json: bool, verbose: int,
                         quiet: bool) -> NoReturn:
    """Run probe NAME as its script (scripts/NAME_probe.py) does: PASS/FAIL per check, then the
    probe's status; exits 0 pass, 1 fail, 2 could not run."""
    del verbose, quiet  # every check is printed: the script's output is its evidence
    env = dict(os.environ)
    try:
        writable = [Path(tempfile.gettempdir()), *([scratch] if scratch else [])]
        tools = resolve_tools(registry.pinned_toolchain_name(), toolchain, bwrap_path, allow_bwrap,
                              env, writable)
    except (LeanEvalError, OSError) as exc:
        _could_not_run(name, f"could not resolve the tools: {exc}")
    try:
        if scratch is not None:
            scratch.mkdir(parents=True, exist_ok=True)
        where = Path(tempfile.mkdtemp(prefix="probe-", dir=scratch)).resolve()
        where.chmod(0o755)
    except OSError as exc:
        _could_not_run(name, f"could not create a scratch directory: {exc}")
    try:
        (result,) = registry.run_probes(registry.ProbeContext(tools, env, where, timeout), [name])
    finally:
        if scratch is None:
            shutil.rmtree(where, ignore_errors=True)
    if as_json:
        click.echo(result.model_dump_json(indent=2))
    else:
        for check in result.checks:
            click.echo(f"{'PASS' if check.ok else 'FAIL'} {name}/{check.name}: "
                       f"{check.evidence}")
        click.echo(f"{result.status.upper()} {name}: {result.message}")
    sys.exit({"pass": 0, "fail": EXIT_FAULT}.get(result.status, EXIT_SETUP))


def _could_not_run(name: str, why: str) -> NoReturn:
    """The probe's ERROR line on stdout, beside PASS and FAIL: a result, not a usage error."""
    click.echo(f"ERROR {name}: {why}")
    sys.exit(EXIT_SETUP)


COMMANDS = (probe_script_command,)
