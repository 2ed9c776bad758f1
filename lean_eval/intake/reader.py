"""Intake's entry point (design §4.3, §5.2): a submission directory or archive read into memory,
split into problem directories (``layout``) whose read sets ``readset`` checks.

Security invariants enforced here (design §6.2, §6.10):
- Nothing is followed, executed, extracted or written: the walk opens entries ``O_NOFOLLOW``
  relative to a directory descriptor, each still the entry it ``lstat``-ed; it counts entries
  before walking them, opens nothing past ``max_depth`` and reads no file past its limits.
  A hard link is a copy only when every name of it is inside the submission (``links``).
- A host error reading an entry (``HOST_ERRNOS``) makes an ``UNREADABLE`` leaf, never the
  submitter's fault.
- Two directories for one problem reject the whole submission (unless all but one are its
  unchanged starter, ``layout.settle_duplicates``), and so does a directory whose name and
  ``lakefile.toml`` name different problems; a whole-submission rejection
  still names every problem found (``Intake.named``), the one the walk was in included.
- The result depends on the content only: listings sorted, names escaped (``bounds.show``).
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from lean_eval.errors import UsageError
from lean_eval.intake import layout, links
from lean_eval.intake.archive import read_archive
from lean_eval.intake.bounds import (
    CHUNK,
    DEFAULT_LIMITS,
    MIB,
    SKIPPED_NAMES,
    TOO_DEEP,
    UNREADABLE,
    Budget,
    IntakeLimits,
    LimitError,
    Node,
    RejectError,
    RejectionCode,
    show,
)
from lean_eval.intake.readset import (
    ProblemEntry,
    SubmissionFile,
    cap,
    hidden_problems,
    read_problem,
    with_hidden,
)
from lean_eval.records.base import Record

if TYPE_CHECKING:
    from hashlib import _Hash

__all__ = ["DEFAULT_LIMITS", "MIB", "SKIPPED_NAMES", "Intake", "IntakeLimits", "ProblemEntry",
           "RejectionCode", "SubmissionFile", "read_submission", "submission_id"]

SUBMISSION_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")  # longest first: an id drops the whole suffix
ARCHIVE_NAMES = ".tar, .tar.gz or .tgz"  # the same, as messages name them
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
# Errors reading an entry that say something about the host, not about the submission.
HOST_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EIO, errno.ENOMEM, errno.ENFILE,
                         errno.EMFILE, errno.ENOBUFS, errno.ESTALE, errno.ETIMEDOUT})


class Intake(Record):
    submission_id: str
    source: str
    digest: str
    problems: tuple[ProblemEntry, ...]  # sorted by problem_id; empty when rejected
    rejection: str | None
    ignored: tuple[str, ...]
    rejection_code: RejectionCode | None = None
    # Every problem directory found, sorted, a rejected submission's too: each gets a verdict.
    named: tuple[str, ...] = ()
    # When no problem directory was found: what the submitter most likely has to change.
    hint: str | None = None
    # Entries a limit hid (too deep, unreadable) that may hold a problem directory: "path: why".
    hidden: tuple[str, ...] = ()

    def without_data(self) -> Intake:
        """Every file's bytes dropped; re-read and compare the digest before scoring."""
        return self.model_copy(update={"problems": tuple(
            entry.model_copy(update={"files": tuple(SubmissionFile(f.relpath, b"", f.sha256)
                                                    for f in entry.files)})
            for entry in self.problems)})


def submission_id(path: Path) -> str:
    """The basename of `path` without .tar/.tar.gz/.tgz; UsageError when it is not a safe id."""
    name = Path(os.path.abspath(path)).name
    if not (path.is_dir() and not path.is_symlink()):
        suffix = next((s for s in ARCHIVE_SUFFIXES if name.lower().endswith(s)), "")
        name = name[: len(name) - len(suffix)]
    if not SUBMISSION_ID_RE.fullmatch(name):
        raise UsageError(f"submission {show(str(path))}: '{show(name)}' is not a valid id")
    return name


def read_submission(
    path: Path, problem_ids: frozenset[str], limits: IntakeLimits = DEFAULT_LIMITS,
    starters: layout.Starters | None = None,
) -> Intake:
    """Read a submission directory or tar archive; only bad top-level paths raise UsageError.
    `.lake` and `.git` are skipped (an archive still decodes and counts them); the digest covers
    every walked path, kind and content. A rejected submission has no `problems` or `ignored`,
    only `named`. ``starters`` (each problem's starter files) lets a problem with several
    directories, all but one its unchanged starter, keep the changed one
    (``layout.settle_duplicates``); without them every duplicate rejects."""
    source = os.path.abspath(path)
    sid = submission_id(path)
    try:
        st = os.lstat(source)
    except OSError as exc:
        raise UsageError(f"submission {show(source)}: {exc.strerror}") from None
    is_dir = stat.S_ISDIR(st.st_mode)
    if not is_dir and not (stat.S_ISREG(st.st_mode) and source.lower().endswith(ARCHIVE_SUFFIXES)):
        raise UsageError(f"submission {show(source)}: not a directory or a {ARCHIVE_NAMES}"
                         " file (symlinks are not followed)")
    try:
        fd = os.open(source, _DIR_FLAGS if is_dir else _FILE_FLAGS)
    except OSError as exc:
        raise UsageError(f"submission {show(source)}: {exc.strerror}") from None
    digest = hashlib.sha256(b"lean-eval-dir-v1\0" if is_dir else b"")
    problems: tuple[ProblemEntry, ...] = ()
    ignored: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    rejection: str | None = None
    code: RejectionCode | None = None
    root = Node("dir")
    budget = Budget(limits)
    try:
        if (os.fstat(fd).st_ino, os.fstat(fd).st_mode) != (st.st_ino, st.st_mode):
            raise UsageError(f"submission {show(source)}: changed while it was opened")
        if is_dir:
            _walk_root(fd, root, budget, digest, st.st_uid)
        else:
            read_archive(fd, budget, digest, root)
        budget.walking = ()  # the walk is over: a rejection from here on is in no directory
        found = layout.find(root, problem_ids)
        if found.conflicts:
            raise RejectError("; ".join(found.conflicts))
        if starters is not None:
            found = layout.settle_duplicates(found, starters)
        _refuse_duplicates(found)
        problems, hidden = with_hidden(tuple(read_problem(pid, *found.dirs[pid][0], limits)
                                              for pid in sorted(found.dirs)),
                                        found, problem_ids, limits)
        ignored = cap(found.ignored)
    except RejectError as exc:
        rejection, code = str(exc), exc.code
        if is_dir:  # the walk may have stopped early: make the digest cover the reason too
            digest.update(b"\0rejected\0" + rejection.encode())
    finally:
        os.close(fd)
    named = tuple(entry.problem_id for entry in problems)
    if rejection is not None:  # the tree is partial: name what was found, and where it stopped
        found = layout.find(root, problem_ids)
        walking = layout.enclosing(budget.walking, root, problem_ids)
        named = tuple(sorted({*found.dirs, *hidden_problems(found, problem_ids, limits)[0],
                              *([walking] if walking else [])}))
    return Intake(submission_id=sid, source=source, digest=digest.hexdigest(),
                  problems=problems, rejection=rejection, ignored=ignored,
                  rejection_code=code, named=named, hidden=hidden,
                  # a whole-submission rejection says why itself: no unrelated layout hint
                  hint=None if named or rejection is not None else layout.hint(root, problem_ids))


def _refuse_duplicates(found: layout.Found) -> None:
    for pid in sorted(found.dirs):
        if len(found.dirs[pid]) > 1:
            paths = ", ".join(sorted(show(p) for p, _ in found.dirs[pid]))
            raise RejectError(f"problem {pid} has more than one problem directory: {paths}")


_MODE_KINDS = {stat.S_IFDIR: "dir", stat.S_IFREG: "file", stat.S_IFLNK: "symlink",
               stat.S_IFIFO: "FIFO", stat.S_IFSOCK: "socket", stat.S_IFCHR: "device",
               stat.S_IFBLK: "device"}


def _open_same(name: str, dfd: int, flags: int, st: os.stat_result,
               shown: str) -> tuple[int, os.stat_result]:
    """``name`` opened, and its fstat; RejectError unless it is the entry ``st`` described."""
    fd = os.open(name, flags, dir_fd=dfd)
    now = os.fstat(fd)
    if (now.st_dev, now.st_ino, now.st_mode) != (st.st_dev, st.st_ino, st.st_mode):
        os.close(fd)
        raise RejectError(f"{shown}: changed while the submission was read")
    return fd, now


def _record(digest: _Hash, *fields: bytes) -> None:
    for item in fields:
        digest.update(len(item).to_bytes(8, "big") + item)


def _walk_root(fd: int, root: Node, budget: Budget, digest: _Hash, owner: int) -> None:
    _walk_dir(fd, "", root, budget, digest)
    for rel in links.settle(root, owner):  # a link refused is part of what was read
        _record(digest, os.fsencode(rel), b"link refused", b"")


def _walk_dir(dfd: int, prefix: str, node: Node, budget: Budget, digest: _Hash) -> None:
    walking = tuple(prefix.split("/")[:-1])
    budget.walking = walking
    names: list[str] = []
    with os.scandir(dfd) as entries:
        for entry in entries:
            names.append(entry.name)
            if budget.entries + len(names) > budget.limits.max_files:
                raise LimitError(f"{show(prefix or './')}: the submission has more than "
                                   f"{budget.limits.max_files} entries")
    for name in sorted(names):
        budget.walking = walking  # (a rejection keeps where it tripped)
        rel = prefix + name
        shown = show(rel)
        budget.entry(shown)
        if rel.count("/") + 1 > budget.limits.max_depth:  # a leaf, never read or walked
            node.children[name] = Node(TOO_DEEP)
            _record(digest, os.fsencode(rel), TOO_DEEP.encode(), b"")
            continue
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            kind = _MODE_KINDS.get(stat.S_IFMT(st.st_mode), "special file")
            child = Node("skipped" if name in SKIPPED_NAMES and kind in ("dir", "file") else kind)
            node.children[name] = child
            extra = b""
            if child.kind == "file" and st.st_nlink > 1:  # links.settle decides after the walk
                child.inode, child.uid = (st.st_dev, st.st_ino), st.st_uid
            if child.kind == "file" and st.st_size > budget.limits.max_file_bytes:
                child.nlink, child.oversize = st.st_nlink, st.st_size  # refused from its size
                extra = b"oversize %d" % st.st_size
            elif child.kind == "file":
                fd, opened = _open_same(name, dfd, _FILE_FLAGS, st, shown)
                try:
                    child.nlink = opened.st_nlink
                    child.data, child.oversize = _read_bounded(fd, budget, shown,
                                                               opened.st_size)
                finally:
                    os.close(fd)
                extra = (b"oversize %d" % child.oversize if child.oversize
                         else hashlib.sha256(child.data).digest())
            elif child.kind == "symlink":
                extra = os.fsencode(os.readlink(name, dir_fd=dfd))
            _record(digest, os.fsencode(rel), child.kind.encode(), extra)
            if child.kind == "dir":
                fd, _ = _open_same(name, dfd, _DIR_FLAGS, st, shown)
                try:
                    _walk_dir(fd, rel + "/", child, budget, digest)
                finally:
                    os.close(fd)
        except OSError as exc:
            if exc.errno not in HOST_ERRNOS:
                raise RejectError(f"{shown}: cannot be read: {exc.strerror}") from None
            # The host's fault (permissions, I/O): a leaf that makes its problem `error`.
            node.children[name] = Node(UNREADABLE, error=exc.strerror or str(exc))
            _record(digest, os.fsencode(rel), UNREADABLE.encode(), str(exc.errno).encode())


def _read_bounded(fd: int, budget: Budget, shown: str, size: int) -> tuple[bytes, int]:
    """The file's bytes and 0, or b"" and its size so far once it grew past max_file_bytes."""
    chunks: list[bytes] = []
    got, most = 0, budget.limits.max_file_bytes
    while True:
        want = min(CHUNK, most + 1 - got, budget.limits.max_total_bytes - budget.bytes + 1)
        chunk = os.read(fd, want)
        if not chunk:
            break
        budget.data(shown, len(chunk))  # raises before a growing file passes the total limit
        chunks.append(chunk)
        got += len(chunk)
        if got > most:
            budget.bytes -= got
            return b"", got
        if len(chunk) < want and got == size:  # the size at open: saves one empty read(2)
            break
    return b"".join(chunks), 0
