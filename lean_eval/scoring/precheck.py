"""validate-submission: what run-eval would do with a submission, decided without Lean.

The same intake as ``run-eval`` (every limit, the header check) and the same
``pair.is_unchanged``; no toolchain, sandbox or probe. Two mistakes the comparator would
reject are also visible without Lean and warned of: a hole's statement that differs from the
starter's (``statement_mismatch``), and an import of the problem's challenge or solution module
(the build fails: Solution imports the submission).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from lean_eval.benchmark.catalog import Catalog, ProblemWorkspace
from lean_eval.benchmark.upstream import SOURCE_ONLY_FILES
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


def _problem(entry: ProblemEntry, problem: ProblemWorkspace) -> ProblemCheck:
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
                        warnings=warnings(entry, problem) if outcome == "scored" else ())


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
    problems = tuple(_problem(e, catalog.problems[e.problem_id]) for e in intake.problems)
    ok = (intake.rejection is None and bool(intake.named)
          and all(p.rejection is None and p.fault is None for p in problems))
    return SubmissionCheck(submission_id=intake.submission_id, source=intake.source,
                           digest=intake.digest, ok=ok, problems=problems,
                           ignored=intake.ignored, rejection=intake.rejection,
                           rejection_code=intake.rejection_code, named=intake.named,
                           hint=intake.hint, hidden=intake.hidden)
