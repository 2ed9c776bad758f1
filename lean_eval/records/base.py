"""The one base of every pydantic model in lean-eval."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """A record is a value: frozen once built, and a document with a key its model does not
    declare is refused rather than silently dropped."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class OpenRecord(Record):
    """A frozen record that keeps keys its model does not declare: for a document another party
    may grow compatibly (the public results store's ``production_metadata``) or one that carries
    another record's keys beside its own (``run-eval --json``)."""

    model_config = ConfigDict(frozen=True, extra="allow")
