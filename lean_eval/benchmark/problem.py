"""One problem as the benchmark states it: its manifest (``problems/<id>.toml``, design §4.1)
and its comparator configuration (``config.json``, design §4.2), as frozen models.

Both are typed strictly: an unknown key, a wrong type or a missing field is a fault, never a
default. ``config.json`` is decoded as strict JSON first (duplicate keys and non-finite numbers
refused), and a hole mismatch between the two (``hole_differences``) is a catalog fault.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator

from lean_eval.errors import TrustedConfigError
from lean_eval.files.decoding import strict_json
from lean_eval.records.base import Record
from lean_eval.records.ids import PROBLEM_ID


class Hole(Record):
    """One hole of a problem: a declaration the submission must supply."""

    model_config = ConfigDict(strict=True)
    name: str
    kind: Literal["theorem", "def", "instance"]


class StatusChange(Record):
    """A ``[[status_history]]`` row of a manifest: descriptive, kept and shown, never scored."""

    model_config = ConfigDict(strict=True)
    status: str
    effective_date: str
    reason: str


class RevisionChange(Record):
    """A ``[[revision_history]]`` row of a manifest: descriptive, kept and shown, never scored."""

    model_config = ConfigDict(strict=True)
    revision: int = Field(ge=1)
    effective_date: str
    reason: str
    statement_digest: str | None = None


class Problem(Record):
    """A problem manifest (design §4.1); the keys after ``source`` are descriptive, never scored."""

    model_config = ConfigDict(strict=True)
    id: str = Field(pattern=PROBLEM_ID.pattern)
    title: str
    status: str
    visible: bool
    statement_revision: int = Field(ge=1)
    tags: tuple[str, ...]
    holes: tuple[Hole, ...] = Field(min_length=1)
    submitter: str
    notes: str | None = None
    source: str | None = None
    group: str | None = None
    module: str | None = None  # the source catalog's Lean module the statement comes from
    informal_solution: str | None = None
    test: bool | None = None  # the source catalog's marker of a test-only problem
    status_history: tuple[StatusChange, ...] = ()
    revision_history: tuple[RevisionChange, ...] = ()

    @field_validator("tags", "holes", "status_history", "revision_history", mode="before")
    @classmethod
    def _lists_are_tuples(cls, value: Any) -> Any:
        return tuple(value) if isinstance(value, list) else value


def manifest_errors(exc: ValidationError) -> list[str]:
    """Every fault of a manifest pydantic found (every unknown key among them), one line each."""
    return [f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}"
            for err in exc.errors()]


class ComparatorConfig(Record):
    """A trusted ``config.json`` (design §4.2), typed exactly as ``lake comparator`` reads it."""

    model_config = ConfigDict(strict=True)
    challenge_module: str
    solution_module: str
    theorem_names: tuple[str, ...]
    definition_names: tuple[str, ...] | None = None
    permitted_axioms: tuple[str, ...]
    enable_nanoda: bool | None = None
    external_kernels: dict[str, tuple[str, ...]] | None = None

    @field_validator(
        "theorem_names", "definition_names", "permitted_axioms", mode="before"
    )
    @classmethod
    def _arrays(cls, value: Any) -> Any:
        return tuple(value) if isinstance(value, list) else value

    @field_validator("external_kernels", mode="before")
    @classmethod
    def _kernel_argvs(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: tuple(v) if isinstance(v, list) else v for k, v in value.items()}
        return value


def parse_config(data: bytes, what: str) -> ComparatorConfig:
    """Strictly decode and type ``config.json``; TrustedConfigError names the first fault."""
    value = strict_json(data, what)
    try:
        return ComparatorConfig.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise TrustedConfigError(f"{what}: {loc}: {first['msg']}") from exc


STANDARD_AXIOMS = ("propext", "Quot.sound", "Classical.choice")


def axiom_faults(config: ComparatorConfig) -> list[str]:
    """One message per ``permitted_axioms`` entry beyond Lean's three standard axioms: any other
    (``sorryAx`` above all) would let a proof that assumes it be accepted (SECURITY.md)."""
    return [f"permitted_axioms includes {axiom!r}, beyond the standard "
            f"{', '.join(STANDARD_AXIOMS)}: a proof using it would be accepted"
            for axiom in config.permitted_axioms if axiom not in STANDARD_AXIOMS]


def hole_differences(problem: Problem, config: ComparatorConfig) -> list[str]:
    """How the manifest's holes and config.json's names disagree (by kind)."""
    theorems = {h.name for h in problem.holes if h.kind == "theorem"}
    others = {h.name for h in problem.holes if h.kind != "theorem"}
    found: list[str] = []
    if set(config.theorem_names) != theorems:
        found.append(f"theorem_names {sorted(config.theorem_names)} differ from the manifest's "
                     f"theorem holes {sorted(theorems)}")
    if set(config.definition_names or ()) != others:
        found.append(f"definition_names {sorted(config.definition_names or ())} differ from "
                     f"the manifest's def/instance holes {sorted(others)}")
    return found
