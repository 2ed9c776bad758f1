"""A shard's output as merge reads it, and whether shards may merge (design §5.5): the same
batch and shard count, identity, options, probe policy and signing key, each a shard of
``run-eval --shard K/N``, no directory given twice; else a refusal naming them."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from lean_eval.errors import MergeRefusedError, UsageError
from lean_eval.outputs import outdir
from lean_eval.records.verdict import Summary

# What must be equal across shards for their verdicts to mean the same thing. Paths (benchmark,
# toolchain, bubblewrap) legitimately differ between machines and are not compared.
_IDENTITY_FIELDS = ("harness_version", "benchmark_commit", "toolchain_name", "bwrap_sha256",
                    "bwrap_version", "bwrap_minimum_version")


class ShardOutput(NamedTuple):

    path: Path
    summary: Summary


def load_shard(path: Path) -> ShardOutput:
    """``path/summary.json``, checked; else a refusal naming ``path``."""
    try:  # the one reader of summary.json (report and verify read it so too)
        summary = outdir.read_summary(path)
    except UsageError as exc:  # none to read; a breach stays OutputRefusedError, as before
        raise MergeRefusedError(str(exc)) from exc
    return ShardOutput(path, summary)


def shard_key(s: Summary) -> tuple[int, str | None]:
    return (s.shard.n, s.shard.batch_digest) if s.shard else (1, None)


def _describe(group: Sequence[ShardOutput], fields: Sequence[str], source: Any) -> str:
    values = ", ".join(f"{f}={getattr(source, f, None)!r}" for f in fields)
    return f"{', '.join(str(out.path) for out in group)} ({values})"


def _refuse_if_differ(outputs: Sequence[ShardOutput], what: str, fields: Sequence[str],
                      pick: Any) -> None:
    groups: dict[str, list[ShardOutput]] = {}
    for out in outputs:
        source = pick(out.summary)
        key = repr([getattr(source, f, None) for f in fields])
        groups.setdefault(key, []).append(out)
    if len(groups) > 1:
        detail = "; ".join(_describe(group, fields, pick(group[0].summary))
                           for group in groups.values())
        raise MergeRefusedError(f"shards differ in {what}, refusing to merge: {detail}")


def check_compatible(outputs: Sequence[ShardOutput]) -> None:
    """Refuse shards that may not merge (module docstring)."""
    seen: dict[str, Path] = {}
    for out in outputs:
        real = os.path.realpath(out.path)
        if real in seen:
            raise MergeRefusedError(f"{seen[real]} and {out.path} are the same directory")
        seen[real] = out.path
    _refuse_if_differ(outputs, "identity", _IDENTITY_FIELDS, lambda s: s.identity)
    plain = [str(out.path) for out in outputs if out.summary.shard is None]
    if plain and len(plain) < len(outputs):
        raise MergeRefusedError(f"{', '.join(plain)}: not a shard (that run was made without "
                                "--shard K/N), refusing to merge it with shards; merge only "
                                "the outputs of one batch's `run-eval --shard K/N` runs")
    _refuse_if_differ(outputs, "options", ("options_digest",), lambda s: s.shard)
    _refuse_if_differ(outputs, "probe policy", ("skipped",), lambda s: s.preflight)
    _refuse_if_differ(outputs, "signing key", ("signing_key",), lambda s: s)
    _refuse_if_differ(outputs, "batch (problem selection)", ("problems",), lambda s: s)
    groups: dict[tuple[int, str | None], list[Path]] = {}
    for out in outputs:
        groups.setdefault(shard_key(out.summary), []).append(out.path)
    if len(groups) > 1:
        detail = "; ".join(f"{', '.join(map(str, paths))} (shard count {n}, batch digest "
                           f"{digest or 'none: not a --shard run'})"
                           for (n, digest), paths in groups.items())
        raise MergeRefusedError(f"shards come from different batches or shard counts, "
                                f"refusing to merge: {detail}")
