"""The command line of the probe scripts (``scripts/*_probe.py``): one probe, one line per check.

Its options and environment defaults (``LEAN_EVAL_TOOLCHAIN``, ``LEAN_EVAL_BWRAP``,
``LEAN_EVAL_ALLOW_BWRAP_VERSION``) are the CLI's own click options, so the scripts resolve tools
exactly as ``lean-eval probe`` does and nothing outside ``lean_eval/cli`` reads them (design §3).
Exit 0 pass, 1 fail, 2 could not run.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import click

from lean_eval.cli import CONTEXT_SETTINGS, _resolve_tools, probe, tool_options
from lean_eval.errors import LeanEvalError


def command(name: str) -> click.Command:
    """The click command of the script that runs probe ``name``."""

    @click.command(f"{name}_probe", context_settings=CONTEXT_SETTINGS,
                   help=f"lean-eval probe {name}: {probe.proves(name)}")
    @click.option("--scratch", type=click.Path(path_type=Path, file_okay=False),
                  help="Keep the probe's files under this directory.")
    @click.option("--timeout", type=click.FloatRange(min=1), default=300.0, show_default=True,
                  help="Deadline per pair in seconds.")
    @tool_options
    def run(scratch: Path | None, timeout: float, toolchain: Path | None,
            bwrap_path: str | None, allow_bwrap: str | None, as_json: bool, verbose: int,
            quiet: bool) -> None:
        del verbose, quiet  # every check is printed: the script's output is its evidence
        env = dict(os.environ)
        try:
            writable = [Path(tempfile.gettempdir()), *([scratch] if scratch else [])]
            tools = _resolve_tools(probe.pinned_toolchain_name(), toolchain, bwrap_path,
                                   allow_bwrap, env, writable)
        except (LeanEvalError, OSError) as exc:
            click.echo(f"ERROR {name}: could not resolve the tools: {exc}")
            sys.exit(2)
        try:
            if scratch is not None:
                scratch.mkdir(parents=True, exist_ok=True)
            where = Path(tempfile.mkdtemp(prefix="probe-", dir=scratch)).resolve()
            where.chmod(0o755)
        except OSError as exc:
            click.echo(f"ERROR {name}: could not create a scratch directory: {exc}")
            sys.exit(2)
        try:
            (result,) = probe.run_probes(probe.ProbeContext(tools, env, where, timeout), [name])
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
        sys.exit({"pass": 0, "fail": 1}.get(result.status, 2))

    return run


def main(name: str) -> None:
    """Run the script of probe ``name`` on ``sys.argv`` and exit with its status."""
    command(name)(prog_name=Path(sys.argv[0]).name)
