"""Choose the problems a command works on (``--problem``, ``--set``, ``--status``, ``--tag``,
given together they intersect) and list them (``lean-eval list-problems``). A selection narrows
a loaded catalog; it never changes what a problem is.
"""

from __future__ import annotations

from lean_eval.benchmark.catalog import Catalog
from lean_eval.benchmark.sets import Described, Selection, memberships, select
from lean_eval.benchmark.suggestions import guesses, known_values
from lean_eval.errors import UsageError
from lean_eval.records.documents import ListedHole, ListedProblem, ProblemList


def select_catalog(cat: Catalog, selection: Selection,
                   only: frozenset[str] | None = None) -> Catalog:
    """``cat`` (loaded whole) with only the problems ``selection`` picks, intersected with
    ``only`` (``--problem``) when given; UsageError when that leaves none."""
    if only is not None:
        unknown = sorted(only - set(cat.problems))
        if unknown:
            raise UsageError(f"unknown problem id(s): {guesses(unknown, cat.problems)}; the "
                             f"benchmark has {known_values(cat.problems)}")
    if selection.is_everything and only is None:
        return cat
    described = {pid: Described(status=ws.problem.status, tags=ws.problem.tags,
                                statement_revision=ws.problem.statement_revision)
                 for pid, ws in cat.problems.items()}
    chosen = select(selection, described, cat.sets) & (only if only is not None
                                                         else frozenset(cat.problems))
    if not chosen:
        statuses = {d.status for d in described.values()}
        tags = {t for d in described.values() for t in d.tags}
        raise UsageError("no problem matches the selection ("
                         + ", ".join(part for part in (
                             f"set {selection.set_name}" if selection.set_name else "",
                             f"status {'/'.join(selection.statuses)}" if selection.statuses
                             else "",
                             f"tag {'/'.join(selection.tags)}" if selection.tags else "")
                                     if part) + ")"
                         + "".join(f"; {flag} {guesses(unknown, known)} matches no problem: "
                                   f"the benchmark's are {known_values(known)}"
                                   for flag, asked, known in (("--status", selection.statuses,
                                                               statuses),
                                                              ("--tag", selection.tags, tags))
                                   if (unknown := sorted(set(asked) - known))))
    return cat.model_copy(update={"problems": {pid: ws for pid, ws in cat.problems.items()
                                               if pid in chosen}})


def problem_list(cat: Catalog) -> ProblemList:
    """The problems of ``cat`` (already selected), sorted by id."""
    member_of = memberships(cat.sets)
    return ProblemList(benchmark=str(cat.root), sets=tuple(sorted(cat.sets)), problems=tuple(
        ListedProblem(id=pid, title=p.title, status=p.status, visible=p.visible,
                      statement_revision=p.statement_revision,
                      holes=tuple(ListedHole(name=h.name, kind=h.kind) for h in p.holes),
                      sets=member_of.get(pid, ()), tags=p.tags, group=p.group, module=p.module)
        for pid, p in ((pid, cat.problems[pid].problem) for pid in sorted(cat.problems))))
