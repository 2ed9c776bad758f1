"""The replay report ``replay.json`` (design §5.6): built by ``outputs.replay``, read and shown
by ``outputs.replay_report``."""

from __future__ import annotations

import json
from typing import Any, Literal

from lean_eval.records.base import Record
from lean_eval.records.verdict import Checker, Execution, Outcome, Reason

Status = Literal["reproduced", "changed", "kernel_disagreement", "not_scored"]
STATUSES: tuple[Status, ...] = ("reproduced", "changed", "kernel_disagreement", "not_scored")


class Drift(Record):
    """One pin whose value in the record differs from the replay's."""

    pin: str  # submission_digest, benchmark_commit, trusted_files, toolchain_name, ...
    subject: str  # "run", a submission id, or "<submission>/<problem>"
    recorded: str | None
    current: str | None

    def describe(self) -> str:
        """``benchmark_commit of run: recorded 'ab..', now 'cd..'`` (plain text); an option
        by the replay flag that sets it, its values as that flag takes them (``--memory-limit
        of run: recorded 2G, now 8G; pass --memory-limit 2G to replay as recorded``)."""
        kind, _, key = self.pin.partition(" ")
        if kind in ("option", "limit") and (key in OPTION_FLAGS or key == "limits"):
            return _option_drift(self, key)
        return (f"{self.pin} of {self.subject}: recorded {self.recorded!r}, "
                f"now {self.current!r}")


# The replay flag that sets each verdict-changing option a run records (``summary.options``)
OPTION_FLAGS = {"timeout": "--timeout", "memory_limit": "--memory-limit",
                "max_processes": "--max-processes", "disk_limit": "--disk-limit",
                "disk_files": "--disk-files", "max_written_file_bytes": "--max-written-file-bytes",
                "skip_probes": "--skip-probes"}
# ... and each intake limit of ``options.limits``; the others have no flag (built in)
LIMIT_FLAGS = {"max_file_bytes": "--max-file-bytes", "max_total_bytes": "--max-total-bytes",
               "max_files": "--max-files", "max_depth": "--max-depth",
               "max_archive_bytes": "--max-archive-bytes", "intake_seconds": "--intake-timeout"}
_SIZES = {"memory_limit", "disk_limit", "max_written_file_bytes", "max_file_bytes",
          "max_total_bytes", "max_archive_bytes"}
_OFF_AT_ZERO = {"disk_limit", "disk_files"}  # recorded null: the flag's 0
VERDICT_SAYS = "the verdict says "  # a verdict-level drift's ``current``, before its value


def _value(text: str | None) -> Any:
    try:
        return json.loads(text.removeprefix(VERDICT_SAYS)) if text is not None else None
    except ValueError:
        return text


def flag_value(key: str, value: Any) -> str:
    """``value`` of option ``key`` as its flag takes it: 2147483648 -> 2G, 100.0 -> 100."""
    if value is None and key in _OFF_AT_ZERO:
        return "0"
    if key in _SIZES and isinstance(value, int) and value:
        for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
            if value % size == 0:
                return f"{value // size}{unit}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _option_drift(drift: Drift, key: str) -> str:
    recorded, current = _value(drift.recorded), _value(drift.current)
    verdict = drift.current is not None and drift.current.startswith(VERDICT_SAYS)
    if key == "limits":
        was = recorded if isinstance(recorded, dict) else {}
        now = current if isinstance(current, dict) else {}
        pairs = [(LIMIT_FLAGS.get(k, k), k, was.get(k), now.get(k))
                 for k in sorted({*was, *now}) if was.get(k) != now.get(k)]
    else:
        pairs = [(OPTION_FLAGS[key], key, recorded, current)]
    parts, fixes, omit = [], [], False
    for flag, name, was_, now_ in pairs:
        if name == "skip_probes":
            said = ("the record skipped the probes" if was_ else "the record ran the probes")
            now_said = ("the verdict says it skipped them" if verdict and now_ else
                        "the verdict says it ran them" if verdict else
                        "this replay skips them" if now_ else "this replay runs them")
            parts.append(f"--skip-probes of {drift.subject}: {said}, {now_said}")
            if was_:
                fixes.append("--skip-probes")
            else:
                omit = True
            continue
        now_text = (f"the verdict says {flag_value(name, now_)}" if verdict
                    else f"now {flag_value(name, now_)}")
        parts.append(f"{flag} of {drift.subject}: recorded {flag_value(name, was_)}, {now_text}"
                     + ("" if flag.startswith("--") else " (no flag sets it: a built-in "
                                                          "limit of another lean-eval)"))
        if flag.startswith("--"):
            fixes.append(f"{flag} {flag_value(name, was_)}")
    text = "; ".join(parts)
    if verdict:  # the record disagrees with itself: no flag reconciles it
        return f"{text} (the recorded verdict disagrees with the record's options)"
    if omit:
        return f"{text}; leave --skip-probes out to replay as recorded"
    return f"{text}; pass {' '.join(fixes)} to replay as recorded" if fixes else text


class Judgement(Record):
    """A verdict as the replay compares it."""

    verdict: Outcome
    execution: Execution
    reason: Reason
    checkers: tuple[Checker, ...] = ()
    checker_lines: tuple[str, ...] = ()  # each checker's comparator line, in Lake's order


class ReplayPair(Record):
    """One recorded pair, its recorded and its new judgement."""

    submission: str
    problem: str
    status: Status
    recorded: Judgement
    new: Judgement | None  # None: not_scored
    # kernel_disagreement: the line of each checker that rejected what the record accepted
    disagreement: tuple[str, ...] = ()
    path: str | None = None  # the new verdict, relative to the replay's --out


class ReplayReport(Record):
    """A replay of a run-eval or merge output (``replay.json``)."""

    schema_version: Literal[1] = 1
    record: str  # the output directory replayed
    out: str | None  # where the new verdicts are (None: a temporary directory, removed)
    started_at: str
    finished_at: str
    paranoid: bool
    allow_drift: bool
    drift: tuple[Drift, ...]  # non-empty only when --allow-drift went on regardless
    counts: dict[str, int]  # by status; kernel_disagreement is the audit's count
    pairs: tuple[ReplayPair, ...]
    exit_code: int  # 0 every pair reproduced, 1 any did not (128+n: interrupted)
