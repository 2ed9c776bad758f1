"""What a run is: its options, the tools it uses, its identity and the pairs it plans."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple, Protocol

from lean_eval import __version__
from lean_eval.benchmark.catalog import Catalog
from lean_eval.benchmark.toolchain import Toolchain
from lean_eval.intake import reader
from lean_eval.records.verdict import Identity, Preflight
from lean_eval.sandbox import identity as sandbox_identity
from lean_eval.sandbox.bubblewrap import BwrapInfo
from lean_eval.sandbox.runner import SANDBOXED, ComparatorRunner
from lean_eval.scoring import driver
from lean_eval.scoring.shard import Shard
from lean_eval.supervise import disk, resources


class Signer(Protocol):
    """What a run needs of a signing key (``outputs.signing.SigningKey``): an envelope per
    verdict, one over the run, and the check a resumed run makes before keeping a verdict."""

    @property
    def fingerprint(self) -> str: ...

    def sign(self, verdict_file: Path, out_dir: Path) -> str | None:
        """Write the envelope beside ``verdict_file``; a fault message, or None."""

    def sign_run(self, out_dir: Path) -> str | None:
        """Write the run's envelope over ``summary.json`` and its verdicts; a fault, or None."""

    def check(self, verdict_file: Path, out_dir: Path) -> str | None:
        """Why ``verdict_file`` is not exactly what this key signed there, or None."""


class RunOptions(NamedTuple):
    out_dir: Path
    timeout: float
    work_dir: Path | None = None
    limits: reader.IntakeLimits = reader.IntakeLimits()
    keep_work: bool = False
    preflight: Preflight | None = None  # None: probes were not asked for (library callers)
    max_written_file_bytes: int = driver.DEFAULT_MAX_FILE_BYTES
    jobs: int | None = None  # None: CPUs, lowered to what memory allows
    rescore: bool = False
    shard: Shard | None = None
    pair_limits: resources.PairLimits = resources.PairLimits(  # each pair's tree
        disk_limit=disk.DEFAULT_DISK_BYTES, disk_files=disk.DEFAULT_DISK_FILES)
    # Probes need to know where a kept workspace is before the run: score directly under this
    # directory instead of a fresh per-run one (it is then neither locked nor reclaimed).
    scoring_root: Path | None = None
    private: tuple[Path, ...] = ()  # --private DIR: also hidden from every sandbox
    private_defaults: bool = True  # also hide the parents of the inputs and of --out
    sign_key: Signer | None = None  # --sign-key: an envelope beside every verdict recorded
    secret_files: tuple[Path, ...] = ()  # the --sign-key file: masked in every sandbox
    paranoid: bool = False  # `lake comparator --paranoid`: `replay --paranoid` only
    # Free space kept on the scoring and output filesystems; None: off. Not in the resume key
    # (design §5.5 "Disk").
    disk_reserve: int | None = disk.DEFAULT_DISK_RESERVE


class Tools(NamedTuple):
    """The resolved executables a run uses, and what starts Lake with them."""

    toolchain: Toolchain
    bwrap: BwrapInfo
    runner: ComparatorRunner = SANDBOXED  # tests alone pass another (tests/fake_runner.py)
    user: sandbox_identity.SandboxUser | None = None  # None: sandbox.identity's default

    @property
    def sandbox_user(self) -> sandbox_identity.SandboxUser:
        """Who the comparator runs as (``sandbox.identity``)."""
        return sandbox_identity.effective(self.user)


class Planned(NamedTuple):
    """One pair as planned before scoring: no submission bytes."""

    order: int  # position in input order
    sid: str
    problem_id: str
    source: Path
    digest: str
    key: str
    plan: reader.Intake  # without data


def identity(catalog: Catalog, tools: Tools) -> Identity:
    """What every verdict of this run depends on besides its two inputs and the options
    ``resume.verdict_options`` names."""
    return Identity(harness_version=__version__, benchmark_path=str(catalog.root),
                    benchmark_commit=catalog.commit, toolchain_name=catalog.toolchain_name,
                    toolchain_path=str(tools.toolchain.root),
                    bwrap_path=str(tools.bwrap.path), bwrap_version=tools.bwrap.version,
                    bwrap_owner=tools.bwrap.owner, bwrap_setuid=tools.bwrap.setuid,
                    bwrap_sha256=tools.bwrap.sha256,
                    bwrap_minimum_version=tools.bwrap.minimum,
                    upstream_commit=catalog.upstream_commit, imported=catalog.is_import,
                    sandbox_identity=tools.sandbox_user.record(),
                    upstream_uncommitted=catalog.upstream_uncommitted)


def not_probed(tools: Tools) -> Preflight:
    """The preflight record of a run whose probes were skipped."""
    return Preflight(skipped=True, toolchain_path=str(tools.toolchain.root),
                     bwrap_path=str(tools.bwrap.path), bwrap_version=tools.bwrap.version,
                     bwrap_sha256=tools.bwrap.sha256)
