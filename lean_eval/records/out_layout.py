"""The layout of an output directory (``--out``): every writer and reader takes its names here.
A pair's files sit side by side under its submission's directory; problem ids hold no dot
(``records.ids``), so a verdict's name is never a log's or an envelope's."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

SUMMARY = "summary.json"  # the run's record, at the top
REFUSED_SUMMARY = "summary.refused.json"  # a refusal kept beside an earlier run's summary
REPLAY = "replay.json"  # `lean-eval replay`'s report
LOCK = ".lean-eval.lock"  # flocked by the one run writing the directory; never deleted
VERDICT_SUFFIX = ".json"
LOG_SUFFIX = ".log"  # the capped raw log of a pair Lake ran for
ENVELOPE_SUFFIX = ".intoto.json"  # the signed statement over the verdict beside it
BESIDE_VERDICT = (LOG_SUFFIX, ENVELOPE_SUFFIX)  # a pair's other files, carried with its verdict
RUN_ENVELOPE = "run.intoto.json"  # --sign-key: the signed statement over the whole run


def shard_envelope(k: int, n: int) -> str:
    """Where a merge keeps the run envelope of the shard ``k`` of ``n`` it carried."""
    return f"run.{k}-of-{n}{ENVELOPE_SUFFIX}"


SHARD_ENVELOPE_GLOB = f"run.*-of-*{ENVELOPE_SUFFIX}"


def place_of(submission_id: str, problem_id: str, suffix: str = VERDICT_SUFFIX) -> PurePosixPath:
    """A pair's file relative to the output directory (its verdict unless ``suffix`` says)."""
    return PurePosixPath(submission_id) / f"{problem_id}{suffix}"


def verdict_path(out_dir: Path, submission_id: str, problem_id: str) -> Path:
    return out_dir / place_of(submission_id, problem_id)


def log_path(out_dir: Path, submission_id: str, problem_id: str) -> Path:
    return out_dir / place_of(submission_id, problem_id, LOG_SUFFIX)


def envelope_path(verdict_file: Path) -> Path:
    """The signed envelope beside a verdict file."""
    return verdict_file.with_name(verdict_file.name.removesuffix(VERDICT_SUFFIX) + ENVELOPE_SUFFIX)
