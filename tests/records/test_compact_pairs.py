"""Fork-shaped batches (design §5.5 "Unchanged pairs", §4.4) list their unchanged pairs by id
per submission in summary.json: the compact lists round-trip to every pair in input order.
The batches themselves are in tests/e2e/test_forks.py.
"""

from __future__ import annotations

from support import (
    make_verdict,
    pair_line,
)

from lean_eval.records.verdict import Summary


def test_compact_unchanged_lists_round_trip_in_input_order() -> None:
    """``compact_pairs`` then ``every_pair`` gives back every recorded pair, in input order;
    only a pair that is exactly the canonical unchanged line is listed by id."""
    from lean_eval.records.verdict import (
        PairSummary,
        SubmissionSummary,
        compact_pairs,
        unchanged_pair,
    )

    def scored(sid: str, pid: str) -> PairSummary:
        return pair_line(make_verdict(sid, pid))

    odd = unchanged_pair("b", "p2").model_copy(update={"reason": "something_else"})
    recorded = (unchanged_pair("a", "p1"), scored("a", "p2"), unchanged_pair("a", "p3"),
                odd, unchanged_pair("b", "p3"))
    kept, unchanged = compact_pairs(recorded)
    assert kept == (scored("a", "p2"), odd)  # a non-canonical unchanged line stays a pair
    assert unchanged == {"a": ("p1", "p3"), "b": ("p3",)}
    subs = tuple(SubmissionSummary(id=sid, source=f"/in/{sid}", digest="d" * 64,
                                   problems=("p1", "p2", "p3") if sid == "a" else ("p2", "p3"),
                                   unchanged=unchanged[sid]) for sid in ("a", "b"))
    summary = Summary.model_construct(submissions=subs, pairs=kept)  # every_pair reads these
    assert summary.every_pair() == recorded
