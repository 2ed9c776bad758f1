"""A run asked for: every ``run-eval`` option, once, as the record the CLI and the API build.

Defaults are ``run-eval``'s (design §3). ``FLAGS`` lets :func:`keyword_names` reword a
command-line message for the API.
"""

from __future__ import annotations

import re
from pathlib import Path

from lean_eval.intake.bounds import IntakeLimits
from lean_eval.records.base import Record
from lean_eval.scoring.driver import DEFAULT_MAX_FILE_BYTES
from lean_eval.supervise.disk import DEFAULT_DISK_BYTES, DEFAULT_DISK_FILES, DEFAULT_DISK_RESERVE
from lean_eval.supervise.resources import DEFAULT_MAX_PROCESSES, DEFAULT_MEMORY_LIMIT

DEFAULT_TIMEOUT = 1800.0  # seconds per pair


class ScoreRequest(Record):
    """What to score and how; ``problems`` empty means every problem, a size of 0 turns that
    disk limit (or the reserve) off."""

    submissions: tuple[Path, ...]  # directories or .tar/.tar.gz/.tgz archives
    out: Path
    benchmark: Path | None = None  # None: the git checkout holding the current directory
    benchmark_rev: str = "HEAD"
    problems: tuple[str, ...] = ()
    set_name: str | None = None
    statuses: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    toolchain: Path | None = None  # None: LEAN_EVAL_TOOLCHAIN, else elan's install of the pin
    bwrap: str | None = None  # None: LEAN_EVAL_BWRAP, else prepare's bwrap, else PATH's
    allow_bwrap_version: str | None = None  # None: LEAN_EVAL_ALLOW_BWRAP_VERSION
    skip_probes: bool = False
    timeout: float = DEFAULT_TIMEOUT
    limits: IntakeLimits = IntakeLimits()
    max_written_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    jobs: int | None = None  # None: the CPUs, fewer when memory is short
    memory_limit: int = DEFAULT_MEMORY_LIMIT
    max_processes: int = DEFAULT_MAX_PROCESSES
    disk_limit: int = DEFAULT_DISK_BYTES
    disk_files: int = DEFAULT_DISK_FILES
    disk_reserve: int = DEFAULT_DISK_RESERVE
    work_dir: Path | None = None
    keep_work: bool = False
    rescore: bool = False
    shard: str | None = None  # "K/N"
    private: tuple[Path, ...] = ()
    sign_key: Path | None = None  # an Ed25519 PEM key: an envelope beside every verdict
    sandbox_user: str | None = None  # USER[:GROUP]; None: sandbox.identity.DEFAULT_USER


# Each field's run-eval option; the intake limits are IntakeLimits' own fields.
FLAGS = {
    "out": "--out", "benchmark": "--benchmark", "benchmark_rev": "--benchmark-rev",
    "problems": "--problem", "set_name": "--set", "statuses": "--status", "tags": "--tag",
    "toolchain": "--toolchain", "bwrap": "--bwrap",
    "allow_bwrap_version": "--allow-bwrap-version", "skip_probes": "--skip-probes",
    "timeout": "--timeout", "max_written_file_bytes": "--max-written-file-bytes",
    "jobs": "--jobs", "memory_limit": "--memory-limit", "max_processes": "--max-processes",
    "disk_limit": "--disk-limit", "disk_files": "--disk-files", "disk_reserve": "--disk-reserve",
    "work_dir": "--work-dir", "keep_work": "--keep-work", "rescore": "--rescore",
    "shard": "--shard", "private": "--private", "sign_key": "--sign-key",
    "sandbox_user": "--sandbox-user",
}
_FLAG = re.compile(r"(?<![\w-])(" + "|".join(sorted(map(re.escape, FLAGS.values()),
                                                      key=len, reverse=True)) + r")(?![\w-])")
_KEYWORD = {flag: name for name, flag in FLAGS.items()}


def keyword_names(message: str) -> str:
    """``message`` with each run-eval option named as its keyword (``--out`` becomes ``out``)."""
    return _FLAG.sub(lambda m: _KEYWORD[m.group(1)], message)
