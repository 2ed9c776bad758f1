"""Path containment (lean_eval/files/paths.py): the one definition the overlap refusals use."""

from __future__ import annotations

import posixpath
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from lean_eval.files.paths import inside, overlap, resolved_inside, resolved_overlap

_PART = st.sampled_from(["a", "ab", "b", "a.b", "x"])
_BASE = "/.lean-eval-no-such-dir"  # nothing there to resolve: the strings are compared as given
_PATH = st.lists(_PART, min_size=0, max_size=4).map(lambda parts: "/".join([_BASE, *parts]))


@given(_PATH, _PATH)
def test_inside_is_component_wise(inner: str, outer: str) -> None:
    expected = inner == outer or inner.startswith(outer + "/")
    assert inside(inner, outer) == expected
    assert overlap(inner, outer) == (expected or inside(outer, inner))
    assert inside(inner, posixpath.dirname(inner)) and inside(inner, "/")
    assert resolved_inside(inner, outer) == expected  # what callers that resolve once compare
    assert resolved_overlap(inner, outer) == overlap(inner, outer)


def test_examples_and_symlinks(tmp_path: Path) -> None:
    assert inside("/a/b", "/a") and not inside("/ab", "/a") and inside("/a", "/a")
    assert inside("/anything/at/all", "/")  # a writable root of / holds every tool
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert inside(tmp_path / "link" / "x", tmp_path / "real")  # resolved before comparing
    assert overlap(tmp_path / "real", tmp_path / "link")
    assert not overlap(tmp_path / "real", tmp_path / "other")
