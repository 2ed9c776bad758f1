"""validate-submission: what run-eval would do with a submission, decided without Lean.

The same intake as ``run-eval`` (every limit, the header check) and the same
``pair.is_unchanged``; no toolchain, sandbox or probe. Mistakes the comparator would reject
are also visible without Lean and warned of: a hole's statement that differs from the
starter's (``statement_mismatch``), an import of the problem's challenge or solution module
(the build fails: Solution imports the submission), and an import of a library the benchmark
does not have (Mathlib without its ``[[require]]``). So is an edit scoring ignores: a
read-only copy of a trusted file (``start-problem`` writes them) that differs from the
benchmark's, in a directory submission (an archive's copies are not kept by intake).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from lean_eval.benchmark.catalog import Catalog, ProblemWorkspace
from lean_eval.benchmark.upstream import SOURCE_ONLY_FILES
from lean_eval.errors import CatalogError
from lean_eval.files.decoding import toml_table
from lean_eval.intake.reader import DEFAULT_LIMITS, IntakeLimits, ProblemEntry, read_submission
from lean_eval.intake.readset import NOT_READ
from lean_eval.lean.declarations import declarations
from lean_eval.lean.header import HeaderError, parse_header
from lean_eval.records.documents import CheckOutcome, ProblemCheck, SubmissionCheck
from lean_eval.scoring.pair import is_unchanged


def changed_files(entry: ProblemEntry, starter: Mapping[str, bytes]) -> tuple[str, ...]:
    """Submitted relpaths whose bytes differ from the starter of their path (or have none)."""
    return tuple(f.relpath for f in entry.files if starter.get(f.relpath) != f.data)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


# The module roots every Lean toolchain provides, whatever the benchmark requires.
CORE_ROOTS = ("Init", "Std", "Lean", "Lake")


def _libraries(problem: ProblemWorkspace) -> tuple[frozenset[str], tuple[str, ...]]:
    """The module roots the workspace's lakefile.toml declares and the names it requires."""
    try:
        table = toml_table(problem.trusted.get("lakefile.toml", b""), "lakefile.toml")
    except CatalogError:  # the catalog checked it; nothing to say without it
        return frozenset(), ("?",)
    roots: set[str] = set()
    for lib in table.get("lean_lib", []):
        if isinstance(lib, dict):
            given = lib.get("roots", [lib.get("name")])
            listed = given if isinstance(given, list) else []
            roots.update(r for r in listed if isinstance(r, str))
    requires = tuple(str(r.get("name", "")) for r in table.get("require", [])
                     if isinstance(r, dict))
    return frozenset(roots), requires


def _unavailable(relpath: str, module: str, problem: ProblemWorkspace) -> str | None:
    """Why importing ``module`` would fail to build in this benchmark, when that is certain."""
    root = module.split(".", 1)[0]
    roots, requires = _libraries(problem)
    if root in CORE_ROOTS or root in roots:
        return None
    if root == "Mathlib" and "mathlib" not in (r.lower() for r in requires):
        return (f"{relpath} imports {module}, but this benchmark does not require Mathlib (its "
                "lakefile.toml has no [[require]] mathlib): the build would fail")
    if not requires:
        return (f"{relpath} imports {module}, but this benchmark has no dependencies: only Lean "
                f"core ({', '.join(CORE_ROOTS)}) and the submission's own modules can be "
                "imported; the build would fail")
    return None


def warnings(entry: ProblemEntry, problem: ProblemWorkspace) -> tuple[str, ...]:
    """What the comparator would reject that a reading without Lean already shows."""
    found: list[str] = []
    config = problem.config
    trusted = {config.challenge_module: "the challenge", config.solution_module: "the solution"}
    for f in entry.files:
        try:
            imports = parse_header(_text(f.data)).imports
        except HeaderError:
            continue  # intake's header check reports it
        found += [f"{f.relpath} imports {item.module}, {trusted[item.module]} module: the "
                  f"build would fail ({config.solution_module} imports the submission)"
                  for item in imports if item.module in trusted]
        found += [why for item in imports if item.module not in trusted
                  and (why := _unavailable(f.relpath, item.module, problem))]
    submitted = next((f.data for f in entry.files if f.relpath == "Submission.lean"), None)
    starter = problem.starter.get("Submission.lean")
    if submitted is not None and starter is not None:
        ours = {d.name: d for d in declarations(_text(submitted))}
        for hole in declarations(_text(starter)):
            mine = ours.get(hole.name)
            if mine is None:
                found.append(f"Submission.lean: no {hole.keyword} {hole.name}: the hole is "
                             "missing (statement_mismatch)")
            elif mine.statement != hole.statement:
                found.append(f"Submission.lean:{mine.line}: {hole.name}'s statement "
                             f"`{mine.statement}` differs from the starter's "
                             f"`{hole.statement}` (statement_mismatch)")
    return tuple(found)


def _copy_bytes(path: Path, limit: int) -> bytes | None:
    """Up to ``limit`` bytes of the regular file ``path`` (a link is not followed); None when
    it is no regular file or cannot be read."""
    try:  # lstat first: a device or FIFO is never opened
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read(limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def edited_copies(submission: Path, entry: ProblemEntry, problem: ProblemWorkspace,
                  reference: tuple[str, ...]) -> tuple[str, ...]:
    """A warning for each read-only copy of a trusted file beside the submission (``start-
    problem`` writes them) whose bytes differ from the benchmark's: scoring never reads it,
    so the edit changes nothing. Directory submissions only; a copy is read up to one byte
    more than the benchmark's file."""
    if not submission.is_dir() or submission.is_symlink():
        return ()
    found = []
    for name in reference:
        expected = problem.trusted.get(name)
        if expected is None:
            continue
        copy = _copy_bytes(submission / entry.location / name, len(expected) + 1)
        if copy is not None and copy != expected:
            found.append(f"{name} differs from the benchmark's: it is a read-only copy that "
                         "scoring never reads (the benchmark's own is used), so this edit "
                         "changes nothing; only Submission.lean and Submission/**/*.lean count")
    return tuple(found)


def _problem(entry: ProblemEntry, problem: ProblemWorkspace,
             submission: Path | None = None) -> ProblemCheck:
    changed = changed_files(entry, problem.starter)
    trusted = problem.trusted
    outcome: CheckOutcome = ("invalid_submission" if entry.rejection is not None
                             else "error" if entry.fault is not None
                             else "unchanged" if is_unchanged(entry, problem) else "scored")
    # intake's line for a file it did not read: "<location>/<name>: not read (...)"
    prefix = f"{entry.location}/"
    # the benchmark's own trusted files, and those the source layout keeps beside them (a
    # fork of upstream lean-eval carries both): expected in a problem directory, not news
    reference = tuple(name for name in sorted({*trusted, *SOURCE_ONLY_FILES})
                      if f"{prefix}{name}: {NOT_READ}" in entry.ignored)
    shown = {f"{prefix}{name}: {NOT_READ}" for name in reference}
    return ProblemCheck(problem_id=entry.problem_id, location=entry.location, outcome=outcome,
                        files=tuple(f.relpath for f in entry.files), changed=changed,
                        ignored=tuple(line for line in entry.ignored if line not in shown),
                        rejection=entry.rejection, rejection_code=entry.rejection_code,
                        fault=entry.fault, reference=reference,
                        warnings=(warnings(entry, problem) if outcome == "scored" else ())
                        + (edited_copies(submission, entry, problem, reference)
                           if submission is not None else ()))


_HOLDS_NONE = "/: holds no problem directory"


def _said_excluded(line: str, excluded: frozenset[str]) -> str:
    """An ignored line about a directory named after a problem the selection left out, said so
    (intake, which sees only the selected ids, can only say it holds no problem directory)."""
    if line.endswith(_HOLDS_NONE):
        where = line[:-len(_HOLDS_NONE)]
        name = where.rsplit("/", 1)[-1]
        if name in excluded:
            return f"{where}/: problem {name}, excluded by the selection: not checked"
    return line


def check_submission(path: Path, catalog: Catalog, limits: IntakeLimits = DEFAULT_LIMITS,
                     excluded: frozenset[str] = frozenset()) -> SubmissionCheck:
    """Intake `path` against the problems of `catalog`; UsageError for an unusable path.
    ``excluded``: the benchmark's problems the selection left out of ``catalog``."""
    intake = read_submission(path, frozenset(catalog.problems), limits,
                             {pid: ws.starter for pid, ws in catalog.problems.items()})
    intake = intake.model_copy(update={"ignored": tuple(
        _said_excluded(line, excluded) for line in intake.ignored)})
    problems = tuple(_problem(e, catalog.problems[e.problem_id], path) for e in intake.problems)
    ok = (intake.rejection is None and bool(intake.named)
          and all(p.rejection is None and p.fault is None for p in problems))
    return SubmissionCheck(submission_id=intake.submission_id, source=intake.source,
                           digest=intake.digest, ok=ok, problems=problems,
                           ignored=intake.ignored, rejection=intake.rejection,
                           rejection_code=intake.rejection_code, named=intake.named,
                           hint=intake.hint, hidden=intake.hidden)
