"""The read set of one problem directory (design §4.3), and the problems a limit hid.

Security invariants (design §6.1, §6.2; tests/intake/):
- Only ``Submission.lean`` and ``Submission/**/*.lean`` are read, each a regular file (a hard
  link only as a copy of a file inside the submission, ``links``), UTF-8 without NUL, within
  ``max_file_bytes``, its relpath Lean module components within ``max_path_bytes``, its
  import header plain (``lean.header.check_header``): no relpath leaves the problem directory
  and no import names an escaped module. Anything else in the read set rejects this problem
  only, naming the entry.
- An ``UNREADABLE`` entry of the read set is the problem's ``fault`` (scored ``error``).
- Nothing a limit hides is silent: an opaque leaf outside every problem directory is a problem
  entry when named after a problem id without another directory, else a ``hidden`` line.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import NamedTuple

from lean_eval.intake import layout
from lean_eval.intake.bounds import (
    NAME_MAX,
    TOO_DEEP,
    UNREADABLE,
    IntakeLimits,
    Node,
    RejectionCode,
    show,
)
from lean_eval.lean.header import check_header
from lean_eval.records.base import Record

LEAN_COMPONENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_']*")
IGNORED_CAP = 200
HIDDEN_CAP = 50
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})  # Cs: undecodable bytes

# How an entry of a problem directory that is not read is listed in ``ignored``.
NOT_READ = "not read (only Submission.lean and Submission/**/*.lean are)"


class SubmissionFile(NamedTuple):
    relpath: str  # "Submission.lean" or "Submission/A/B.lean", relative to the problem dir
    data: bytes
    sha256: str


class ProblemEntry(Record):
    problem_id: str
    location: str  # path of the problem directory inside the submission (escaped for display)
    files: tuple[SubmissionFile, ...]  # sorted by relpath; empty when rejected
    rejection: str | None
    ignored: tuple[str, ...]  # "path: why", sorted
    rejection_code: RejectionCode | None = None
    # The harness could not read an entry of its read set (a host fault): scored `error`.
    fault: str | None = None


class _BadProblemError(Exception):
    """Problem rejection; the message names the offending entry."""

    code: RejectionCode = "path_rejected"


class _OversizeError(_BadProblemError):
    """Problem rejection because a file is over the size limit or a path too deep."""

    code: RejectionCode = "limit_exceeded"


class _FaultError(Exception):
    """The harness could not read an entry of a problem's read set: the problem's ``fault``."""


class _ImportRejectedError(_BadProblemError):
    """Problem rejection because a file's import header is odd or not understood."""

    code: RejectionCode = "import_rejected"


def cap(lines: list[str]) -> tuple[str, ...]:
    lines = sorted(lines)
    if len(lines) <= IGNORED_CAP:
        return tuple(lines)
    return (*lines[:IGNORED_CAP], f"... and {len(lines) - IGNORED_CAP} more")


def _why_hidden(node: Node, limits: IntakeLimits) -> str:
    if node.kind == UNREADABLE:
        return f"cannot be read by the harness ({node.error})"
    return f"deeper than {limits.max_depth} path components, not read"


def hidden_problems(found: layout.Found, problem_ids: frozenset[str], limits: IntakeLimits
            ) -> tuple[dict[str, ProblemEntry], list[str]]:
    """Problem entries and ``hidden`` lines for what a limit hid (first by path wins)."""
    entries: dict[str, ProblemEntry] = {}
    lines: list[str] = []
    for path, name, node in found.hidden:
        why = _why_hidden(node, limits)
        if name in problem_ids and name not in found.dirs and name not in entries:
            message = f"{show(path)}: {why}; a problem directory there is never found"
            fault = node.kind == UNREADABLE
            entries[name] = ProblemEntry(
                problem_id=name, location=show(path), files=(), ignored=(),
                rejection=None if fault else message,
                rejection_code=None if fault else "limit_exceeded",
                fault=message if fault else None)
        else:
            lines.append(f"{show(path)}: {why}; a problem directory in it would not be found")
    return entries, lines


def with_hidden(problems: tuple[ProblemEntry, ...], found: layout.Found,
                 problem_ids: frozenset[str], limits: IntakeLimits
                 ) -> tuple[tuple[ProblemEntry, ...], tuple[str, ...]]:
    """`problems` with the entries of hidden problem directories, and the other hidden lines."""
    entries, lines = hidden_problems(found, problem_ids, limits)
    merged = sorted((*problems, *entries.values()), key=lambda e: e.problem_id)
    if len(lines) > HIDDEN_CAP:
        lines = [*lines[:HIDDEN_CAP], f"... and {len(lines) - HIDDEN_CAP} more"]
    return tuple(merged), tuple(lines)


def _bad_kind(node: Node) -> str | None:
    if node.kind == "file":  # a hard link read as a copy is a file (``links``)
        return node.link_refusal or None
    if node.kind in ("dir", "skipped", TOO_DEEP):
        return None
    return f"{node.kind} {node.link_refusal}" if node.link_refusal else node.kind


def _fold(text: str) -> str:
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())


class _ProblemReader:
    """Collects the read set of one problem directory; raises _BadProblemError to reject it."""

    def __init__(self, location: str, limits: IntakeLimits) -> None:
        self.loc, self.limits = show(location), limits
        self.files: list[SubmissionFile] = []
        self.ignored: list[str] = []
        self.keys: dict[str, str] = {}  # folded relpath -> relpath, for collisions

    def read(self, node: Node) -> None:
        for name, child in node.children.items():
            if name not in ("Submission.lean", "Submission"):
                slash = "/" if child.kind == "dir" else ""
                self.ignored.append(f"{self.loc}/{show(name)}{slash}: {NOT_READ}"
                                    + layout.case_hint(name))
        self.lean_file(node.children["Submission.lean"], "Submission.lean")
        sub = node.children.get("Submission")
        if sub is not None and sub.kind == UNREADABLE:
            raise _FaultError(f"{self.loc}/Submission: cannot be read by the harness "
                              f"({sub.error})")
        if sub is not None and sub.kind == "dir":
            self.tree(sub, "Submission")
        elif sub is not None and (why := _bad_kind(sub)):
            raise _BadProblemError(f"{self.loc}/Submission: {why}")
        elif sub is not None:
            self.ignored.append(f"{self.loc}/Submission: not a directory, not read")

    def tree(self, node: Node, prefix: str) -> None:
        for name in sorted(node.children):
            child, rel = node.children[name], f"{prefix}/{name}"
            shown = f"{self.loc}/{show(rel)}"
            if any(unicodedata.category(c) in _UNSAFE_CATEGORIES for c in name):
                raise _BadProblemError(f"{shown}: name is not UTF-8 or holds control characters")
            if len(name.encode("utf-8", "surrogateescape")) > NAME_MAX:
                raise _BadProblemError(f"{shown}: a path component longer than {NAME_MAX} bytes")
            if (other := self.keys.setdefault(_fold(rel), rel)) != rel:
                raise _BadProblemError(
                    f"{shown}: collides with {self.loc}/{show(other)} (case or Unicode form)")
            if child.kind == UNREADABLE:
                raise _FaultError(f"{shown}: cannot be read by the harness ({child.error})")
            if why := _bad_kind(child):
                raise _BadProblemError(f"{shown}: {why}")
            if child.kind == TOO_DEEP:
                raise _OversizeError(f"{shown}: deeper than {self.limits.max_depth} path "
                                     "components")
            if child.kind == "skipped":
                self.ignored.append(f"{shown}: build or version-control data, not read")
            elif child.kind == "dir" and name.endswith(".lean"):
                raise _BadProblemError(f"{shown}: a directory named *.lean")
            elif child.kind == "dir":
                self.tree(child, rel)
            elif name.endswith(".lean"):
                self.lean_file(child, rel)
            else:
                self.ignored.append(f"{shown}: not a .lean file, not read")

    def lean_file(self, node: Node, rel: str) -> None:
        shown = f"{self.loc}/{show(rel)}"
        if node.kind == TOO_DEEP:
            raise _OversizeError(f"{shown}: deeper than {self.limits.max_depth} path components")
        if node.kind == UNREADABLE:
            raise _FaultError(f"{shown}: cannot be read by the harness ({node.error})")
        if node.kind == "dir":
            raise _BadProblemError(f"{shown}: a directory named *.lean")
        if why := _bad_kind(node):
            raise _BadProblemError(f"{shown}: {why}")
        for part in rel[: -len(".lean")].split("/")[1:]:  # "Submission" itself is fixed
            if not LEAN_COMPONENT_RE.fullmatch(part) or len(part) > NAME_MAX - len(".lean"):
                raise _BadProblemError(
                    f"{shown}: '{show(part)}' is not a valid Lean module name component")
        if (size := len(rel.encode())) > (most := self.limits.max_path_bytes):
            raise _BadProblemError(f"{shown}: a path of {size} bytes inside the scoring "
                                   f"workspace, over the limit of {most}")
        data, limit = node.data, self.limits.max_file_bytes
        if node.oversize:  # refused from its size: never read
            raise _OversizeError(f"{shown}: {node.oversize} bytes, over the limit of {limit}")
        if len(data) > limit:
            raise _OversizeError(f"{shown}: {len(data)} bytes, over the limit of {limit}")
        if rel == "Submission.lean" and not data:
            raise _BadProblemError(f"{shown}: empty")
        if b"\0" in data:
            raise _BadProblemError(f"{shown}: holds NUL bytes")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _BadProblemError(f"{shown}: not UTF-8 (bad byte at offset {exc.start})") from None
        if why := check_header(text):
            raise _ImportRejectedError(f"{shown}: {why}")
        self.files.append(SubmissionFile(rel, data, hashlib.sha256(data).hexdigest()))


def read_problem(pid: str, location: str, node: Node, limits: IntakeLimits) -> ProblemEntry:
    """The entry of the problem directory `node` at `location`: its read set, or why not."""
    reader = _ProblemReader(location, limits)
    rejection, code, fault = None, None, None
    try:
        reader.read(node)
    except _BadProblemError as exc:
        rejection, code, reader.files = str(exc), exc.code, []
    except _FaultError as exc:
        fault, reader.files = str(exc), []
    return ProblemEntry(problem_id=pid, location=reader.loc, rejection=rejection,
                        rejection_code=code, fault=fault,
                        ignored=cap(reader.ignored),
                        files=tuple(sorted(reader.files, key=lambda f: f.relpath)))
