"""Record versions: a version-1 verdict (no ``options``) and a version-2 summary (no
``not_reused``) are still read; a version-1 verdict is never resumed, since it does not say
under which settings it was given (design §5.5 "Resume")."""

from __future__ import annotations

import json
from pathlib import Path

from support import make_identity, make_summary, make_verdict, pair_line

from lean_eval.records.verdict import (
    SCHEMA_VERSION,
    SUMMARY_SCHEMA_VERSION,
    SubmissionSummary,
    Summary,
    Verdict,
)
from lean_eval.scoring import plan


def _v1(path: Path, key: str) -> Path:
    data = json.loads(make_verdict("alice", "two_plus_two", resume_key=key).model_dump_json())
    data["schema_version"] = 1
    del data["options"]
    path.write_text(json.dumps(data))
    return path


def test_a_version_1_verdict_is_read_but_never_resumed(tmp_path: Path) -> None:
    old = Verdict.model_validate_json(_v1(tmp_path / "v1.json", "k" * 64).read_bytes())
    assert old.schema_version == 1 and old.options is None
    assert plan._reusable(tmp_path / "v1.json", "k" * 64) is None
    current = make_verdict("alice", "two_plus_two", resume_key="k" * 64,
                           options={"timeout": 977.0})
    assert current.schema_version == SCHEMA_VERSION == 2
    (tmp_path / "v2.json").write_text(current.model_dump_json())
    assert plan._reusable(tmp_path / "v2.json", "k" * 64) == current


def test_a_version_2_summary_is_read() -> None:
    verdict = make_verdict("alice", "two_plus_two")
    summary = make_summary([pair_line(verdict)], [SubmissionSummary(
        id="alice", source="/in/alice", digest="d" * 64, problems=("two_plus_two",))],
        problems=("two_plus_two",), identity=make_identity())
    assert summary.schema_version == SUMMARY_SCHEMA_VERSION == 3
    data = json.loads(summary.model_dump_json())
    data["schema_version"] = 2
    del data["not_reused"]
    old = Summary.model_validate(data)
    assert old.schema_version == 2 and old.not_reused == ()
    assert old.every_pair() == summary.every_pair()
