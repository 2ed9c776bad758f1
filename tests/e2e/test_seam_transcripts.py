"""The stored transcripts still say what the stand-in does: every case recorded afresh under
real bubblewrap gets the stored verdict, execution, reason and phase lines (the other seam tests
trust them; re-record with tests/transcripts/record.py when this fails)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_runner import PROBLEM, load_transcripts
from transcripts import record

from lean_eval.sandbox import bubblewrap


@pytest.mark.slow
@pytest.mark.sandbox
def test_the_stored_transcripts_match_a_fresh_recording(bwrap: str, tmp_path: Path) -> None:
    catalog = record.bench(tmp_path / "bench")
    info = bubblewrap.resolve_bwrap(bwrap, {}, (), record.BWRAP_FLOOR)
    fresh = record.record_all(catalog, info, tmp_path)
    assert record.drift(fresh, load_transcripts(), catalog.problems[PROBLEM].config) == []
