"""The one base of every pydantic model in lean-eval."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """A record is a value: frozen once built, and a document with a key its model does not
    declare is refused rather than silently dropped."""

    model_config = ConfigDict(frozen=True, extra="forbid")
