"""The leaderboard results store (schema version 2) and the ``--metadata`` input (design §5.5
"Publishing"): one file per submitter, ``<lowercased user>.json``. Every model is strict (no
coercion: ``"1"`` is not a revision, ``1`` is not a bool), so an entry that validates has
exactly the documented shape.

Invariant: a store file validates here exactly when the public store's own validator accepts
it (tests/outputs/test_results_store_rules.py cites each case): logins of alphanumerics and
inner hyphens of any count, owners with ``_`` and ``.``, any non-empty problem id (the store
outlives catalog id rules), real UTC timestamps, real dates, and ``production_metadata`` that
keeps keys it does not know (the public schema lets it grow compatibly)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from lean_eval.records.base import OpenRecord, Record

STORE_SCHEMA_VERSION = 2
DESCRIPTION_MAX = 4000
# A login as the public store accepts it: alphanumerics, hyphens inside (no length limit).
LOGIN = r"^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?$"
OWNER_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9._-]+$"
COMMIT = r"^[0-9a-f]{40}$"
UUID_V7 = r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"
UTC_SECONDS = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"


class IssueIntake(Record):
    """The result came in through a GitHub issue."""

    model_config = ConfigDict(strict=True)
    kind: Literal["issue"]
    issue_number: int = Field(ge=1)


class ServerIntake(Record):
    """The result came in through the submission server."""

    model_config = ConfigDict(strict=True)
    kind: Literal["server"]
    submission_id: str = Field(pattern=UUID_V7)


Intake = Annotated[IssueIntake | ServerIntake, Field(discriminator="kind")]


class SubmissionSource(Record):
    """Where the scored source lives: a repository or gist at an exact commit."""

    model_config = ConfigDict(strict=True)
    kind: Literal["github_repo", "gist"]
    repo: str = Field(pattern=OWNER_NAME)
    ref: str = Field(pattern=COMMIT)
    public: bool


class ProductionMetadata(OpenRecord):
    """How the solution was produced and whether its source is (or will be) published; keys
    beyond these are kept as they are (the public schema lets this object grow)."""

    model_config = ConfigDict(strict=True)
    production_description: str | None = None
    solution_publication_status: Literal["private", "planned", "published"] | None = None
    solution_publication_date: str | None = None

    @field_validator("production_description")
    @classmethod
    def _description(cls, value: str | None) -> str | None:
        if value is not None:
            if not value.strip():
                raise ValueError("must not be blank")
            if "\0" in value:
                raise ValueError("must not contain NUL")
            if len(value) > DESCRIPTION_MAX:
                raise ValueError(f"is {len(value)} characters, more than {DESCRIPTION_MAX}")
        return value

    @field_validator("solution_publication_date")
    @classmethod
    def _iso_date(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                date.fromisoformat(value)
            except ValueError:
                raise ValueError(f"{value!r} is not an ISO date (YYYY-MM-DD)") from None
        return value

    @model_validator(mode="after")
    def _date_exactly_when_planned_or_published(self) -> ProductionMetadata:
        dated = self.solution_publication_status in ("planned", "published")
        if dated and self.solution_publication_date is None:
            raise ValueError("solution_publication_date is required when "
                             f"solution_publication_status is {self.solution_publication_status}")
        if not dated and self.solution_publication_date is not None:
            raise ValueError("solution_publication_date is allowed only when "
                             "solution_publication_status is planned or published")
        return self

    def check_public(self, public: bool) -> None:
        """``published`` exactly when the submission is public; ValueError otherwise."""
        status = self.solution_publication_status
        if status is not None and (status == "published") != public:
            raise ValueError(f"solution_publication_status {status} contradicts "
                             f"submission.public {str(public).lower()}")


def _check_public(production: ProductionMetadata, submission: SubmissionSource) -> None:
    production.check_public(submission.public)


class Result(Record):
    """One accepted (user, model, problem, revision): the unit a leaderboard counts."""

    model_config = ConfigDict(strict=True)
    result_id: str = Field(pattern=r"^r2_[0-9a-f]{64}$")
    problem_id: str = Field(min_length=1)
    statement_revision: int = Field(ge=1)
    declared_model: str = Field(min_length=1)
    accepted_at: str = Field(pattern=UTC_SECONDS)

    @field_validator("accepted_at")
    @classmethod
    def _real_time(cls, value: str) -> str:
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{value!r} is not a real UTC time") from None
        return value
    benchmark_commit: str = Field(pattern=COMMIT)
    intake: Intake
    submission: SubmissionSource
    production_metadata: ProductionMetadata

    @model_validator(mode="after")
    def _consistent(self) -> Result:
        _check_public(self.production_metadata, self.submission)
        return self


class UserFile(Record):
    """``<lowercased user>.json``: every result of one submitter, oldest first."""

    model_config = ConfigDict(strict=True)
    schema_version: Literal[2]
    user: str = Field(pattern=LOGIN)
    results: tuple[Result, ...]

    @field_validator("results", mode="before")
    @classmethod
    def _list(cls, value: Any) -> Any:
        return tuple(value) if isinstance(value, list) else value


class MetadataEntry(Record):
    """What ``--metadata`` says about one submission id: who, which model, where from."""

    model_config = ConfigDict(strict=True)
    user: str = Field(pattern=LOGIN)
    declared_model: str = Field(min_length=1)
    intake: Intake
    submission: SubmissionSource
    production_metadata: ProductionMetadata = ProductionMetadata()

    @model_validator(mode="after")
    def _consistent(self) -> MetadataEntry:
        _check_public(self.production_metadata, self.submission)
        return self


class PipelineMetadata(Record):
    """The public submission pipeline's own ``metadata.json`` for one submission, as its intake
    freezes it: the issue form (``issue_number``), or the server form (``schema_version`` 2,
    ``submission_id`` and the one problem and statement revision the intake accepted).
    ``export-results --metadata-format pipeline`` maps it onto a :class:`MetadataEntry`
    (``outputs.pipeline_metadata``); the field values are checked there, as ours are."""

    model_config = ConfigDict(strict=True)
    schema_version: Literal[2] | None = None
    source_url: str | None = None
    submission_kind: Literal["github_repo", "gist"]
    submission_repo: str
    submission_ref: str
    submission_public: bool
    model: str
    submitted_by: str
    issue_number: int | None = None
    submission_id: str | None = None
    problem_id: str | None = None
    problem_group: str | None = None
    statement_revision: int | None = Field(default=None, ge=1)
    publication_choice: Literal["scheduled", "withheld"] | None = None
    production_metadata: dict[str, Any] | None = None
    production_description: str | None = None
    solution_publication_status: Literal["private", "planned", "published"] | None = None
    solution_publication_date: str | None = None

    @model_validator(mode="after")
    def _one_intake(self) -> PipelineMetadata:
        if (self.issue_number is None) == (self.submission_id is None):
            raise ValueError("exactly one of issue_number (issue intake) and submission_id "
                             "(server intake) is required")
        if (self.problem_id is None) != (self.statement_revision is None):
            raise ValueError("problem_id and statement_revision come together (the server "
                             "intake's one problem and revision)")
        return self
