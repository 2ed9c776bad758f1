"""One hierarchy for every harness fault; a rejected proof is a verdict, never one of these.

The command line maps them to exit codes in one place (``lean_eval/cli/exits.py``).
"""

from __future__ import annotations

from typing import Any


class LeanEvalError(Exception):
    """Base of every error the harness raises on purpose."""


class SetupError(LeanEvalError):
    """The run cannot start: nothing is scored and `run-eval` exits 2."""


class CatalogError(SetupError):
    """The benchmark's problems, workspaces, pins or trusted digests are invalid."""


class DigestMismatchError(CatalogError):
    """A trusted file differs from its digest in workspaces/index.json."""


class TrustedConfigError(CatalogError):
    """A trusted config.json cannot be decoded strictly."""


class ToolchainError(SetupError):
    """The Lean toolchain (or a tool it must bundle) is missing or unusable."""


class SandboxUnavailableError(SetupError):
    """bubblewrap is missing or cannot be used."""


class UsageError(SetupError):
    """Arguments that cannot be honoured (conflicting paths, duplicate submission ids, ...)."""


class MergeRefusedError(SetupError):
    """Shard outputs that cannot be merged (another batch, identity or options; a pair twice)."""


class PrepareError(SetupError):
    """`lean-eval prepare` cannot make the machine ready (a refused download, a failed step)."""


class PrerequisitesError(PrepareError):
    """``prepare`` found prerequisites missing before any step ran: each ``(step, what)``."""

    def __init__(self, missing: tuple[tuple[str, str], ...]) -> None:
        super().__init__(f"{len(missing)} prerequisite(s) missing, nothing was downloaded or "
                         "changed: " + "; ".join(f"{step}: {what}" for step, what in missing))
        self.missing = missing


class StepFailedError(PrepareError):
    """A ``prepare`` step could not finish: which one, why, and the steps finished before it."""

    def __init__(self, step: str, cause: str, done: tuple[Any, ...]) -> None:
        # done: machine.prepare's Step records (errors sit below every other layer)
        before = ", ".join(f"{s.name} ({s.status})" for s in done) if done else "none"
        super().__init__(f"step {step} failed: {cause}; steps already finished: {before}")
        self.step, self.cause, self.done = step, cause, done


class ConfigError(SetupError):
    """A config file that cannot be used; the message names the file, key and what is allowed."""


class ProbesFailedError(SetupError):
    """A preflight probe did not pass, so nothing was scored; ``preflight`` is the run's
    ``records.verdict.Preflight`` (typed loosely: errors sit below the records)."""

    def __init__(self, message: str, preflight: Any) -> None:
        super().__init__(message)
        self.preflight = preflight


class ProcessStartError(LeanEvalError):
    """A child process could not be started at all."""


class OutputError(LeanEvalError):
    """The output directory is unwritable or full: no further verdict can be recorded."""


class ExportRefusedError(SetupError):
    """``export-results`` writes nothing: bad metadata, an unreadable run or an invalid store."""


class SigningKeyError(SetupError):
    """A signing or verification key that is missing, unreadable or not an Ed25519 key."""


class OutputRefusedError(SetupError):
    """An output directory holds what no run writes: a bad id, a path off its place, a link."""


class ReplayRefusedError(SetupError):
    """``replay`` cannot reproduce the record as asked: a pin differs, or the record is unusable."""


class TerminatedError(BaseException):
    """SIGTERM, raised in the main thread as Ctrl-C raises ``KeyboardInterrupt`` and, like it,
    no ``Exception``, so no fault handler swallows it. A scoring batch handles SIGTERM itself."""
