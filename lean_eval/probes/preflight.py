"""The preflight: every probe, run before a run's first pair, and the record verdicts carry.
A probe that does not pass refuses the run (``ProbesFailedError``, a setup failure: exit 2)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from lean_eval.errors import ProbesFailedError
from lean_eval.probes import registry
from lean_eval.records.probe_result import ProbeResult
from lean_eval.records.verdict import Preflight
from lean_eval.scoring.options import Tools, not_probed

SKIPPED_PROBES = "--skip-probes: the sandbox was not verified; verdicts of this run record it"
NOTHING_TO_SCORE = ("nothing to score: every pair was kept from an earlier run or decided at "
                    "intake without a sandbox")


def run_probes(tools: Tools, env: Mapping[str, str], work_dir: Path | None,
               names: Sequence[str] = (), secrets: Sequence[Path] = ()
               ) -> tuple[ProbeResult, ...]:
    """Each probe (``names``, default all) in a scratch directory removed afterwards;
    ``secrets``: the run's files no sandbox may read (``--sign-key``)."""
    if work_dir is not None:
        work_dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="lean-eval-probes-", dir=work_dir))
    scratch.chmod(0o711)  # the sandbox identity passes it to its pair, lists nothing
    ctx = registry.ProbeContext(tools=tools, caller_env=dict(env), scratch=scratch,
                                secrets=tuple(secrets))
    try:
        return registry.run_probes(ctx, names or registry.PROBE_NAMES)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def not_needed(tools: Tools) -> Preflight:
    """The record of a run with no pair that needs a sandbox."""
    return not_probed(tools).model_copy(update={"skipped": False, "reason": NOTHING_TO_SCORE})


def preflight(tools: Tools, env: Mapping[str, str], work_dir: Path | None,
              on_probes: Callable[[tuple[ProbeResult, ...]], None] | None = None,
              secrets: Sequence[Path] = ()) -> Preflight:
    """Run every probe; ``on_probes`` gets their entries before a failure is raised."""
    entries = run_probes(tools, env, work_dir, secrets=secrets)
    record = not_probed(tools).model_copy(update={
        "skipped": False, "probes": tuple(e.outcome() for e in entries)})
    if on_probes is not None:
        on_probes(entries)
    failed = [e for e in entries if e.status != "pass"]
    if failed:
        raise ProbesFailedError("preflight probe(s) did not pass: "
                                + ", ".join(f"{e.name} ({e.status}: {e.message})"
                                            for e in failed)
                                + "; nothing was scored", record)
    return record
