"""What a run-eval or merge output directory really holds, read the way merge and report read it.

Its ``summary.json`` may come from another machine: data, not a map of the host. Invariants (a
breach is an ``OutputRefusedError`` naming the directory and entry):
- every id passes intake's and the catalog's rules (no ``..``, ``/`` or control character); a
  shard's pairs hash into that shard, and its recorded batch has its batch digest;
- a pair's files are at the place its checked ids give; a recorded ``path`` is never opened;
- files are opened without following links (``O_NONBLOCK``: a FIFO cannot block) and used only
  when ``fstat`` says regular, so a name swapped afterwards changes nothing.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import NamedTuple, overload

from pydantic import ValidationError

from lean_eval.errors import OutputRefusedError, UsageError
from lean_eval.intake.bounds import show
from lean_eval.intake.reader import SUBMISSION_ID_RE
from lean_eval.records import out_layout
from lean_eval.records.ids import PROBLEM_ID
from lean_eval.records.verdict import PairSummary, SubmissionSummary, Summary, Verdict
from lean_eval.scoring import shard

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
VERDICT_CAP = 64 << 20  # bytes; a verdict is a few KiB, so anything near this is not one


def _refuse(where: Path, what: str) -> OutputRefusedError:
    return OutputRefusedError(f"{where}: {what}; refusing it (nothing was written)")


def _check_id(where: Path, kind: str, value: str, context: str = "") -> None:
    rule = SUBMISSION_ID_RE.fullmatch if kind == "submission id" else PROBLEM_ID.fullmatch
    if not rule(value):
        raise _refuse(where, f"{context}{kind} '{show(value)}' is not one intake or the "
                             "catalog would accept")


def _check_path(where: Path, pair: PairSummary) -> None:
    place = out_layout.place_of(pair.submission, pair.problem)
    recorded = PurePosixPath(pair.path)
    # Older runs recorded the absolute path on their machine: its last two parts must be ours.
    if recorded == place or (recorded.is_absolute() and ".." not in recorded.parts
                             and recorded.parts[-2:] == place.parts):
        return
    raise _refuse(where, f"pair {show(pair.submission)}/{show(pair.problem)} records path "
                         f"'{show(pair.path)}'; its verdict can only be {place}")


def _check_unchanged(where: Path, sub: SubmissionSummary,
                     scored: set[tuple[str, str]]) -> None:
    problems = set(sub.problems)
    seen: set[str] = set()
    for pid in sub.unchanged:
        if pid not in problems:
            raise _refuse(where, f"submission {sub.id} lists {pid} unchanged but not among its "
                                 "problems")
        if pid in seen or (sub.id, pid) in scored:
            raise _refuse(where, f"pair {sub.id}/{pid} is recorded twice")
        seen.add(pid)


def check_summary(where: Path, summary: Summary) -> None:
    for pid in summary.problems:
        _check_id(where, "problem id", pid, "catalog: ")
    scored = {(p.submission, p.problem) for p in summary.pairs}
    for sub in summary.submissions:
        _check_id(where, "submission id", sub.id)
        for pid in sub.problems:
            _check_id(where, "problem id", pid, f"submission {sub.id}: ")
        for pid in sub.unchanged:  # listed by id, checked as any pair's ids (below, too)
            _check_id(where, "problem id", pid, f"submission {sub.id} unchanged: ")
        _check_unchanged(where, sub, scored)
    for ref in summary.not_scored_pairs:
        _check_id(where, "submission id", ref.submission, "not scored: ")
        _check_id(where, "problem id", ref.problem, f"not scored: {ref.submission}/")
    for text in summary.missing_shards:
        if not _is_shard(text):
            raise _refuse(where, f"missing shard '{show(text)}' is not K/N")
    listed = {sub.id for sub in summary.submissions}
    info = summary.shard
    for pair in summary.every_pair():
        _check_id(where, "submission id", pair.submission, "pair: ")
        _check_id(where, "problem id", pair.problem, f"pair {pair.submission}/")
        if pair.submission not in listed:
            raise _refuse(where, f"pair {pair.submission}/{pair.problem} is of a submission "
                                 "the summary does not list")
        _check_path(where, pair)
        if info is not None and shard.shard_of(pair.submission, pair.problem, info.n) != info.k:
            raise _refuse(where, f"pair {pair.submission}/{pair.problem} belongs to shard "
                                 f"{shard.shard_of(pair.submission, pair.problem, info.n)}/"
                                 f"{info.n}, not to {info.k}/{info.n} that claims it")
    if info is not None and info.batch:
        for sid, problems in info.batch.items():
            _check_id(where, "submission id", sid, "batch: ")
            for pid in problems:
                _check_id(where, "problem id", pid, f"batch: {sid}/")
        if shard.batch_digest(shard.batch_pairs(info.batch)) != info.batch_digest:
            raise _refuse(where, "the batch it records does not have its batch digest "
                                 f"{info.batch_digest[:12]}")


def _is_shard(text: str) -> bool:
    try:
        return str(shard.parse_shard(text)) == text
    except UsageError:
        return False


@contextmanager
def directory(where: Path) -> Iterator[int]:
    """A descriptor of the output directory, links in ``where`` followed (the caller's choice)."""
    try:
        fd = os.open(where, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise _refuse(where, f"cannot open it ({exc.strerror or exc})") from exc
    try:
        yield fd
    finally:
        os.close(fd)


@contextmanager
def submission_dir(where: Path, root_fd: int, submission_id: str) -> Iterator[int | None]:
    """A descriptor of ``<submission>`` opened without following a link (None: absent)."""
    try:
        fd = os.open(submission_id, _DIR_FLAGS, dir_fd=root_fd)
    except FileNotFoundError:
        yield None
        return
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _refuse(where, f"{submission_id} is a symbolic link or not a directory; "
                                 "only directories are read there") from exc
        raise _refuse(where, f"{submission_id}: {exc.strerror or exc}") from exc
    try:
        yield fd
    finally:
        os.close(fd)


def open_regular(where: Path, dir_fd: int | None, submission_id: str, name: str) -> int | None:
    """``<submission>/<name>`` opened if a regular file (None: absent); the caller closes it."""
    if dir_fd is None:
        return None
    shown = f"{submission_id}/{name}"
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refuse(where, f"{shown} is a symbolic link; only regular files are "
                                 "read from an output directory") from exc
        raise _refuse(where, f"{shown}: {exc.strerror or exc}") from exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _refuse(where, f"{shown} is not a regular file ({_kind(mode)}); only regular "
                             "files are read")
    return fd


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a file"


@overload
def read_verdict(where: Path, fd: int, pair: tuple[str, str]) -> Verdict: ...
@overload
def read_verdict(where: Path, fd: int, pair: tuple[str, str], *, strict: bool) -> Verdict | None:
    ...


def read_verdict(where: Path, fd: int, pair: tuple[str, str], *,
                 strict: bool = True) -> Verdict | None:
    """The verdict of ``pair`` in ``fd``. Not ``strict``: None for a file that is no verdict;
    a verdict of another pair is a refusal either way."""
    shown = "/".join(out_layout.place_of(*pair).parts)
    chunks, size = [], 0
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
        size += len(chunk)
        if size > VERDICT_CAP:
            if not strict:
                return None
            raise _refuse(where, f"{shown} is larger than any verdict ({VERDICT_CAP} bytes)")
    try:
        verdict = Verdict.model_validate_json(b"".join(chunks))
    except ValidationError as exc:
        if not strict:
            return None
        raise _refuse(where, f"{shown} is not a verdict this lean-eval can read "
                             f"({exc.errors()[0]['msg']})") from exc
    if (verdict.submission.id, verdict.problem.id) != pair:
        raise _refuse(where, f"{shown} holds the verdict of {show(verdict.submission.id)}/"
                             f"{show(verdict.problem.id)}, not of {pair[0]}/{pair[1]}")
    return verdict


def disagreement(pair: PairSummary, verdict: Verdict) -> str | None:
    """How ``pair``'s summary line differs from its verdict file (verdict, execution, reason
    code), or None; the file decides (merge refuses the line, report shows the file's)."""
    said = (verdict.verdict, verdict.execution, verdict.reason.code)
    line = (pair.verdict, pair.execution, pair.reason)
    if line == said:
        return None
    return (f"summary.json says {show('/'.join(line))}, the verdict file says "
            f"{show('/'.join(said))}")


def run_envelopes(where: Path) -> list[str]:
    """The names of the run envelopes at the top of the output (``run.intoto.json`` and, in a
    merge, one per carried shard); open each with ``open_regular`` (root descriptor, ".")."""
    return [out_layout.RUN_ENVELOPE,
            *sorted(p.name for p in where.glob(out_layout.SHARD_ENVELOPE_GLOB))]


class PairFiles(NamedTuple):
    """What an output directory holds for one pair of its summary."""

    verdict: Verdict | None  # None: absent, or not a verdict this lean-eval can read
    log: bool  # a regular ``<problem>.log`` is beside it


def pair_files(where: Path, summary: Summary) -> tuple[PairFiles, ...]:
    """Each pair's files, aligned with ``summary.every_pair()``; ``check_summary`` it first."""
    found = []
    with directory(where) as root_fd:
        for pair in summary.every_pair():
            sid, pid = pair.submission, pair.problem
            with submission_dir(where, root_fd, sid) as dir_fd:
                verdict = None
                fd = open_regular(where, dir_fd, sid, out_layout.place_of(sid, pid).name)
                if fd is not None:
                    try:
                        verdict = read_verdict(where, fd, (sid, pid), strict=False)
                    finally:
                        os.close(fd)
                log_name = out_layout.place_of(sid, pid, out_layout.LOG_SUFFIX).name
                log = open_regular(where, dir_fd, sid, log_name)
                if log is not None:
                    os.close(log)
            found.append(PairFiles(verdict, log is not None))
    return tuple(found)


def read_file(out_dir: Path, rel: str) -> bytes:
    """``rel`` (``NAME`` or ``SUBMISSION/NAME``) as report and merge read an output's files
    (``outputs.outdir``): no link followed below ``out_dir``, a regular file only, bounded.
    FileNotFoundError when absent; OutputRefusedError naming a link or another kind of file;
    OSError otherwise."""
    parts = PurePosixPath(rel).parts
    if len(parts) not in (1, 2) or ".." in parts:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), rel)
    with directory(out_dir) as root_fd:
        if len(parts) == 1:
            fd = open_regular(out_dir, root_fd, ".", parts[0])
        else:
            with submission_dir(out_dir, root_fd, parts[0]) as dir_fd:
                fd = open_regular(out_dir, dir_fd, parts[0], parts[1])
    if fd is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), rel)
    try:
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            size += len(chunk)
            if size > VERDICT_CAP:
                raise _refuse(out_dir, f"{rel} is larger than any file lean-eval writes "
                              f"({VERDICT_CAP} bytes)")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_summary(out_dir: Path) -> Summary:
    """``out_dir``'s ``summary.json`` as recorded, read by :func:`read_file` (never through a
    link) and checked by :func:`check_summary`: the one reader report, verify and merge use.
    OutputRefusedError for a link or a breach, UsageError when there is none to read."""
    try:
        data = read_file(out_dir, out_layout.SUMMARY)
    except OutputRefusedError:
        raise
    except OSError as exc:
        raise UsageError(f"{out_dir}: no readable summary.json ({exc.strerror or exc}); is it "
                         "a run-eval or merge output directory?") from exc
    try:
        summary = Summary.model_validate_json(data)
    except ValidationError as exc:
        raise UsageError(f"{out_dir / out_layout.SUMMARY} is not a summary this lean-eval can "
                         f"read ({exc.error_count()} problem(s), first: "
                         f"{exc.errors()[0]['msg']})") from exc
    check_summary(out_dir, summary)
    return summary
