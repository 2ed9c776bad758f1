"""The WorkspaceTest driver: run ``lake comparator`` on one workspace and classify the result.

Invariants (design §5.4, §6.3-§6.6):
- Lake and NanoDa are absolute paths inside the toolchain and outside every writable root.
- The configuration Lake reads is a temporary file outside the workspace: the trusted one,
  with ``enable_nanoda`` removed and ``external_kernels.nanoda`` forced to the bundled NanoDa.
- Lake is started by ``DriverSettings.runner`` (:mod:`lean_eval.runner`; the sandboxed one
  unless a test passes its own), with everything about the launch decided here; the run's
  masks reach the wrapper as the one :class:`~lean_eval.verdict.Mounts` record of the run.
- Lake's environment is the allowlist of :mod:`lean_eval.sandbox`; ``--inadvisably-no-sandbox``
  is never passed, ``--paranoid`` only when ``DriverSettings.paranoid`` asks for the audit of
  ``lean-eval replay --paranoid`` (``run-eval`` never sets it); no submitted module is built or
  imported here.
- ``accepted`` needs exit 0 *and* acceptance lines from NanoDa and the Lean default kernel and
  ``Your solution is okay!``; an infrastructure failure is never ``rejected``.
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal as signals
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from lean_eval import process, resources, sandbox
from lean_eval.atomic import write_bytes_atomic
from lean_eval.documents import WorkspaceTestReport
from lean_eval.errors import ToolchainError
from lean_eval.problem import ComparatorConfig
from lean_eval.runner import SANDBOXED, ComparatorRunner, Launch
from lean_eval.toolchain import Toolchain
from lean_eval.verdict import (
    Checker,
    Execution,
    Mounts,
    Outcome,
    Reason,
    ResourceLimits,
)

REQUIRED_KERNELS = ("nanoda", "Lean default")
# What `lake comparator --paranoid` adds: every checker the release bundles, in Lake's order
# (before the remaining external kernels and `Lean default`); all must accept.
PARANOID_KERNELS = ("Lean paranoid", "lean4lean", "nanoda", "con-leche", "con-ron")
DEFAULT_MAX_FILE_BYTES = 8 << 30
OKAY_LINE = "Your solution is okay!"
LOG_TAIL_LINES = 40

_REASONS = (
    ("Challenge and solution theorem statement do not match", "statement_mismatch"),
    ("Challenge and solution constant kind don't match", "kind_mismatch"),
    ("Solution constant is not a theorem", "kind_mismatch"),
    ("Solution constant is not a definition", "kind_mismatch"),
    ("Challenge constant is not a definition", "kind_mismatch"),
    ("Const not found in", "missing_constant"),
    ("Const does not match between challenge and target", "definition_mismatch"),
    ("Illegal axiom detected", "illegal_axiom"),
    ("Error while interacting with", "kernel_rejected"),
)
_KERNEL_EXIT = re.compile(r"^(?P<k>.+) exited with -?\d+$")
_CHILD_EXIT = re.compile(r"^Child exited with -?\d+$")
# "<who> exited with [code] <n>": how Lake (and a build inside it) reports a child's end
_EXIT_STATUS = re.compile(r"^(?P<who>.*?)\s*\bexited with (?:code )?(?P<n>-?\d+)$")
# Lines that only say that something below failed; the first other error: line says what
_GENERIC_ERROR = re.compile(
    r"^(?:Child exited with -?\d+|.*\bexited with code -?\d+|build failed"
    r"|Some required builds logged failures.*)$")
# SIGKILL not sent by the harness is the OOM killer's mark; the rest are rlimits
_RESOURCE_SIGNALS = frozenset({signals.SIGXCPU, signals.SIGXFSZ, signals.SIGKILL})
_SIGNAL_BASE = 128  # a child killed by signal n is reported as exit 128 + n
_LIMIT_NAMES = {"disk_bytes": "disk (bytes, --disk-limit)",
                "disk_files": "disk (files, --disk-files)"}


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
    memory_limit: int | None = resources.DEFAULT_MEMORY_LIMIT  # bytes, for the pair's whole tree
    max_processes: int | None = resources.DEFAULT_MAX_PROCESSES  # tasks of the pair's tree
    limits_mechanism: str = "auto"  # "auto" (cgroup v2 where possible), "cgroup_v2", "watchdog"
    paranoid: bool = False  # `lake comparator --paranoid`: the replay audit only, never run-eval
    disk_bytes: int | None = None  # blocks the pair's workspace and state may hold
    disk_files: int | None = None  # entries they may hold
    disk_reserve: int | None = None  # recorded only: admission keeps it (lean_eval.scheduler)
    runner: ComparatorRunner = SANDBOXED  # starts Lake (tests: a replay)


def pair_rlimits(max_file_bytes: int) -> dict[int, tuple[int, int]]:
    """Limits Lake and everything it starts inherit (bwrap keeps them): no core files of
    untrusted processes left on disk, and no single written file past ``max_file_bytes``."""
    return {resource.RLIMIT_CORE: (0, 0),
            resource.RLIMIT_FSIZE: (max_file_bytes, max_file_bytes)}


class Classification(NamedTuple):
    """What the comparator's run means."""

    verdict: Outcome
    execution: Execution
    reason: Reason
    last_phase: str | None
    checkers: tuple[Checker, ...]


class DriverResult(NamedTuple):
    """A classified run and its raw outcome."""

    classification: Classification
    outcome: process.ProcessResult
    log_tail: tuple[str, ...]
    phase_seconds: dict[str, float]
    limits: ResourceLimits


def _inside(path: Path, roots: tuple[Path, ...]) -> bool:
    real = os.path.realpath(path)
    return any(real == os.path.realpath(r) or real.startswith(os.path.realpath(r) + "/")
               for r in roots)


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
    """Step 5's command: the toolchain's absolute Lake, nothing else on the command line but
    ``--paranoid`` when the audit asks for every bundled checker."""
    return (str(toolchain.lake), "comparator", "--config", str(config_path),
            *(("--paranoid",) if paranoid else ()))


def phase_of(line: str, config: ComparatorConfig) -> str | None:
    """The phase a comparator stdout line announces, if any."""
    if line == "Resolving dependencies":
        return "resolve"
    if line == f"Building {config.challenge_module}":
        return "build_challenge"
    if line == f"Building {config.solution_module}":
        return "build_solution"
    if line.startswith("Exporting ") and line.endswith(f" from {config.challenge_module}"):
        return "export_challenge"
    if line.startswith("Exporting ") and line.endswith(f" from {config.solution_module}"):
        return "export_solution"
    if line.startswith("Running ") and line.endswith(" kernel on solution"):
        return "kernel:" + line.removeprefix("Running ").removesuffix(" kernel on solution")
    return None


def phase_seconds(outcome: process.ProcessResult, config: ComparatorConfig) -> dict[str, float]:
    """Seconds spent in each phase: from its line to the next phase line (or the end)."""
    starts = [(at, phase) for at, raw in outcome.line_marks
              if (phase := phase_of(raw.decode("utf-8", "replace").strip(), config)) is not None]
    ends = [at for at, _ in starts[1:]] + [outcome.duration] if starts else []
    spent: dict[str, float] = {}
    for (at, phase), end in zip(starts, ends, strict=True):
        spent[phase] = round(spent.get(phase, 0.0) + max(0.0, end - at), 3)
    return spent


_PHASE_ORDER = ("resolve", "build_challenge", "export_challenge", "build_solution",
                "export_solution")


def kernel_order(config: ComparatorConfig, paranoid: bool = False) -> tuple[str, ...]:
    """The kernels Lake runs, in its order: external ones by sorted name, then Lean default
    (with ``--paranoid``: the bundled checkers first, in their order)."""
    external = sorted({*(config.external_kernels or {}), "nanoda"})
    if paranoid:
        external = [*PARANOID_KERNELS, *(k for k in external if k not in PARANOID_KERNELS)]
    return (*external, "Lean default")


def checker_line(checker: Checker) -> str:
    """The comparator's stdout line a parsed checker came from (the inverse of the parse)."""
    if checker.result == "started":
        return f"Running {checker.name} kernel on solution"
    verb = "accepts" if checker.result == "accepted" else "rejected"
    return f"{checker.name} kernel {verb} the solution"


def _phase_rank(phase: str, kernels: tuple[str, ...]) -> int:
    """Position in Lake's real order; a kernel Lake would not run ranks as nothing."""
    if phase in _PHASE_ORDER:
        return _PHASE_ORDER.index(phase)
    name = phase.removeprefix("kernel:")
    return len(_PHASE_ORDER) + kernels.index(name) if name in kernels else -1


def _checkers(lines: list[str]) -> tuple[Checker, ...]:
    results: dict[str, Checker] = {}
    for line in lines:
        for suffix, result in ((" kernel accepts the solution", "accepted"),
                               (" kernel rejected the solution", "rejected"),
                               (" kernel on solution", "started")):
            if line.endswith(suffix):
                name = line.removesuffix(suffix).removeprefix("Running ")
                if result != "started" or name not in results:
                    results[name] = Checker(name=name, result=result)
    return tuple(results.values())


def _error_lines(stderr: str) -> list[str]:
    return [ln.removeprefix("error: ").strip() for ln in stderr.splitlines()
            if ln.startswith("error: ")]


def _explanation(final: str, stderr: str, stdout_lines: list[str]) -> str:
    """The human message: Lake's final line unless it only says a child failed, then the first
    error line that says what (Lake's ``error: ...`` or a compiler's ``<pos>: error: ...``,
    stderr first: Lean and Lake do not interleave the two streams in time)."""
    if not _GENERIC_ERROR.match(final):
        return final
    for raw in (*stderr.splitlines(), *stdout_lines):
        line = raw.strip()
        if not (line.startswith("error: ") or ": error: " in line):
            continue
        said = line.removeprefix("error: ").strip()
        if said and not _GENERIC_ERROR.match(said):
            return said
    return final


def _signal_name(sig: int) -> str:
    try:
        return signals.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _infrastructure_exit(errors: list[str]) -> tuple[Execution, str] | None:
    """A child or kernel Lake reports as ended by a signal (exit 128+n or -n): never a
    rejection. Lake's final line decides, unless it is the generic ``Child exited with <n>`` of
    a sandboxed step, whose own lines above it may say that its compiler was killed (a forged
    one only costs its printer); a comparator judgement line stays a rejection."""
    for line in errors if _CHILD_EXIT.match(errors[-1]) else errors[-1:]:
        found = _EXIT_STATUS.match(line)
        if found is None:
            continue
        n = int(found["n"])
        sig = -n if n < 0 else n - _SIGNAL_BASE if n > _SIGNAL_BASE else None
        if sig is None:
            continue
        who = found["who"] or "a child"
        kind: Execution = "resource_exhausted" if sig in _RESOURCE_SIGNALS else "crashed"
        return kind, f"{who} was killed by {_signal_name(sig)} (exit {n}): {line}"
    return None


def _rejection_code(message: str, last_phase: str | None) -> str:
    for prefix, code in _REASONS:
        if message.startswith(prefix):
            return code
    if _KERNEL_EXIT.match(message) and not _CHILD_EXIT.match(message):
        return "kernel_rejected"
    if last_phase is not None and last_phase.startswith("export"):
        return "export_failed"
    return "build_failed"


def classify(outcome: process.ProcessResult, config: ComparatorConfig, timeout: float,
             paranoid: bool = False) -> Classification:
    """Step 6 (pure): exit status and output to verdict, execution and reason (``paranoid``:
    Lake ran every bundled checker, and acceptance needs each one's acceptance line)."""
    stdout = outcome.stdout.decode("utf-8", errors="replace")
    stderr = outcome.stderr.decode("utf-8", errors="replace")
    lines = [ln.strip() for ln in stdout.splitlines()]
    phases = [p for p in (phase_of(ln, config) for ln in lines) if p is not None]
    # The furthest phase in Lake's real order, not the last line: submitted code runs in
    # build_solution and can print phase lines, but cannot make an earlier (trusted) phase
    # look like the one that failed.
    kernels = kernel_order(config, paranoid)
    ranked = [p for p in phases if _phase_rank(p, kernels) >= 0]
    last = max(ranked, key=lambda p: _phase_rank(p, kernels)) if ranked else None
    checkers = _checkers(lines)
    errors = _error_lines(stderr)
    final = errors[-1] if errors else ""  # Lake reports its own judgement last
    message = _explanation(final, stderr, lines) if errors else ""
    where = f" while in phase {last}" if last else " before any phase line"

    def fail(execution: Execution, code: str, text: str) -> Classification:
        return Classification("error", execution, Reason(code=code, message=text), last, checkers)

    if outcome.timed_out:
        return fail("timed_out", "timeout", f"deadline of {timeout:g}s reached{where}")
    if outcome.limit_exceeded is not None:
        named = _LIMIT_NAMES.get(outcome.limit_exceeded, outcome.limit_exceeded)
        return fail("resource_exhausted", "resource_limit",
                    f"the pair exceeded its {named} limit{where}")
    if outcome.signal is not None:
        name = _signal_name(outcome.signal)
        if outcome.signal in _RESOURCE_SIGNALS:
            return fail("resource_exhausted", "resource_limit", f"lake was killed by {name}{where}")
        return fail("crashed", "crashed", f"lake was killed by {name}{where}")
    sandbox_lines = [ln for ln in stderr.splitlines()
                     if ln.startswith(("bwrap:", sandbox.WRAPPER_TAG + ":"))]
    if outcome.returncode == 0:
        accepted = {c.name for c in checkers if c.result == "accepted"}
        required = (*REQUIRED_KERNELS, *(PARANOID_KERNELS if paranoid else ()))
        missing = [k for k in dict.fromkeys(required) if k not in accepted]
        if OKAY_LINE not in lines:
            missing.append(repr(OKAY_LINE))
        if missing or any(c.result == "rejected" for c in checkers):
            return fail("completed", "protocol_violation",
                        "lake comparator exited 0 without the acceptance lines of "
                        + ", ".join(missing or ["every kernel"]))
        return Classification("accepted", "completed",
                              Reason(code="accepted", message=OKAY_LINE), last, checkers)
    if outcome.returncode == 1:
        if sandbox_lines:
            return fail("sandbox_error", "sandbox", sandbox_lines[-1])
        if not errors:
            return fail("completed", "protocol_violation",
                        "lake comparator exited 1 without an error: line")
        infrastructure = _infrastructure_exit(errors)
        if infrastructure is not None:
            kind, text = infrastructure
            code = "resource_limit" if kind == "resource_exhausted" else "crashed"
            return fail(kind, code, text + where)
        if last in (None, "resolve", "build_challenge", "export_challenge"):
            return fail("completed", "challenge_failed",
                        f"the trusted side failed{where}: {message}")
        return Classification("rejected", "completed",
                              Reason(code=_rejection_code(final, last), message=message),
                              last, checkers)
    if outcome.returncode == 2:
        code = "sandbox" if "There is no unsandboxed mode" in stderr else "setup"
        execution: Execution = "sandbox_error" if code == "sandbox" else "completed"
        return fail(execution, code, message or "lake comparator could not start")
    code_ = outcome.returncode
    if code_ is not None and code_ > _SIGNAL_BASE:
        sig = code_ - _SIGNAL_BASE
        if sig in _RESOURCE_SIGNALS:
            return fail("resource_exhausted", "resource_limit",
                        f"lake exited with {code_} ({_signal_name(sig)}){where}: {message}")
        return fail("crashed", "crashed",
                    f"lake exited with {code_} ({_signal_name(sig)}){where}: {message}")
    return fail("crashed", "crashed", f"lake exited with {code_}{where}: {message}")


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
                  settings: DriverSettings, log_path: Path) -> DriverResult:
    """Run the six steps of design §5.4 on ``workspace``, using ``state`` for harness files."""
    roots = (*settings.writable_roots, workspace, workspace / ".lake")
    check_toolchain_placement(settings.toolchain, roots)
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    config_path = state / "comparator.json"
    config_path.write_text(json.dumps(forced_config(config, settings.toolchain.nanoda), indent=2),
                           encoding="utf-8")
    tmpdir = state / "tmp"
    tmpdir.mkdir(mode=0o700, exist_ok=True)
    # The system temp dir is no place for a tool either, though a toolchain may live there (CI).
    search = sandbox.filter_search_path(settings.caller_env.get("PATH", ""),
                                        (*roots, Path(tempfile.gettempdir())))
    wrapper = state / "bwrap-wrapper"
    env = sandbox.lake_environment(settings.caller_env, search_path=search, tmpdir=tmpdir,
                                   wrapper=wrapper)
    argv = comparator_argv(settings.toolchain, config_path, settings.paranoid)
    limits = resources.PairLimits(settings.memory_limit, settings.max_processes,
                                  settings.limits_mechanism, settings.disk_bytes,
                                  settings.disk_files, (str(workspace), str(state)))
    outcome = settings.runner.run(Launch(
        argv=argv, env=env, cwd=workspace, timeout=settings.timeout,
        output_cap=settings.output_cap,
        rlimits=pair_rlimits(min(settings.max_file_bytes, settings.disk_bytes or (1 << 62))),
        limits=limits, wrapper=wrapper,
        spec=sandbox.WrapperSpec(bwrap=settings.bwrap, mounts=settings.mounts)))
    tail = write_log(log_path, argv, outcome)
    return DriverResult(classify(outcome, config, settings.timeout, settings.paranoid), outcome,
                        tail, phase_seconds(outcome, config),
                        resource_limits(limits, outcome, settings.disk_reserve))


def workspace_test_report(workspace: Path, result: DriverResult, log: Path | None,
                          kept: Path | None) -> WorkspaceTestReport:
    """What ``lean-eval test`` found (``log``, ``kept``: what --keep-work kept, else None)."""
    c = result.classification
    return WorkspaceTestReport(workspace=str(workspace), verdict=c.verdict,
                               execution=c.execution, reason=c.reason, last_phase=c.last_phase,
                               checkers=c.checkers, exit_code=result.outcome.returncode,
                               log=str(log) if log else None, kept=str(kept) if kept else None)


def resource_limits(limits: resources.PairLimits, outcome: process.ProcessResult,
                    reserve: int | None = None) -> ResourceLimits:
    """What the verdict records about the pair's limits (pure)."""
    ran = outcome.limits_mechanism is not None
    return ResourceLimits.model_validate({
        "memory_bytes": limits.memory, "max_processes": limits.processes,
        "mechanism": (outcome.limits_mechanism or "none")
        if limits.memory is not None or limits.processes is not None else "none",
        "exceeded": outcome.limit_exceeded,
        "disk_bytes": limits.disk_bytes, "disk_files": limits.disk_files,
        "disk_mechanism": "watchdog" if ran and limits.watches_disk() else "none",
        "disk_reserve_bytes": reserve})
