"""Shards: disjoint, covering, independent of input order and of the other pairs; K/N parsing."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import examples

from lean_eval.errors import UsageError
from lean_eval.scoring import shard

ids = st.text(min_size=1, max_size=12)
pair_lists = st.lists(st.tuples(ids, ids), unique=True, max_size=40)


@settings(max_examples=examples(200), deadline=None)
@given(pairs=pair_lists, n=st.integers(min_value=1, max_value=12))
def test_shards_are_disjoint_and_cover_every_pair(pairs: list[tuple[str, str]], n: int) -> None:
    chosen = [shard.select(pairs, k, n) for k in range(1, n + 1)]
    flat = [p for part in chosen for p in part]
    assert sorted(flat) == sorted(pairs)
    assert len(flat) == len(set(flat))


@settings(max_examples=examples(200), deadline=None)
@given(pairs=pair_lists, others=pair_lists, n=st.integers(min_value=1, max_value=12),
       rnd=st.randoms(use_true_random=False))
def test_assignment_ignores_order_and_other_pairs(pairs: list[tuple[str, str]],
                                                  others: list[tuple[str, str]], n: int,
                                                  rnd: random.Random) -> None:
    shuffled = list(pairs) + [p for p in others if p not in pairs]
    rnd.shuffle(shuffled)
    for k in range(1, n + 1):
        alone = set(shard.select(pairs, k, n))
        mixed = set(shard.select(shuffled, k, n)) & set(pairs)
        assert alone == mixed


@settings(deadline=None)
@given(pairs=pair_lists, rnd=st.randoms(use_true_random=False))
def test_select_keeps_input_order(pairs: list[tuple[str, str]], rnd: random.Random) -> None:
    rnd.shuffle(pairs)
    picked = shard.select(pairs, 1, 3)
    assert picked == [p for p in pairs if p in set(picked)]


@settings(deadline=None)
@given(pairs=pair_lists, rnd=st.randoms(use_true_random=False))
def test_batch_digest_ignores_order_and_duplicates(pairs: list[tuple[str, str]],
                                                   rnd: random.Random) -> None:
    shuffled = pairs + pairs[:3]
    rnd.shuffle(shuffled)
    assert shard.batch_digest(shuffled) == shard.batch_digest(pairs)


def test_batch_digest_tells_batches_apart() -> None:
    assert shard.batch_digest([("a/b", "c")]) != shard.batch_digest([("a", "b/c")])
    assert shard.batch_digest([("a", "b")]) != shard.batch_digest([("a", "b"), ("a", "c")])
    assert len(shard.batch_digest([])) == 64


def test_assignment_is_stable_across_releases() -> None:
    # Pinned values: changing the hash would split one batch differently on two versions.
    assert [shard.shard_of("alice", p, 4) for p in ("p1", "p2", "p3", "p4", "p5")] == \
        [2, 3, 1, 3, 4]
    assert shard.shard_of("alice", "two_plus_two", 1) == 1
    assert shard.shard_of("alice", "two_plus_two", 7) == 5
    assert shard.batch_digest([("a", "b")]) == \
        "db8992cf941b185a1c5bbcfbdc3f43204fe09d42b1a57ff584f6ad2e5e6dfdbd"


def test_spreads_pairs_over_shards() -> None:
    pairs = [(f"s{i}", f"p{j}") for i in range(50) for j in range(8)]
    sizes = [len(shard.select(pairs, k, 4)) for k in range(1, 5)]
    assert min(sizes) > 60  # 100 expected per shard


@pytest.mark.parametrize(("text", "expected"), [("1/2", (1, 2)), ("2/2", (2, 2)),
                                                ("1/1", (1, 1)), (" 3 / 10 ", (3, 10))])
def test_parse_shard(text: str, expected: tuple[int, int]) -> None:
    assert shard.parse_shard(text) == expected
    assert str(shard.parse_shard(text)) == f"{expected[0]}/{expected[1]}"


@pytest.mark.parametrize(("text", "says"), [("0/2", "K counts from 1"), ("3/2", "between 1"),
                                            ("1/0", "at least 1"), ("2", "expected K/N"),
                                            ("a/b", "expected K/N"), ("-1/2", "expected K/N"),
                                            ("", "expected K/N")])
def test_parse_shard_errors(text: str, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        shard.parse_shard(text)


def test_in_shard_without_shard_is_everything() -> None:
    assert shard.in_shard("a", "b", None)
    assert shard.in_shard("a", "b", shard.Shard(1, 1))


@settings(max_examples=examples(200), deadline=None)
@given(pairs=st.lists(st.tuples(ids, ids), max_size=40))
def test_the_recorded_batch_is_the_digested_pair_set(pairs: list[tuple[str, str]]) -> None:
    batch = shard.batch_map(pairs)
    assert shard.batch_digest(shard.batch_pairs(batch)) == shard.batch_digest(pairs)
    assert list(batch) == list(dict.fromkeys(s for s, _ in pairs))  # input order kept
    assert sorted(shard.batch_pairs(batch)) == sorted(set(pairs))
