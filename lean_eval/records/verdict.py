"""Verdict and run-summary models (design §4.4); ``summary.json`` lists unchanged pairs by id
(``unchanged_pair`` is the line each stands for); ``every_pair()``: every recorded pair."""

from __future__ import annotations

from typing import Any, Literal

from lean_eval.records import out_layout
from lean_eval.records.base import Record
from lean_eval.records.kinds import INFRASTRUCTURE_FAILURES, TALLY, Execution, Outcome
from lean_eval.records.probe_result import ProbeOutcome

# 2: every verdict holds the settings it was given under (``options``); 1 is read, never resumed
SCHEMA_VERSION = 2
# 2: unchanged pairs listed by id per submission, not in ``pairs``; 3: ``not_reused`` (2 is read)
SUMMARY_SCHEMA_VERSION = 3

# The outcomes and execution kinds, and the tally's names for them: records.kinds, defined once
__all__ = ["INFRASTRUCTURE_FAILURES", "TALLY", "Execution", "Outcome"]


class Reason(Record):
    """A machine code and the human message (the comparator's own ``error:`` line if any)."""

    code: str
    message: str


class Checker(Record):
    """One kernel as the comparator's stdout reported it."""

    name: str
    result: Literal["accepted", "rejected", "started"]


class Timings(Record):
    """Wall time of the pair and of each phase reached, in seconds."""

    wall_seconds: float
    phases: dict[str, float] = {}


class SubmissionRef(Record):
    """Which submission this is."""

    id: str
    digest: str
    source: str


class ProblemRef(Record):
    """Which problem, at which statement revision."""

    id: str
    statement_revision: int


class SandboxIdentity(Record):
    """Who the comparator and everything under it ran as (``sandbox.identity``)."""

    uid: int
    gid: int  # the only group: no supplementary groups when switched
    name: str
    group: str
    switched: bool  # False: the harness was not root, so its sandbox ran as its own user


class Identity(Record):
    """Everything that a verdict's meaning depends on besides the two inputs."""

    harness_version: str
    benchmark_path: str
    benchmark_commit: str | None
    toolchain_name: str
    toolchain_path: str
    bwrap_path: str
    bwrap_version: str
    bwrap_owner: str
    bwrap_setuid: bool
    bwrap_sha256: str
    bwrap_minimum_version: str  # below 0.12.0 only when --allow-bwrap-version said so
    # The upstream commit the benchmark was imported from (its provenance.json), or the
    # benchmark's own commit when it is no import; None: neither known. export-results writes
    # it as benchmark_commit. ``imported`` tells a commit-less import from an older verdict.
    upstream_commit: str | None = None
    imported: bool = False
    # None: a verdict of a lean-eval before the sandbox identity was recorded.
    sandbox_identity: SandboxIdentity | None = None
    # Source paths the import took from a work tree that differed from upstream_commit
    # (import-catalog --allow-dirty; benchmark.provenance); export-results carries them.
    upstream_uncommitted: tuple[str, ...] = ()


class Preflight(Record):
    """The probes run before any pair was scored, and what they covered."""

    skipped: bool
    probes: tuple[ProbeOutcome, ...] = ()
    toolchain_path: str
    bwrap_path: str
    bwrap_version: str
    bwrap_sha256: str
    # Why no probe ran although the run asked for them (``skipped`` False: the probe policy,
    # which resume keys and merge compare, is unchanged), e.g. ``nothing to score: ...`` when
    # every pair was kept from an earlier run or decided at intake; None otherwise.
    reason: str | None = None


class LogRef(Record):
    """Where the retained raw log is (relative to the output directory:
    ``<submission>/<problem>.log``) and its last lines."""

    path: str | None
    tail: tuple[str, ...] = ()


class ResourceLimits(Record):
    """The per-pair limits, how they were enforced, which was exceeded, and the room the pair
    started with (design §5.5 Limits, Disk)."""

    memory_bytes: int | None  # None: no memory limit
    max_processes: int | None  # tasks (processes and threads); None: no limit
    mechanism: Literal["cgroup_v2", "cgroup_v1", "watchdog", "none"]
    exceeded: Literal["memory", "processes", "disk_bytes", "disk_files"] | None = None
    disk_bytes: int | None = None  # blocks the pair's writable trees may hold; None: no limit
    disk_files: int | None = None  # entries they may hold; None: no limit
    disk_mechanism: Literal["filesystem", "watchdog", "none"] = "none"
    disk_reserve_bytes: int | None = None  # free space admission keeps; None: no reserve
    # Measured by the harness when the pair was admitted (None: not measured or unknown)
    memory_available_at_start: int | None = None  # MemAvailable
    started_below_memory: bool = False  # it started with less available than memory_bytes
    disk_free_at_start: int | None = None  # least free bytes of the scoring and output fs
    started_below_reserve: bool = False  # ... below disk_reserve_bytes
    short_of_space: bool = False  # a filesystem was short of space while the pair ran


class Mounts(Record):
    """What the wrapper hid and re-exposed in this pair's sandbox (fixed for the run)."""

    masks: tuple[str, ...] = ()  # directories under an empty tmpfs
    file_masks: tuple[str, ...] = ()  # files under /dev/null
    reexposed: tuple[str, ...] = ()  # needed paths inside a mask, bound back read-only
    ro_binds: tuple[str, ...] = ()  # shared packages, read-only after Lake's own masks
    notes: tuple[str, ...] = ()  # why a private root was narrowed or re-exposed


class Verdict(Record):
    """The judgement of one (submission, problem) pair."""

    schema_version: Literal[1, 2] = 2
    submission: SubmissionRef
    problem: ProblemRef
    verdict: Outcome
    execution: Execution
    reason: Reason
    last_phase: str | None = None
    checkers: tuple[Checker, ...] = ()
    exit_code: int | None = None
    signal: int | None = None
    timings: Timings
    identity: Identity
    trusted_files: dict[str, str] = {}
    submission_files: dict[str, str] = {}
    ignored: tuple[str, ...] = ()
    log: LogRef = LogRef(path=None)
    probes_skipped: bool = False  # --skip-probes: local reproduction only
    mounts: Mounts | None = None  # the run's mask set (None: written outside a run)
    cleanup: tuple[str, ...] = ()  # paths of the pair's scoring directory removal left behind
    # SHA-256 of everything this verdict depends on (inputs, identity, options): a re-run on the
    # same --out reuses the file when its key matches (design §5.5 "Resume")
    resume_key: str | None = None
    limits: ResourceLimits | None = None  # None: the pair never ran (refused, unchanged)
    # Every setting that can change this verdict, whatever its source (flag, variable, config
    # file): ``resume.verdict_options``, the options its ``resume_key`` covers, so the verdict
    # read alone says under what it was given (design §3). None: a version-1 verdict.
    options: dict[str, Any] | None = None


class PairSummary(Record):
    """One line of the run summary."""

    submission: str
    problem: str
    verdict: Outcome
    execution: Execution
    reason: str
    path: str


class Tally(Record):
    """One submission's pairs by outcome (leaderboards read ``solved``)."""

    solved: int = 0
    rejected: int = 0
    invalid: int = 0
    unchanged: int = 0
    error: int = 0




class SubmissionSummary(Record):
    """One input of the run."""

    id: str
    source: str
    digest: str
    problems: tuple[str, ...]
    rejection: str | None = None
    rejection_code: str | None = None
    hint: str | None = None  # why intake found no problem directory, when it found none
    tally: Tally = Tally()
    # Entries an intake limit hid (too deep, unreadable) where a problem directory may be.
    hidden: tuple[str, ...] = ()
    # Problems of this submission judged ``unchanged`` (every file its starter), in problem
    # order: each has a verdict file at ``<id>/<problem>.json`` but no entry in ``pairs``, so a
    # fork naming every problem costs the summary a few bytes per problem (design §4.4).
    unchanged: tuple[str, ...] = ()


class PairRef(Record):
    """One (submission, problem) pair by its ids."""

    submission: str
    problem: str


class ShardInfo(Record):
    """Which shard of a batch a run scored (``--shard K/N``, 1-based) and which batch it was."""

    k: int
    n: int
    batch_digest: str  # SHA-256 of the whole batch's sorted (submission id, problem id) list
    # SHA-256 of every option that can change a verdict (shard.options_digest); merge refuses
    # shards whose digests differ. None: not recorded by the run.
    options_digest: str | None = None
    # Every submission's problems in the whole batch (all shards), which ``batch_digest`` is the
    # digest of: a merge missing a shard lists that shard's pairs from it. Empty: not recorded.
    batch: dict[str, tuple[str, ...]] = {}


UNCHANGED_REASON = "unchanged"  # the reason code of every unchanged verdict


def unchanged_pair(submission: str, problem: str) -> PairSummary:
    """The summary line an unchanged pair listed in ``SubmissionSummary.unchanged`` stands for."""
    return PairSummary(submission=submission, problem=problem, verdict="unchanged",
                       execution="not_run", reason=UNCHANGED_REASON,
                       path=str(out_layout.place_of(submission, problem)))


def is_compact(pair: PairSummary) -> bool:
    """Whether ``pair`` is exactly ``unchanged_pair``'s, so listing it by id loses nothing."""
    return pair == unchanged_pair(pair.submission, pair.problem)


class Summary(Record):
    """The run as a whole; ``exit_code`` is what ``run-eval`` exits with."""

    schema_version: Literal[2, 3] = 3
    started_at: str
    finished_at: str
    identity: Identity
    preflight: Preflight
    problems: tuple[str, ...]
    submissions: tuple[SubmissionSummary, ...]
    counts: dict[str, int]
    pairs: tuple[PairSummary, ...]
    exit_code: int
    shard: ShardInfo | None = None  # None: the run scored the whole batch
    interrupted: bool = False  # SIGINT/SIGTERM stopped admission; a re-run resumes
    not_scored: int = 0  # pairs of this run left for a re-run (interrupted or stopped)
    # merge: the shards ("K/N") no given output scored, and the pairs no shard scored (counted
    # in not_scored). A run-eval summary lists its unscored pairs through submissions' problems.
    missing_shards: tuple[str, ...] = ()
    not_scored_pairs: tuple[PairRef, ...] = ()
    reused: int = 0  # verdicts whose resume key matched and were kept as they were
    jobs: int = 1
    # --sign-key: fingerprint (hex SHA-256 of the DER public key) of the key whose envelopes
    # (<problem>.intoto.json) sign every verdict; None: the run signed nothing
    signing_key: str | None = None
    # Why the run scored nothing although its arguments were usable (a preflight probe did not
    # pass); None: the run planned and scored. A refused run exits 2 (design §5.5).
    refused: str | None = None
    # Every option that can change a verdict (resume.verdict_options), so `replay` scores with
    # them again; None: not recorded (a summary written before they were).
    options: dict[str, Any] | None = None
    # Only the polling watchdog enforced the pairs' memory and process limits (no writable
    # cgroup offered memory and pids): best-effort, SECURITY.md says what it cannot see.
    limits_best_effort: bool = False
    # --sign-key: verdicts on --out whose resume key matched but which were scored again, each
    # "<submission>/<problem>: why" (their envelope did not verify under the key; design §5.5)
    not_reused: tuple[str, ...] = ()

    def every_pair(self) -> tuple[PairSummary, ...]:
        """Every recorded pair, unchanged ones included, in input order (submissions as listed,
        each one's ``problems`` in order); a scored pair its submission does not list comes last."""
        scored = {(p.submission, p.problem): p for p in self.pairs}
        found: list[PairSummary] = []
        for sub in self.submissions:
            unchanged = set(sub.unchanged)
            for pid in dict.fromkeys((*sub.problems, *sub.unchanged)):
                pair = scored.pop((sub.id, pid), None)
                if pair is not None:
                    found.append(pair)
                elif pid in unchanged:
                    found.append(unchanged_pair(sub.id, pid))
        found.extend(scored.values())
        return tuple(found)


def compact_pairs(pairs: tuple[PairSummary, ...]
                  ) -> tuple[tuple[PairSummary, ...], dict[str, tuple[str, ...]]]:
    """Split recorded pairs into those ``pairs`` lists and each submission's unchanged ids."""
    kept: list[PairSummary] = []
    unchanged: dict[str, list[str]] = {}
    for pair in pairs:
        if is_compact(pair):
            unchanged.setdefault(pair.submission, []).append(pair.problem)
        else:
            kept.append(pair)
    return tuple(kept), {sid: tuple(ids) for sid, ids in unchanged.items()}
