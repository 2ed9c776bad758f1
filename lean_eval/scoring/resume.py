"""The resume key of each pair (design §5.5 "Resume"), and the problems a summary names.

A pair's key is the SHA-256 of a canonical JSON of everything its verdict can depend on, so
two runs give one pair the same key only when a new verdict could not differ.
"""

from __future__ import annotations

import hashlib
import json

from lean_eval.benchmark.catalog import ProblemWorkspace
from lean_eval.intake import reader
from lean_eval.records.verdict import Identity, Preflight
from lean_eval.scoring import pair
from lean_eval.scoring.options import RunOptions


def verdict_options(options: RunOptions, preflight: Preflight) -> dict[str, object]:
    """Every option of the run that can change a verdict."""
    return {
        "timeout": options.timeout,
        "limits": options.limits.model_dump(mode="json"),
        "max_written_file_bytes": options.max_written_file_bytes,
        "memory_limit": options.pair_limits.memory_limit,
        "max_processes": options.pair_limits.max_processes,
        "skip_probes": preflight.skipped,
        # Only when set: keys (and so resumes) of ordinary runs stay as they were.
        **({"paranoid": True} if options.paranoid else {}),
        "disk_limit": options.pair_limits.disk_limit,
        "disk_files": options.pair_limits.disk_files,
    }


def pair_key(plan: reader.Intake, problem: ProblemWorkspace, ident: Identity,
             options: RunOptions, preflight: Preflight) -> str:
    """The resume key of one pair (module doc)."""
    material = {
        "submission_digest": plan.digest,
        "problem": problem.problem.id,
        "statement_revision": problem.problem.statement_revision,
        "trusted_files": dict(sorted(problem.digests.items())),
        # Not where the benchmark is: its commit and the trusted digests identify it, so the
        # same revision checked out elsewhere resumes.
        "identity": ident.model_dump(mode="json", exclude={"benchmark_path"}),
        "options": verdict_options(options, preflight),
    }
    text = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def problem_ids_of(plan: reader.Intake) -> tuple[str, ...]:
    """Problems this submission gets a verdict for: those found even when rejected whole."""
    return pair.named_problems(plan)


def hint_of(plan: reader.Intake) -> str | None:
    """Why no problem directory was found, when none was."""
    return None if problem_ids_of(plan) else plan.hint or None
