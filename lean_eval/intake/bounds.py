"""Intake's bounds (design §5.2): the limits, the budget that enforces them, its errors, the tree.

Invariants:
- Every bound is a field of :class:`IntakeLimits` with a safe default; reaching one raises
  :class:`LimitError`, which rejects the whole submission (``limit_exceeded``).
- The budget counts entries and bytes before they are used and checks the deadline each step.
- A file over ``max_file_bytes`` is refused from its size: never read (an archive skips its data,
  within ``skip_allowance``) nor counted toward ``max_total_bytes``; it rejects its problem only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field

from lean_eval.records.base import Record

MIB = 1 << 20
CHUNK = 64 * 1024
SKIPPED_NAMES = frozenset({".lake", ".git"})  # build and VCS data: skipped wholesale
PATH_MAX = 4096  # Linux: the longest path a system call takes, terminating NUL included
NAME_MAX = 255  # Linux: the longest path component, in bytes
TOO_DEEP = "too deep"  # kind of a leaf standing for an entry past max_depth, never read
UNREADABLE = "unreadable"  # kind of a leaf the harness could not read (a host fault)
SKIP_FACTOR = 4  # archive data skipped for files over max_file_bytes: at most this x the archive
LAKE_BUILD_MARGIN = 64  # Lake's build outputs sit deeper than the sources they come from

RejectionCode = Literal["path_rejected", "limit_exceeded", "import_rejected", "archive_corrupt"]


class IntakeLimits(Record):
    """Bounds on what one submission may make the harness read, keep and do."""

    max_file_bytes: int = Field(default=MIB, ge=1)  # per overlaid file
    max_total_bytes: int = Field(default=16 * MIB, ge=1)  # all file bytes of the submission
    max_files: int = Field(default=10_000, ge=1)  # entries walked / archive members seen
    max_depth: int = Field(default=32, ge=1, le=256)  # path components
    max_archive_bytes: int = Field(default=64 * MIB, ge=1)  # the archive file itself
    max_header_bytes: int = Field(default=64 * 1024, ge=512)  # one pax / GNU long-name record
    max_pax_keys: int = Field(default=128, ge=1)  # keys of one pax header, and global keys
    intake_seconds: float = Field(default=60.0, gt=0)  # deadline for one submission's intake
    # Longest relpath (bytes) inside a scoring workspace; the batch derives it from its root.
    max_path_bytes: int = Field(default=1024, ge=32, le=PATH_MAX)


DEFAULT_LIMITS = IntakeLimits()


def max_path_bytes_under(workspace: str) -> int:
    """``max_path_bytes`` under the absolute `workspace`, leaving ``LAKE_BUILD_MARGIN``."""
    used = len(workspace.rstrip("/").encode("utf-8", "surrogateescape")) + 2
    return max(32, min(PATH_MAX, PATH_MAX - used - LAKE_BUILD_MARGIN))


class RejectError(Exception):
    """Whole-submission rejection; the message names the offending entry."""

    code: RejectionCode = "path_rejected"


class CorruptArchiveError(RejectError):
    """Whole-submission rejection because the archive cannot be read as gzip or tar."""

    code: RejectionCode = "archive_corrupt"


class LimitError(RejectError):
    """Whole-submission rejection because a bound was reached."""

    code: RejectionCode = "limit_exceeded"


@dataclass
class Node:
    """One entry of a submission's tree, as the directory walk or the archive reader saw it."""

    kind: str  # dir | file | skipped, or a link or special kind: "symlink", "FIFO", ...
    data: bytes = b""
    nlink: int = 1
    inode: tuple[int, int] | None = None  # (st_dev, st_ino) of a walked file with nlink > 1
    uid: int = -1  # its owner (a walked file with nlink > 1)
    # Why a hard link is not read as a copy (``links``); empty: it is, or it is no link.
    link_refusal: str = ""
    oversize: int = 0  # a file refused from its size (that size); its data was never read
    error: str = ""  # why an UNREADABLE leaf could not be read
    children: dict[str, Node] = field(default_factory=dict)


def show(text: str) -> str:
    """`text` with non-printable characters escaped, truncated for messages: quote it as is,
    never through ``!r``, which would escape the escapes' backslashes a second time."""
    if len(text) <= 300 and text.isprintable():  # the usual case, called for every entry
        return text
    out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return out if len(out) <= 300 else out[:297] + "..."


class Budget:
    """What one submission's intake has used so far: entries, bytes and time."""

    def __init__(self, limits: IntakeLimits) -> None:
        self.limits, self.entries, self.bytes, self.skipped = limits, 0, 0, 0
        self.deadline = time.monotonic() + limits.intake_seconds
        self.walking: tuple[str, ...] = ()  # where the walk is, for ``Intake.named``

    def tick(self, shown: str) -> None:
        """Raise LimitError once the intake deadline has passed."""
        if time.monotonic() > self.deadline:
            raise LimitError(f"{shown}: intake took longer than "
                             f"{self.limits.intake_seconds:g} s")

    def entry(self, shown: str) -> None:
        """Count one entry (walked or archive member) before its metadata is kept."""
        self.tick(shown)
        self.entries += 1
        if self.entries > (limit := self.limits.max_files):
            raise LimitError(f"{shown}: the submission has more than {limit} entries")

    def data(self, shown: str, size: int) -> None:
        self.bytes += size
        if self.bytes > (limit := self.limits.max_total_bytes):
            raise LimitError(f"{shown}: the submission holds more than {limit} bytes")

    def skip(self, shown: str, size: int) -> None:
        """Count archive data skipped for a member refused from its size, before it is decoded."""
        self.skipped += size
        if self.skipped > (limit := skip_allowance(self.limits)):
            raise LimitError(f"{shown}: the archive holds more than {limit} bytes in files over "
                             f"the size limit of {self.limits.max_file_bytes}")


def skip_allowance(limits: IntakeLimits) -> int:
    """Most decoded bytes an archive may skip for members refused from their size."""
    return SKIP_FACTOR * limits.max_archive_bytes
