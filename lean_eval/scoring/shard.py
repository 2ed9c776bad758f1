"""Deterministic shards of a batch: N machines split one batch with no coordination.

Invariants (design §5.5 "Shards"):
- A pair's shard depends only on its (submission id, problem id) and N: never on input order, on
  the other pairs, on the machine or on the interpreter (SHA-256, not Python's salted ``hash``).
- For any N the shards 1..N are disjoint and together cover every pair.
- ``batch_digest`` names the batch's pair set whatever the order and sharding, so ``merge``
  can tell shards of one batch from another's.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple, TypeVar

from lean_eval.errors import UsageError

Pair = tuple[str, str]  # (submission id, problem id)
P = TypeVar("P", bound=Pair)

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


class Shard(NamedTuple):
    """Shard ``k`` of ``n``, 1-based (``1/2`` and ``2/2`` split a batch in two)."""

    k: int
    n: int

    def __str__(self) -> str:
        return f"{self.k}/{self.n}"


def parse_shard(text: str) -> Shard:
    """``"K/N"`` with 1 <= K <= N, else a ``UsageError`` saying what is wrong."""
    match = _SHARD.fullmatch(text)
    if match is None:
        raise UsageError(f"--shard {text!r}: expected K/N, for example 1/4 (K counts from 1)")
    k, n = int(match.group(1)), int(match.group(2))
    if n < 1:
        raise UsageError(f"--shard {text!r}: N must be at least 1")
    if not 1 <= k <= n:
        raise UsageError(f"--shard {text!r}: K must be between 1 and N={n} (K counts from 1)")
    return Shard(k, n)


def _key(submission_id: str, problem_id: str) -> bytes:
    # JSON keeps the two ids apart whatever characters they hold ("a/b","c" vs "a","b/c").
    return json.dumps([submission_id, problem_id], ensure_ascii=False).encode("utf-8")


def shard_of(submission_id: str, problem_id: str, n: int) -> int:
    """The 1-based shard (1..n) that scores this pair."""
    if n < 1:
        raise ValueError(f"shard count must be at least 1, not {n}")
    digest = hashlib.sha256(_key(submission_id, problem_id)).digest()
    return int.from_bytes(digest[:8], "big") % n + 1


def in_shard(submission_id: str, problem_id: str, shard: Shard | None) -> bool:
    return shard is None or shard_of(submission_id, problem_id, shard.n) == shard.k


def select(pairs: Iterable[P], k: int, n: int) -> list[P]:
    """The pairs of shard ``k`` of ``n``, in their input order."""
    shard = Shard(k, n)
    if not 1 <= k <= n:
        raise ValueError(f"shard {shard} out of range")
    return [p for p in pairs if shard_of(p[0], p[1], n) == k]


def options_digest(options: Mapping[str, object]) -> str:
    """SHA-256 (hex) of the options that can change a verdict, as canonical JSON."""
    payload = json.dumps(options, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                         default=str)
    return hashlib.sha256(payload.encode("ascii")).hexdigest()


def batch_digest(pairs: Iterable[Pair]) -> str:
    """SHA-256 (hex) of the batch's sorted, de-duplicated (submission id, problem id) list."""
    ordered: Sequence[Pair] = sorted({(s, p) for s, p in pairs})
    payload = json.dumps([list(p) for p in ordered], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def batch_map(pairs: Iterable[Pair]) -> dict[str, tuple[str, ...]]:
    """Each submission's problems, in input order: how a shard's summary records its batch, so
    a merge missing a shard can name that shard's pairs."""
    found: dict[str, list[str]] = {}
    for sid, problem_id in pairs:
        problems = found.setdefault(sid, [])
        if problem_id not in problems:
            problems.append(problem_id)
    return {sid: tuple(problems) for sid, problems in found.items()}


def batch_pairs(batch: Mapping[str, Sequence[str]]) -> list[Pair]:
    return [(sid, problem_id) for sid, problems in batch.items() for problem_id in problems]
