"""The resume key of each pair (design §5.5 "Resume"), and the problems a summary names.

A pair's key is the SHA-256 of a canonical JSON of everything its verdict can depend on, so
two runs give one pair the same key only when a new verdict could not differ.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

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
    return key_of(plan.digest, problem.problem.id, problem.problem.statement_revision,
                  problem.digests, ident, verdict_options(options, preflight))


def key_of(submission_digest: str, problem_id: str, statement_revision: int,
           trusted_files: Mapping[str, str], ident: Identity,
           options: Mapping[str, object]) -> str:
    """The key of a pair from what its verdict records (``replay`` recomputes a recorded
    verdict's key from its own fields, so a record's options that are not the ones its
    verdicts were given under are named)."""
    identity = ident.model_dump(mode="json", exclude={"benchmark_path"})
    if identity.get("sandbox_identity") is None:  # recorded before it was: the key it had then
        del identity["sandbox_identity"]
    if not identity.get("upstream_uncommitted"):  # a clean import: the key runs before it had
        identity.pop("upstream_uncommitted", None)
    material = {
        "submission_digest": submission_digest,
        "problem": problem_id,
        "statement_revision": statement_revision,
        "trusted_files": dict(sorted(trusted_files.items())),
        # Not where the benchmark is: its commit and the trusted digests identify it, so the
        # same revision checked out elsewhere resumes.
        "identity": identity,
        "options": dict(options),
    }
    text = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def problem_ids_of(plan: reader.Intake) -> tuple[str, ...]:
    """Problems this submission gets a verdict for: those found even when rejected whole."""
    return pair.named_problems(plan)


def hint_of(plan: reader.Intake) -> str | None:
    """Why no problem directory was found, when none was."""
    return None if problem_ids_of(plan) else plan.hint or None
