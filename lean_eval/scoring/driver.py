"""The driver: run ``lake comparator`` on one workspace and classify its outcome.

Invariants (design §5.4, whose steps the functions name; §6.3-§6.6):
- Lake is started by ``DriverSettings.runner`` (the sandboxed one unless a test passes its
  own), with the whole launch decided here.
- ``--inadvisably-no-sandbox`` is never passed, ``--paranoid`` only for ``replay --paranoid``;
  no submitted module is built or imported here.
"""

from __future__ import annotations

import json
import resource
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from lean_eval.benchmark.problem import ComparatorConfig
from lean_eval.benchmark.toolchain import Toolchain
from lean_eval.errors import ToolchainError
from lean_eval.files.atomic import write_bytes_atomic
from lean_eval.files.paths import inside
from lean_eval.records.documents import WorkspaceTestReport
from lean_eval.records.verdict import Mounts, ResourceLimits
from lean_eval.sandbox import environment, wrapper
from lean_eval.sandbox.runner import SANDBOXED, ComparatorRunner, Launch
from lean_eval.scoring.classification import Classification, classify, phase_seconds
from lean_eval.supervise import pair_fs, process, resources

DEFAULT_MAX_FILE_BYTES = 8 << 30
LOG_TAIL_LINES = 40


class DriverSettings(NamedTuple):
    """Everything the driver needs besides the workspace; fixed for a run."""

    toolchain: Toolchain
    bwrap: Path
    caller_env: Mapping[str, str]
    timeout: float
    writable_roots: tuple[Path, ...]  # scoring root, output, work dir: never hold a tool
    mounts: Mounts = Mounts()  # the run's one mask set (sandbox.run_masks)
    output_cap: int = 256 * 1024
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES  # RLIMIT_FSIZE: no single file written larger
    limits: resources.PairLimits = resources.PairLimits()
    paranoid: bool = False  # `lake comparator --paranoid`: the replay audit only, never run-eval
    disk_reserve: int | None = None  # recorded only: admission keeps it (scoring.scheduler)
    runner: ComparatorRunner = SANDBOXED  # starts Lake (tests: a replay)
    # (uid, gid) Lake runs as (``sandbox.identity``); None: the harness's own user (``test``)
    user: tuple[int, int] | None = None


def pair_rlimits(max_file_bytes: int) -> dict[int, tuple[int, int]]:
    """Limits Lake and everything it starts inherit (bwrap keeps them): no core files of
    untrusted processes left on disk, and no single written file past ``max_file_bytes``."""
    return {resource.RLIMIT_CORE: (0, 0),
            resource.RLIMIT_FSIZE: (max_file_bytes, max_file_bytes)}


class DriverResult(NamedTuple):
    classification: Classification
    outcome: process.ProcessResult
    log_tail: tuple[str, ...]
    phase_seconds: dict[str, float]
    limits: ResourceLimits


def _inside(path: Path, roots: tuple[Path, ...]) -> bool:
    return any(inside(path, r) for r in roots)


def check_toolchain_placement(toolchain: Toolchain, writable_roots: tuple[Path, ...]) -> None:
    """Step 1: the absolute tools must not lie in anything a build can write."""
    for tool in (toolchain.lake, toolchain.nanoda):
        if _inside(tool, writable_roots):
            raise ToolchainError(f"{tool} lies inside a writable scoring directory; refusing it")


def forced_config(config: ComparatorConfig, nanoda: Path) -> dict[str, object]:
    """Step 2: the trusted configuration with NanoDa forced on (pure)."""
    data = config.model_dump(mode="json", exclude_none=True)
    data.pop("enable_nanoda", None)
    kernels = dict(data.get("external_kernels") or {})
    kernels["nanoda"] = [str(nanoda)]
    data["external_kernels"] = kernels
    return data


def comparator_argv(toolchain: Toolchain, config_path: Path,
                    paranoid: bool = False) -> tuple[str, ...]:
    """Step 5's command: the toolchain's absolute Lake, and ``--paranoid`` only for the audit."""
    return (str(toolchain.lake), "comparator", "--config", str(config_path),
            *(("--paranoid",) if paranoid else ()))


def write_log(path: Path, argv: tuple[str, ...], outcome: process.ProcessResult) -> tuple[str, ...]:
    """Write the capped raw log and return its last lines."""
    text = (
        f"# argv: {json.dumps(list(argv))}\n"
        f"# returncode: {outcome.returncode} signal: {outcome.signal} "
        f"timed_out: {outcome.timed_out} duration: {outcome.duration:.3f}s\n"
        "## stdout\n" + outcome.stdout.decode("utf-8", errors="replace")
        + "\n## stderr\n" + outcome.stderr.decode("utf-8", errors="replace") + "\n"
    )
    write_bytes_atomic(path, text.encode("utf-8"))  # as verdicts are: never through a planted link
    return tuple(text.splitlines()[-LOG_TAIL_LINES:])


def run_workspace(workspace: Path, state: Path, config: ComparatorConfig,
                  settings: DriverSettings, log_path: Path,
                  own_filesystem: Path | None = None) -> DriverResult:
    """Run the six steps of design §5.4 on ``workspace``, using ``state`` for harness files;
    ``own_filesystem``: the pair's size-capped filesystem holding both (``supervise.pair_fs``),
    else its disk budget is the watchdog's."""
    roots = (*settings.writable_roots, workspace, workspace / ".lake")
    check_toolchain_placement(settings.toolchain, roots)
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    config_path = state / "comparator.json"  # step 2: a temporary file outside the workspace
    # root's, readable by the sandbox identity (``workspace.hand_over`` made ``state`` passable)
    config_path.write_text(json.dumps(forced_config(config, settings.toolchain.nanoda), indent=2),
                           encoding="utf-8")
    config_path.chmod(0o644)
    tmpdir = state / "tmp"  # the identity's own when it is switched (``workspace.hand_over``)
    tmpdir.mkdir(mode=0o700, exist_ok=True)
    caller_env = settings.caller_env
    if settings.user is not None:  # the harness's HOME is not the identity's to write
        caller_env = {**caller_env, "HOME": str(tmpdir)}
    # The system temp dir is no place for a tool either, though a toolchain may live there (CI).
    search = environment.filter_search_path(caller_env.get("PATH", ""),
                                        (*roots, Path(tempfile.gettempdir())))
    wrapper_path = state / "bwrap-wrapper"
    env = environment.lake_environment(caller_env, search_path=search, tmpdir=tmpdir,
                                       wrapper=wrapper_path)
    argv = comparator_argv(settings.toolchain, config_path, settings.paranoid)
    limits = settings.limits._replace(
        disk_paths=(str(workspace), str(state)), keep_free=settings.disk_reserve,
        disk_mount=None if own_filesystem is None else str(own_filesystem))
    outcome = settings.runner.run(Launch(
        argv=argv, env=env, cwd=workspace, timeout=settings.timeout,
        output_cap=settings.output_cap,
        rlimits=pair_rlimits(min(settings.max_file_bytes, limits.disk_limit or (1 << 62))),
        limits=limits, wrapper=wrapper_path,
        spec=wrapper.WrapperSpec(bwrap=settings.bwrap, mounts=settings.mounts),
        user=settings.user))
    if own_filesystem is not None and outcome.limit_exceeded is None and outcome.limits_mechanism:
        # what the pair left when it ended counts too: a build stopped by the kernel's ENOSPC
        # may exit before the reaper's next look
        over = pair_fs.exceeded(str(own_filesystem), limits.disk_limit, limits.disk_files)
        outcome = outcome._replace(limit_exceeded=over[0] if over else None)
    tail = write_log(log_path, argv, outcome)
    return DriverResult(classify(outcome, config, settings.timeout, settings.paranoid), outcome,
                        tail, phase_seconds(outcome, config),
                        limits_record(limits, settings.disk_reserve, outcome))


def workspace_test_report(workspace: Path, result: DriverResult, log: Path | None,
                          kept: Path | None) -> WorkspaceTestReport:
    """What ``lean-eval test`` found (``log``, ``kept``: what --keep-work kept, else None)."""
    c = result.classification
    return WorkspaceTestReport(workspace=str(workspace), verdict=c.verdict,
                               execution=c.execution, reason=c.reason, last_phase=c.last_phase,
                               checkers=c.checkers, exit_code=result.outcome.returncode,
                               log=str(log) if log else None, kept=str(kept) if kept else None)


def limits_record(limits: resources.PairLimits, reserve: int | None,
                  outcome: process.ProcessResult | None = None) -> ResourceLimits:
    """The verdict's record of a pair's limits, under the names the verdict publishes (pure);
    without ``outcome`` the pair never ran, so nothing enforced them."""
    ran = outcome is not None and outcome.limits_mechanism is not None
    tree = limits.memory_limit is not None or limits.max_processes is not None
    return ResourceLimits.model_validate({
        "memory_bytes": limits.memory_limit, "max_processes": limits.max_processes,
        "mechanism": (outcome.limits_mechanism or "none") if outcome and tree else "none",
        "exceeded": outcome.limit_exceeded if outcome else None,
        "disk_bytes": limits.disk_limit, "disk_files": limits.disk_files,
        "disk_mechanism": ("none" if not (ran and limits.watches_disk())
                           else "watchdog" if limits.disk_mount is None else pair_fs.MECHANISM),
        "disk_reserve_bytes": reserve})
