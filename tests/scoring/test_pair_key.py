"""The per-pair keys: ``resume.pair_key`` (reuse a verdict) and ``shard.shard_of`` (split a batch).

Both are pure functions of documented inputs (resume.py's and shard.py's module invariants,
design §5.5 "Resume" and "Shards"), so they are checked here against the formulas themselves,
for determinism, for what they ignore, and for how pairs spread over shards; no sandbox.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from lean_eval.benchmark import catalog
from lean_eval.benchmark.catalog import ProblemWorkspace
from lean_eval.intake import reader
from lean_eval.records.verdict import Identity, Preflight, SandboxIdentity
from lean_eval.scoring import resume, shard
from lean_eval.scoring.options import RunOptions
from lean_eval.supervise.resources import PairLimits

REPO = Path(__file__).resolve().parents[2]

IDENT = Identity(harness_version="9.9.9", benchmark_path="/bench", benchmark_commit="c" * 40,
                 toolchain_name="leanprover/lean4:v4.35.0", toolchain_path="/toolchain",
                 bwrap_path="/usr/bin/bwrap", bwrap_version="0.9.0", bwrap_owner="root",
                 bwrap_setuid=False, bwrap_sha256="b" * 64, bwrap_minimum_version="0.8.0")
PROBED = Preflight(skipped=False, toolchain_path="/toolchain", bwrap_path="/usr/bin/bwrap",
                   bwrap_version="0.9.0", bwrap_sha256="b" * 64)
OPTIONS = RunOptions(out_dir=Path("/out"), timeout=600.0)


def limited(options: RunOptions, **limits: int | None) -> RunOptions:
    return options._replace(pair_limits=options.pair_limits._replace(**limits))


@pytest.fixture(scope="module")
def problem() -> ProblemWorkspace:
    """A real problem of the repository's benchmark with its id, revision and digests pinned."""
    real = catalog.load_catalog(REPO, revision=None).problems["two_plus_two"]
    return real.model_copy(update={
        "problem": real.problem.model_copy(update={"id": "two_plus_two",
                                                   "statement_revision": 3}),
        "digests": {"lakefile.toml": "1" * 64, "Challenge.lean": "2" * 64}})


def _plan(digest: str = "d" * 64, sid: str = "alice") -> reader.Intake:
    return reader.Intake(submission_id=sid, source=f"/in/{sid}", digest=digest, problems=(),
                         rejection=None, ignored=())


def _documented(plan: reader.Intake, problem: ProblemWorkspace, ident: Identity,
                options: RunOptions, preflight: Preflight) -> str:
    """resume.py's invariant, spelled out: SHA-256 of a canonical JSON of the material."""
    material = {
        "submission_digest": plan.digest,
        "problem": problem.problem.id,
        "statement_revision": problem.problem.statement_revision,
        "trusted_files": problem.digests,
        # the sandbox identity only once recorded: an older verdict keeps the key it had; a
        # clean import's empty upstream_uncommitted is left out likewise
        "identity": ident.model_dump(mode="json", exclude={"benchmark_path"} | (
            set() if ident.sandbox_identity else {"sandbox_identity"}) | (
            set() if ident.upstream_uncommitted else {"upstream_uncommitted"})),
        "options": {"timeout": options.timeout,
                    "limits": options.limits.model_dump(mode="json"),
                    "max_written_file_bytes": options.max_written_file_bytes,
                    "memory_limit": options.pair_limits.memory_limit,
                    "max_processes": options.pair_limits.max_processes,
                    "skip_probes": preflight.skipped,
                    **({"paranoid": True} if options.paranoid else {}),
                    "disk_limit": options.pair_limits.disk_limit,
                    "disk_files": options.pair_limits.disk_files},
    }
    text = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def test_the_resume_key_is_the_documented_digest(problem: ProblemWorkspace) -> None:
    odd = limited(OPTIONS._replace(paranoid=True, timeout=1.5), disk_limit=None)
    dirty = IDENT.model_copy(update={"upstream_uncommitted": ("generated/x/Challenge.lean",)})
    for options in (OPTIONS, odd):
        for ident in (IDENT, dirty):
            key = resume.pair_key(_plan(), problem, ident, options, PROBED)
            assert key == _documented(_plan(), problem, ident, options, PROBED)
            assert len(key) == 64 and int(key, 16) >= 0
    # an import with uncommitted paths is another benchmark: its pairs do not resume a clean one
    assert resume.pair_key(_plan(), problem, dirty, OPTIONS, PROBED) != resume.pair_key(
        _plan(), problem, IDENT, OPTIONS, PROBED)


PINNED = RunOptions(out_dir=Path("/out"), timeout=600.0, limits=reader.IntakeLimits(
    max_file_bytes=1 << 20, max_total_bytes=16 << 20, max_files=10_000, max_depth=32,
    max_archive_bytes=64 << 20, max_header_bytes=65536, max_pax_keys=128, intake_seconds=60.0,
    max_path_bytes=1024), max_written_file_bytes=1 << 20, pair_limits=PairLimits(
    memory_limit=1 << 30, max_processes=64, disk_limit=1 << 30, disk_files=1000))


def test_the_sandbox_identity_is_in_the_key(problem: ProblemWorkspace) -> None:
    """A verdict given as uid 0 is not one given as the sandbox identity, nor as another."""
    nobody = SandboxIdentity(uid=65534, gid=65534, name="nobody", group="nogroup",
                             switched=True)
    keys = {resume.pair_key(_plan(), problem, ident, OPTIONS, PROBED) for ident in (
        IDENT, IDENT.model_copy(update={"sandbox_identity": nobody}),
        IDENT.model_copy(update={"sandbox_identity": nobody.model_copy(update={"uid": 999})}))}
    assert len(keys) == 3
    switched = IDENT.model_copy(update={"sandbox_identity": nobody})
    assert resume.pair_key(_plan(), problem, switched, OPTIONS, PROBED) == \
        _documented(_plan(), problem, switched, OPTIONS, PROBED)


def test_the_resume_key_is_stable_across_releases(problem: ProblemWorkspace) -> None:
    # Pinned: a release that changes the key makes every --out rescore all its pairs (issue 27
    # changed it once: the benchmark path left the key, the upstream commit joined it).
    assert resume.pair_key(_plan(), problem, IDENT, PINNED, PROBED) == \
        "e4b96c8af7ceeefddd11a143f986cfb33fefec6370e787c9fbe6967bec332bbd"


def test_the_resume_key_is_deterministic_and_ignores_order(problem: ProblemWorkspace) -> None:
    key = resume.pair_key(_plan(), problem, IDENT, OPTIONS, PROBED)
    assert key == resume.pair_key(_plan(), problem, IDENT, OPTIONS, PROBED)
    backwards = problem.model_copy(update={"digests": dict(reversed(problem.digests.items()))})
    assert list(backwards.digests) != list(problem.digests)
    assert resume.pair_key(_plan(), backwards, IDENT, OPTIONS, PROBED) == key


def test_options_that_cannot_change_a_verdict_keep_the_key(problem: ProblemWorkspace) -> None:
    key = resume.pair_key(_plan(), problem, IDENT, OPTIONS, PROBED)
    for same in (OPTIONS._replace(out_dir=Path("/elsewhere")),
                 OPTIONS._replace(work_dir=Path("/work")), OPTIONS._replace(keep_work=True),
                 OPTIONS._replace(jobs=7), OPTIONS._replace(rescore=True),
                 OPTIONS._replace(shard=shard.Shard(2, 3)),
                 OPTIONS._replace(private=(Path("/secret"),)),
                 OPTIONS._replace(private_defaults=False),
                 OPTIONS._replace(disk_reserve=1), OPTIONS._replace(disk_reserve=None),
                 OPTIONS._replace(paranoid=False)):
        assert resume.pair_key(_plan(), problem, IDENT, same, PROBED) == key, same
    # the submission's id and path are not judged, its bytes are (through the digest)
    assert resume.pair_key(_plan(sid="bob"), problem, IDENT, OPTIONS, PROBED) == key
    # nor is where the benchmark is checked out: its commit and trusted digests identify it
    moved = IDENT.model_copy(update={"benchmark_path": "/elsewhere/bench"})
    assert resume.pair_key(_plan(), problem, moved, OPTIONS, PROBED) == key


def test_everything_a_verdict_depends_on_changes_the_key(problem: ProblemWorkspace) -> None:
    key = resume.pair_key(_plan(), problem, IDENT, OPTIONS, PROBED)
    revised = problem.problem.model_copy(update={"statement_revision": 4})
    renamed = problem.problem.model_copy(update={"id": "double_def"})
    others = [
        resume.pair_key(_plan(digest="e" * 64), problem, IDENT, OPTIONS, PROBED),
        resume.pair_key(_plan(), problem.model_copy(update={"problem": revised}), IDENT,
                        OPTIONS, PROBED),
        resume.pair_key(_plan(), problem.model_copy(update={"problem": renamed}), IDENT,
                        OPTIONS, PROBED),
        resume.pair_key(_plan(), problem.model_copy(update={
            "digests": {**problem.digests, "Challenge.lean": "3" * 64}}), IDENT, OPTIONS, PROBED),
        resume.pair_key(_plan(), problem, IDENT, OPTIONS,
                        PROBED.model_copy(update={"skipped": True})),
    ]
    others += [resume.pair_key(_plan(), problem, IDENT.model_copy(update={field: value}),
                               OPTIONS, PROBED)
               for field, value in (("harness_version", "9.9.10"), ("benchmark_commit", "d" * 40),
                                    ("toolchain_name", "leanprover/lean4:v4.36.0"),
                                    ("toolchain_path", "/other"), ("bwrap_version", "0.10.0"),
                                    ("bwrap_sha256", "a" * 64), ("bwrap_setuid", True))]
    others += [resume.pair_key(_plan(), problem, IDENT, changed, PROBED) for changed in (
        OPTIONS._replace(timeout=601.0),
        OPTIONS._replace(limits=OPTIONS.limits.model_copy(
            update={"max_files": OPTIONS.limits.max_files + 1})),
        OPTIONS._replace(max_written_file_bytes=OPTIONS.max_written_file_bytes + 1),
        limited(OPTIONS, memory_limit=(OPTIONS.pair_limits.memory_limit or 0) + 1),
        limited(OPTIONS, max_processes=(OPTIONS.pair_limits.max_processes or 0) + 1),
        OPTIONS._replace(paranoid=True), limited(OPTIONS, disk_limit=None),
        limited(OPTIONS, disk_files=None))]
    assert key not in others
    assert len(set(others)) == len(others)  # and each ingredient differently


def _shard_formula(submission_id: str, problem_id: str, n: int) -> int:
    """shard.py's invariant, spelled out: SHA-256 of the JSON pair, first 8 bytes, mod N."""
    text = json.dumps([submission_id, problem_id], ensure_ascii=False)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") % n + 1


PAIRS = [(f"sub-{i}", f"problem_{j}") for i in range(100) for j in range(20)]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 16])
def test_the_shard_key_is_the_documented_formula(n: int) -> None:
    odd = [("a/b", "c"), ("a", "b/c"), ("é", "ü"), ("x\"y", "z\\w"), ("漢字", "p")]
    for sid, pid in PAIRS[:200] + odd:
        assert shard.shard_of(sid, pid, n) == _shard_formula(sid, pid, n)
        assert shard.in_shard(sid, pid, shard.Shard(_shard_formula(sid, pid, n), n))


def test_the_shard_key_is_deterministic_and_independent_of_the_resume_key(
        problem: ProblemWorkspace) -> None:
    assert [shard.shard_of(s, p, 5) for s, p in PAIRS] == \
        [shard.shard_of(s, p, 5) for s, p in PAIRS]
    # a pair's shard depends on its two ids and N only: not on its bytes or the run's options
    keys = {resume.pair_key(_plan(digest=d * 64), problem, IDENT, o, PROBED)
            for d in "def" for o in (OPTIONS, OPTIONS._replace(timeout=1.0))}
    assert len(keys) == 6
    assert len({shard.shard_of("alice", problem.problem.id, 5) for _ in keys}) == 1


@pytest.mark.parametrize("n", [2, 3, 4, 8, 10])
def test_pairs_spread_evenly_over_shards(n: int) -> None:
    counts = [0] * n
    for sid, pid in PAIRS:
        counts[shard.shard_of(sid, pid, n) - 1] += 1
    expected = len(PAIRS) / n
    chi2 = sum((c - expected) ** 2 / expected for c in counts)
    # 2000 pairs: far below the 0.1% critical value of chi-square with n-1 <= 9 degrees
    # (27.9); deterministic inputs, so this either always holds or never does.
    assert chi2 < 27.9, counts
    assert min(counts) > 0.8 * expected, counts
