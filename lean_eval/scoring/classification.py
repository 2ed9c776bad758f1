"""What a ``lake comparator`` run means: pure functions of its exit status and output.

Invariants (design §5.4 step 6, §6.4, §6.6, §6.13):
- ``accepted`` needs exit 0 *and* acceptance lines from NanoDa and the Lean default kernel and
  ``Your solution is okay!``; an infrastructure failure (a signal, an rlimit, the OOM killer, a
  limit the harness enforced) is never ``rejected``.
- A SIGKILL is ``resource_exhausted`` only where it may be a limit's: where the pair's own
  cgroup enforced its limits, that group counts every OOM kill of its members
  (``PairGroup.exceeded``), so a SIGKILL it did not count was sent by a process (another
  harness's reclaim, an operator, or a process of the pair itself), not by a limit: it is
  ``infrastructure_error``, never ``resource_exhausted`` (and never ``rejected``).
- The reason of a rejection is Lake's first specific ``error:`` line.
"""

from __future__ import annotations

import re
import signal as signals
from typing import NamedTuple

from lean_eval.benchmark.problem import ComparatorConfig
from lean_eval.records.verdict import Checker, Execution, Outcome, Reason
from lean_eval.sandbox import wrapper
from lean_eval.supervise import process

REQUIRED_KERNELS = ("nanoda", "Lean default")
# What `lake comparator --paranoid` adds: every checker the release bundles, in Lake's order
# (before the remaining external kernels and `Lean default`); all must accept.
PARANOID_KERNELS = ("Lean paranoid", "lean4lean", "nanoda", "con-leche", "con-ron")
OKAY_LINE = "Your solution is okay!"
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
# SIGKILL not sent by the harness is the OOM killer's mark (but see _kill_kind); the rest are
# rlimits
_RESOURCE_SIGNALS = frozenset({signals.SIGXCPU, signals.SIGXFSZ, signals.SIGKILL})
_KERNEL_MECHANISMS = frozenset({"cgroup_v1", "cgroup_v2"})
_OUTSIDE = ("with no limit of the pair reached (its cgroup counted no OOM kill): a process "
            "killed it (another harness's, an operator's, or one of the pair's own), not a "
            "limit")
_SIGNAL_BASE = 128  # a child killed by signal n is reported as exit 128 + n
_LIMIT_NAMES = {"disk_bytes": "disk (bytes, --disk-limit)",
                "disk_files": "disk (files, --disk-files)"}


class Classification(NamedTuple):
    verdict: Outcome
    execution: Execution
    reason: Reason
    last_phase: str | None
    checkers: tuple[Checker, ...]


def phase_of(line: str, config: ComparatorConfig) -> str | None:
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


def _kill_kind(sig: int, mechanism: str | None) -> Execution:
    """What a process killed by ``sig`` says of the pair, whose limits ``mechanism`` enforced
    and which reached none (the invariant above)."""
    if sig == signals.SIGKILL and mechanism in _KERNEL_MECHANISMS:
        return "infrastructure_error"
    return "resource_exhausted" if sig in _RESOURCE_SIGNALS else "crashed"


def _code(kind: Execution) -> str:
    return {"resource_exhausted": "resource_limit",
            "infrastructure_error": "killed_from_outside"}.get(kind, "crashed")


def _infrastructure_exit(errors: list[str],
                         mechanism: str | None = None) -> tuple[Execution, str] | None:
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
        kind = _kill_kind(sig, mechanism)
        outside = f" {_OUTSIDE}" if kind == "infrastructure_error" else ""
        return kind, f"{who} was killed by {_signal_name(sig)} (exit {n}){outside}: {line}"
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
    mechanism = outcome.limits_mechanism
    if outcome.signal is not None:
        name = _signal_name(outcome.signal)
        kind = _kill_kind(outcome.signal, mechanism)
        outside = f" {_OUTSIDE}" if kind == "infrastructure_error" else ""
        return fail(kind, _code(kind), f"lake was killed by {name}{where}{outside}")
    sandbox_lines = [ln for ln in stderr.splitlines()
                     if ln.startswith(("bwrap:", wrapper.WRAPPER_TAG + ":"))]
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
        infrastructure = _infrastructure_exit(errors, mechanism)
        if infrastructure is not None:
            kind, text = infrastructure
            return fail(kind, _code(kind), text + where)
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
        kind = _kill_kind(sig, mechanism)
        outside = f" {_OUTSIDE}" if kind == "infrastructure_error" else ""
        return fail(kind, _code(kind),
                    f"lake exited with {code_} ({_signal_name(sig)}){where}{outside}: {message}")
    return fail("crashed", "crashed", f"lake exited with {code_}{where}: {message}")


