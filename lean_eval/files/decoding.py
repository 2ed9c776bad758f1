"""Strict decoding of the JSON and TOML the harness trusts (the benchmark's files, its own
documents): a document two readers could read differently is refused, never used."""

from __future__ import annotations

import json
import sys
from typing import Any

from lean_eval.errors import CatalogError, LeanEvalError, TrustedConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name} is not allowed")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"duplicate key {key!r}")
        seen[key] = value
    return seen


def strict_json(data: bytes, what: str) -> Any:
    """Decode JSON, refusing duplicate keys, NaN/Infinity and non-UTF-8 (TrustedConfigError
    naming ``what``)."""
    try:
        return json.loads(
            data.decode("utf-8"),
            object_pairs_hook=_no_duplicates,
            parse_constant=_reject_constant,
        )
    except (UnicodeDecodeError, ValueError) as exc:
        raise TrustedConfigError(f"{what}: {exc}") from exc


def toml_table(data: bytes, what: str,
               error: type[LeanEvalError] = CatalogError) -> dict[str, Any]:
    """The top-level table of a UTF-8 TOML document; else ``error`` naming ``what``."""
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise error(f"{what}: {exc}") from exc
