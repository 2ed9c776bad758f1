"""Named problem sets (``sets/<name>.toml``, design §4.1) and the selection of problems.

A frozen set is a published benchmark: a member whose statement revision differs from the
catalog's is refused, naming it (``set_faults``), so it is scored as published or not at all.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ConfigDict, Field, ValidationError, field_validator

from lean_eval.errors import CatalogError, UsageError
from lean_eval.files.decoding import toml_table
from lean_eval.records.base import Record

SET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
SETS_DIR = "sets"


class SetMember(Record):
    """One member of a set: a problem at one statement revision."""

    model_config = ConfigDict(strict=True)
    problem_id: str
    statement_revision: int = Field(ge=1)


class SetAmendment(Record):
    """A dated addition to a published set (the lean-eval catalog's schema 2)."""

    model_config = ConfigDict(strict=True)
    id: str
    effective_date: str
    reason: str
    authorization: str
    evidence: str | None = None  # a path in the source catalog (an audit record)
    additions: tuple[SetMember, ...]

    @field_validator("additions", mode="before")
    @classmethod
    def _tuples(cls, value: Any) -> Any:
        return tuple(value) if isinstance(value, list) else value


class ProblemSet(Record):
    """``sets/<name>.toml``."""

    model_config = ConfigDict(strict=True)
    schema_version: int | None = None
    id: str
    title: str
    frozen: bool
    published_at: str | None = None
    initial_member_count: int | None = None
    members: tuple[SetMember, ...]
    amendments: tuple[SetAmendment, ...] = ()

    @field_validator("members", "amendments", mode="before")
    @classmethod
    def _tuples(cls, value: Any) -> Any:
        return tuple(value) if isinstance(value, list) else value


def set_files(files: Mapping[str, bytes]) -> dict[str, str]:
    """Set name -> path, for every ``sets/<name>.toml`` of a benchmark's files."""
    return {path.removeprefix(f"{SETS_DIR}/").removesuffix(".toml"): path
            for path in sorted(files)
            if path.startswith(f"{SETS_DIR}/") and path.endswith(".toml")
            and path.count("/") == 1}


def parse_set(data: bytes, path: str) -> ProblemSet:
    """Decode and type-check one set file; every fault in one message."""
    try:
        problem_set = ProblemSet.model_validate(toml_table(data, path))
    except ValidationError as exc:
        faults = [f"{'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}"
                  for e in exc.errors()]
        raise CatalogError(f"{path}: " + "; ".join(faults)) from exc
    name = path.removeprefix(f"{SETS_DIR}/").removesuffix(".toml")
    if not SET_NAME.match(name):
        raise CatalogError(f"{path}: invalid set name {name!r}")
    if problem_set.id != name:
        raise CatalogError(f"{path}: id {problem_set.id!r} differs from the file name")
    return problem_set


def load_sets(files: Mapping[str, bytes]) -> dict[str, ProblemSet]:
    return {name: parse_set(files[path], path) for name, path in set_files(files).items()}


def set_faults(problem_set: ProblemSet, revisions: Mapping[str, int]) -> list[str]:
    """How a set disagrees with the catalog's statement revisions, one line per member."""
    faults: list[str] = []
    for member in problem_set.members:
        current = revisions.get(member.problem_id)
        if current is None:
            faults.append(f"member {member.problem_id!r} is not a problem of the catalog")
        elif problem_set.frozen and current != member.statement_revision:
            faults.append(f"frozen set member {member.problem_id!r} is at statement revision "
                          f"{member.statement_revision}, the catalog's is {current}")
    return faults


class Selection(Record):
    """Which problems a command works on: all, or those in a set / with a status / a tag."""

    set_name: str | None = None
    statuses: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()

    @property
    def is_everything(self) -> bool:
        return self.set_name is None and not self.statuses and not self.tags


class Described(Record):
    """What selection reads of a problem."""

    status: str
    tags: tuple[str, ...]
    statement_revision: int


def select(selection: Selection, problems: Mapping[str, Described],
           sets: Mapping[str, ProblemSet]) -> frozenset[str]:
    """The ids ``selection`` picks; UsageError for an unknown set, CatalogError for a frozen
    set that differs from the catalog."""
    chosen: Iterable[str] = problems
    if selection.set_name is not None:
        if selection.set_name not in sets:
            known = ", ".join(sorted(sets)) or "none"
            raise UsageError(f"unknown set {selection.set_name!r} (sets: {known})")
        problem_set = sets[selection.set_name]
        faults = set_faults(problem_set, {pid: p.statement_revision
                                          for pid, p in problems.items()})
        if faults:
            raise CatalogError(f"{SETS_DIR}/{selection.set_name}.toml: {faults[0]}")
        chosen = [m.problem_id for m in problem_set.members]
    if selection.statuses:
        chosen = [pid for pid in chosen if problems[pid].status in selection.statuses]
    if selection.tags:
        chosen = [pid for pid in chosen if set(problems[pid].tags) & set(selection.tags)]
    return frozenset(chosen)


def memberships(sets: Mapping[str, ProblemSet]) -> dict[str, tuple[str, ...]]:
    """Problem id -> the names of the sets it belongs to, sorted."""
    found: dict[str, list[str]] = {}
    for name in sorted(sets):
        for member in sets[name].members:
            found.setdefault(member.problem_id, []).append(name)
    return {pid: tuple(names) for pid, names in found.items()}
