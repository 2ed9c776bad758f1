"""The preflight probes: their names, how each is run and judged (design §6, SECURITY.md).

A probe passes only on its payloads' evidence files and host-side state (files, sockets,
``/proc``), never on what a build printed; ``run_probes`` never raises for a probe.
"""

from __future__ import annotations

import importlib
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from lean_eval.errors import LeanEvalError
from lean_eval.records.probe_result import ProbeCheck, ProbeResult
from lean_eval.scoring.options import Tools

PROBE_NAMES = ("sandbox_engaged", "env_dump", "tool_path", "artifact_tamper", "comparator")


class ProbeContext(NamedTuple):
    """What a probe runs with."""

    tools: Tools  # resolved before any probe runs; probes never resolve their own
    caller_env: Mapping[str, str]  # the caller's environment as run-eval would pass it on
    scratch: Path  # a fresh directory the probe owns
    timeout: float = 300.0
    secrets: tuple[Path, ...] = ()  # files no sandbox may read (the run's --sign-key)


def _lazy(name: str) -> Callable[[ProbeContext], ProbeResult]:
    def run(ctx: ProbeContext) -> ProbeResult:
        module = importlib.import_module(f"lean_eval.probes.{name}")
        result: ProbeResult = module.run(ctx)
        return result

    run.__name__ = name
    return run


PROBES: dict[str, Callable[[ProbeContext], ProbeResult]] = {n: _lazy(n) for n in PROBE_NAMES}


def proves(name: str) -> str:
    """The one-line claim of probe ``name`` (its module's ``PROVES``)."""
    try:
        return str(importlib.import_module(f"lean_eval.probes.{name}").PROVES)
    except (ImportError, AttributeError):
        return ""


def judge(name: str, claim: str, checks: Sequence[ProbeCheck]) -> ProbeResult:
    """``pass`` iff there is at least one check and every check is ok."""
    failed = [c.name for c in checks if not c.ok]
    if not checks:
        return ProbeResult(name=name, status="error", seconds=0.0, proves=claim, checks=(),
                           message="the probe produced no checks")
    message = (f"{len(checks)} check(s) passed" if not failed
               else f"{len(failed)} of {len(checks)} check(s) failed: {', '.join(failed)}")
    return ProbeResult(name=name, status="fail" if failed else "pass", seconds=0.0,
                       proves=claim, checks=tuple(checks), message=message)


def run_probes(ctx: ProbeContext, names: Sequence[str] | None = None
               ) -> tuple[ProbeResult, ...]:
    """Run ``names`` (default: all), each in its own sub-scratch; an exception is an ``error``."""
    results = []
    for name in names or PROBE_NAMES:
        started = time.monotonic()
        claim = ""
        try:
            claim = proves(name) if name in PROBES else ""
            if name not in PROBES:
                raise LeanEvalError(f"unknown probe {name!r}; known: {', '.join(PROBE_NAMES)}")
            ctx.scratch.mkdir(parents=True, exist_ok=True)
            own = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=ctx.scratch))
            own.chmod(0o755)
            result = PROBES[name](ctx._replace(scratch=own))
        except Exception as exc:  # noqa: BLE001 - a probe that cannot run is an error result
            result = ProbeResult(name=name, status="error", seconds=0.0, proves=claim,
                                 checks=(), message=f"could not run: {type(exc).__name__}: {exc}")
        results.append(result.model_copy(
            update={"seconds": round(time.monotonic() - started, 3)}))
    return tuple(results)



# --- for the scripts' command line (lean_eval/cli/probe_script.py) ----------------------------


def pinned_toolchain_name() -> str:
    """The ``lean-toolchain`` of the checkout this package runs from (else the current dir)."""
    for base in (Path(__file__).resolve().parents[2], Path.cwd()):
        pin = base / "lean-toolchain"
        if pin.is_file():
            return pin.read_text(encoding="utf-8").strip()
    return ""
