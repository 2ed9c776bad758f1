"""What a run is (options, tools, identity) and the resume key of each of its pairs.

Invariants (design §5.5 "Resume"):
- A pair's key is the SHA-256 of a canonical JSON of everything its verdict can depend on: the
  submission digest, the problem id and statement revision, the trusted files' digests, the
  run identity (harness version, benchmark commit, toolchain, bubblewrap and its SHA-256) and
  every option that can change a verdict. Two runs give one pair the same key only when a new
  verdict could not differ, so a matching verdict on disk may be reused as it is.
- A plan keeps no submission bytes: only names, digests and reasons.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from lean_eval import __version__, disk, driver, intake, pair, resources
from lean_eval.bubblewrap import BwrapInfo
from lean_eval.catalog import Catalog, ProblemWorkspace
from lean_eval.runner import SANDBOXED, ComparatorRunner
from lean_eval.shard import Shard
from lean_eval.toolchain import Toolchain
from lean_eval.verdict import (
    Identity,
    Preflight,
    ProblemRef,
    Reason,
    ResourceLimits,
    SubmissionRef,
    Timings,
    Verdict,
)

if TYPE_CHECKING:  # cryptography is imported only by runs that sign
    from lean_eval.attest import SigningKey

DEFAULT_MEMORY_LIMIT = resources.DEFAULT_MEMORY_LIMIT
DEFAULT_MAX_PROCESSES = resources.DEFAULT_MAX_PROCESSES


class RunOptions(NamedTuple):
    """Options of one ``run-eval``."""

    out_dir: Path
    timeout: float
    work_dir: Path | None = None
    limits: intake.IntakeLimits = intake.IntakeLimits()
    keep_work: bool = False
    preflight: Preflight | None = None  # None: probes were not asked for (library callers)
    max_written_file_bytes: int = driver.DEFAULT_MAX_FILE_BYTES
    jobs: int | None = None  # None: CPUs, lowered to what memory allows
    rescore: bool = False
    shard: Shard | None = None
    memory_limit: int = DEFAULT_MEMORY_LIMIT
    max_processes: int = DEFAULT_MAX_PROCESSES
    # Probes need to know where a kept workspace is before the run: score directly under this
    # directory instead of a fresh per-run one (it is then neither locked nor reclaimed).
    scoring_root: Path | None = None
    private: tuple[Path, ...] = ()  # --private DIR: also hidden from every sandbox
    private_defaults: bool = True  # also hide the parents of the inputs and of --out
    sign_key: SigningKey | None = None  # --sign-key: an envelope beside every verdict recorded
    paranoid: bool = False  # `lake comparator --paranoid`: `replay --paranoid` only
    disk_limit: int | None = disk.DEFAULT_DISK_BYTES  # blocks of one pair's trees; None: off
    disk_files: int | None = disk.DEFAULT_DISK_FILES  # entries of one pair's trees; None: off
    # Free space kept on the scoring and output filesystems; None: off. Not in the resume key:
    # it decides when a pair starts and whether a failure is the host's, never a judgement.
    disk_reserve: int | None = disk.DEFAULT_DISK_RESERVE


class Tools(NamedTuple):
    """The resolved executables a run uses, and what starts Lake with them."""

    toolchain: Toolchain
    bwrap: BwrapInfo
    runner: ComparatorRunner = SANDBOXED  # tests alone pass another (tests/fake_runner.py)


class Planned(NamedTuple):
    """One pair as planned before scoring: no submission bytes."""

    order: int  # position in input order
    sid: str
    pid: str
    source: Path
    digest: str
    key: str
    plan: intake.Intake  # without data


def identity(catalog: Catalog, tools: Tools) -> Identity:
    """What every verdict of this run depends on besides its two inputs."""
    return Identity(harness_version=__version__, benchmark_path=str(catalog.root),
                    benchmark_commit=catalog.commit, toolchain_name=catalog.toolchain_name,
                    toolchain_path=str(tools.toolchain.root),
                    bwrap_path=str(tools.bwrap.path), bwrap_version=tools.bwrap.version,
                    bwrap_owner=tools.bwrap.owner, bwrap_setuid=tools.bwrap.setuid,
                    bwrap_sha256=tools.bwrap.sha256,
                    bwrap_minimum_version=tools.bwrap.minimum)


def not_probed(tools: Tools) -> Preflight:
    """The preflight record of a run whose probes were skipped."""
    return Preflight(skipped=True, toolchain_path=str(tools.toolchain.root),
                     bwrap_path=str(tools.bwrap.path), bwrap_version=tools.bwrap.version,
                     bwrap_sha256=tools.bwrap.sha256)


def verdict_options(options: RunOptions, preflight: Preflight) -> dict[str, object]:
    """Every option of the run that can change a verdict."""
    return {
        "timeout": options.timeout,
        "limits": options.limits.model_dump(mode="json"),
        "max_written_file_bytes": options.max_written_file_bytes,
        "memory_limit": options.memory_limit,
        "max_processes": options.max_processes,
        "skip_probes": preflight.skipped,
        # Only when set: keys (and so resumes) of ordinary runs stay as they were.
        **({"paranoid": True} if options.paranoid else {}),
        "disk_limit": options.disk_limit,
        "disk_files": options.disk_files,
    }


def pair_key(plan: intake.Intake, problem: ProblemWorkspace, ident: Identity,
             options: RunOptions, preflight: Preflight) -> str:
    """The resume key of one pair (see the module invariants)."""
    material = {
        "submission_digest": plan.digest,
        "problem": problem.problem.id,
        "statement_revision": problem.problem.statement_revision,
        "trusted_files": dict(sorted(problem.digests.items())),
        "identity": ident.model_dump(mode="json"),
        "options": verdict_options(options, preflight),
    }
    text = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def without_data(sub: intake.Intake) -> intake.Intake:
    """The plan of a submission: everything but the bytes of its files."""
    strip = getattr(sub, "without_data", None)
    if callable(strip):
        result = strip()
        if isinstance(result, intake.Intake):
            return result
    return sub.model_copy(update={"problems": tuple(
        e.model_copy(update={"files": tuple(f._replace(data=b"") for f in e.files)})
        for e in sub.problems)})


def problem_ids_of(plan: intake.Intake) -> tuple[str, ...]:
    """Problems this submission gets a verdict for: those found even when rejected whole."""
    return pair.named_problems(plan)


def hint_of(plan: intake.Intake) -> str | None:
    """Why no problem directory was found, when none was."""
    if problem_ids_of(plan):
        return None
    hint = getattr(plan, "hint", None)
    return str(hint) if hint else None


def error_verdict(sub: intake.Intake, problem: ProblemWorkspace, ident: Identity,
                  message: str, key: str, limits: ResourceLimits | None = None) -> Verdict:
    """A pair the harness could not score: ``error`` (re-run by the next run on this --out)."""
    return Verdict(
        submission=SubmissionRef(id=sub.submission_id, digest=sub.digest, source=sub.source),
        problem=ProblemRef(id=problem.problem.id,
                           statement_revision=problem.problem.statement_revision),
        verdict="error", execution="not_run", reason=Reason(code="harness_error", message=message),
        timings=Timings(wall_seconds=0.0), identity=ident, trusted_files=problem.digests,
        resume_key=key, limits=limits)
