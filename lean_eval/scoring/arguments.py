"""Fail-fast checks of a run's arguments, before any probe (design §5.5 "Order of checks").

Most only anticipate the authoritative checks (intake's, and :func:`check_paths` again with the
resolved tools) and open nothing beyond ``lstat``; :func:`check_ids` is the only id check.
"""

from __future__ import annotations

import difflib
import functools
import os
import stat
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from lean_eval.errors import UsageError
from lean_eval.files.paths import resolved_inside, resolved_overlap
from lean_eval.intake import reader
from lean_eval.records.out_layout import REFUSED_SUMMARY, SUMMARY

# Archive formats people try; named so the error can say what they are.
_KNOWN_OTHER = (".zip", ".tar.xz", ".txz", ".tar.bz2", ".tbz2", ".tar.zst", ".7z", ".rar", ".gz",
                ".xz", ".bz2")


RESERVED_IDS = frozenset({SUMMARY, REFUSED_SUMMARY})  # names a run writes atop --out


class Submission(NamedTuple):
    """A submission of a run: its id (checked by :func:`check_ids`) and its absolute path."""

    sid: str
    path: Path


def _supported() -> str:
    return reader.ARCHIVE_NAMES


def check_submission(path: Path) -> None:
    """A submission must exist and be a directory or a supported archive (links not followed)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise UsageError(f"submission {path} does not exist") from None
    except OSError as exc:
        raise UsageError(f"submission {path} cannot be read: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise UsageError(f"submission {path} is a symbolic link; pass the directory or archive "
                         "it points to (links are not followed)")
    if stat.S_ISDIR(st.st_mode):
        return
    name = path.name.lower()
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"submission {path} is neither a directory nor a regular file")
    if name.endswith(reader.ARCHIVE_SUFFIXES):
        return
    other = next((s for s in _KNOWN_OTHER if name.endswith(s)), None)
    kind = f"{other} archives are not supported" if other else "not a directory or an archive"
    raise UsageError(f"submission {path}: {kind}; a submission is a directory or a "
                     f"{_supported()} archive")


def check_out(out_dir: Path, submissions: Sequence[Path], work_dir: Path | None) -> None:
    """``--out`` must be (or become) a directory, and no two places of the run overlap."""
    for ancestor in (out_dir, *out_dir.absolute().parents):
        if ancestor.exists():
            if not ancestor.is_dir():
                what = "is a file" if ancestor == out_dir else f"lies under the file {ancestor}"
                raise UsageError(f"--out {out_dir} {what}; it must be a directory")
            break
    check_paths(submissions, out_dir, work_dir)


def check_paths(submissions: Sequence[Path], out_dir: Path, work_dir: Path | None,
                needed: Sequence[Path] = ()) -> None:
    """No two of a run's places overlap (``--out``, ``--work-dir``, each submission), and no
    submission contains what scoring ``needed`` (the tools and the benchmark, once resolved).
    Each place is resolved once: a run of thousands of submissions makes thousands of checks."""
    out = os.path.realpath(out_dir)
    work = None if work_dir is None else os.path.realpath(work_dir)
    needs = [(need, os.path.realpath(need)) for need in needed]

    for path in submissions:
        real = os.path.realpath(path)
        for need, need_real in needs:
            if resolved_inside(need_real, real):
                raise UsageError(f"submission input {path} contains {need}, which scoring "
                                 "needs; move the submission elsewhere")
        if resolved_overlap(real, out):
            raise UsageError(f"--out {out_dir} and submission {path} overlap; write the results "
                             "somewhere else")
        if work is not None and resolved_overlap(real, work):
            raise UsageError(f"--work-dir {work_dir} and submission {path} overlap")
    if work is not None and resolved_overlap(out, work):
        raise UsageError(f"--out {out_dir} and --work-dir {work_dir} overlap")


def check_ids(paths: Sequence[Path]) -> tuple[Submission, ...]:
    """The submissions in input order; a duplicate or reserved id is a setup failure."""
    seen: dict[str, Path] = {}
    for path in paths:
        sid = reader.submission_id(path)
        if sid in RESERVED_IDS:
            raise UsageError(f"submission {path}: its id {sid!r} collides with a file run-eval "
                             "writes at the top of --out; rename it")
        if sid in seen:
            raise UsageError(f"submissions {seen[sid]} and {path} have the same id {sid!r} "
                             "(an id is the file or directory name without .tar/.tar.gz/"
                             f".tgz); rename one, e.g. to <submitter>-{sid}")
        seen[sid] = path
    return tuple(Submission(sid, path.absolute()) for sid, path in seen.items())


def problem_ids(benchmark: Path) -> tuple[str, ...]:
    """The problem ids the benchmark's working tree declares (``problems/<id>.toml``)."""
    folder = benchmark / "problems"
    if not folder.is_dir():
        return ()
    return tuple(sorted(p.stem for p in folder.glob("*.toml")))


def check_problems(selected: Iterable[str], known: Sequence[str]) -> None:
    """Every ``--problem`` names a known id; an unknown one is reported with close matches."""
    if not known:
        return  # no list to judge against here: the catalog will decide
    problems = []
    for problem_id in sorted(set(selected) - set(known)):
        close = difflib.get_close_matches(problem_id, known, n=3, cutoff=0.6)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        problems.append(f"{problem_id!r}{hint}")
    if problems:
        raise UsageError(f"unknown problem id(s): {', '.join(problems)}; the benchmark has "
                         f"{len(known)} problem(s), e.g. {', '.join(known[:5])}")


def joined(texts: Sequence[str]) -> str:
    """Several messages as one, each named, in the order found."""
    return " Also, ".join(t if t.endswith((".", ")")) or i == len(texts) - 1 else t + "."
                          for i, t in enumerate(texts))


def _work_dir(work_dir: Path | None) -> None:
    if work_dir is not None and work_dir.exists() and not work_dir.is_dir():
        raise UsageError(f"--work-dir {work_dir} is a file; it must be a directory")


def check_run(submissions: Sequence[Path], out_dir: Path, work_dir: Path | None,
              selected: Iterable[str] | None, benchmark: Path) -> None:
    """Every check of ``run-eval``'s arguments that needs neither Lean nor bubblewrap; every
    problem found is named in one ``UsageError``."""
    problems: list[str] = []
    checks: list[Callable[[], None]] = [functools.partial(check_submission, p)
                                        for p in submissions]
    checks += [functools.partial(check_out, out_dir, submissions, work_dir),
               functools.partial(_work_dir, work_dir)]
    if selected:
        checks.append(functools.partial(check_problems, selected, problem_ids(benchmark)))
    for check in checks:
        try:
            check()
        except UsageError as exc:  # noqa: PERF203 - every problem is named, not the first
            problems.append(str(exc))
    if problems:
        raise UsageError(joined(problems))
