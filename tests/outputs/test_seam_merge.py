"""Shards of one batch, scored with replayed transcripts (no bubblewrap), merged by
``lean-eval merge``: disjoint, covering, equal to the single run; partial, then whole."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_runner import FakeRunEval, FakeRunner
from support import correct, make_submission

from lean_eval.cli import main
from lean_eval.scoring import shard


def _batch(inputs: Path) -> list[Path]:
    """good: two correct proofs; bad: a changed statement; other: one correct proof."""
    def proof(problem: str, case: str) -> dict[str, str]:
        return {"Submission.lean": correct(problem) + f"\n-- transcript: {case}\n"}

    return [make_submission(inputs, "good", {"two_plus_two": proof("two_plus_two", "accepted"),
                                             "double_def": proof("double_def", "accepted")}),
            make_submission(inputs, "bad", {"two_plus_two": proof("two_plus_two",
                                                                  "rejected_statement")}),
            make_submission(inputs, "other", {
                "add_comm_explicit": proof("add_comm_explicit", "accepted")})]


def _merge(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["merge", *args], catch_exceptions=False)
    return result.exit_code, result.output


def test_run_eval_shards_are_disjoint_cover_and_merge_to_the_single_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_eval = FakeRunEval(FakeRunner(), tmp_path, monkeypatch)
    subs = _batch(tmp_path / "in")
    single = run_eval(*subs, out=tmp_path / "single")
    assert single.code in (0, 1), single.result.output
    parts = [run_eval(*subs, out=tmp_path / f"s{k}", extra=("--shard", f"{k}/2"))
             for k in (1, 2)]
    scored = [{(p["submission"], p["problem"]) for p in part.summary()["pairs"]}
              for part in parts]
    whole = [(p["submission"], p["problem"], p["verdict"]) for p in single.summary()["pairs"]]
    assert not scored[0] & scored[1]
    assert scored[0] | scored[1] == {(s, p) for s, p, _ in whole}
    assert all(part.summary()["shard"]["batch_digest"] == shard.batch_digest(
        (s, p) for s, p, _ in whole) for part in parts)
    code, output = _merge(str(parts[0].out), str(parts[1].out), "--out", str(tmp_path / "merged"))
    assert code == single.code, output
    merged = json.loads((tmp_path / "merged" / "summary.json").read_text())
    assert [(p["submission"], p["problem"], p["verdict"]) for p in merged["pairs"]] == whole
    assert merged["counts"] == single.summary()["counts"]
    assert ("good", "two_plus_two", "accepted") in whole
    assert ("bad", "two_plus_two", "rejected") in whole
    for sid, pid, _ in whole:
        assert (tmp_path / "merged" / sid / f"{pid}.json").is_file()
        # a verdict's log path names the log inside the merged output, not in a shard
        log = json.loads((tmp_path / "merged" / sid / f"{pid}.json").read_text())["log"]["path"]
        assert log is None or (not Path(log).is_absolute()
                               and (tmp_path / "merged" / log).is_file()), log
    # the same shards, one of them recorded by another harness version: refused, nothing written
    data = parts[1].summary()
    data["identity"]["harness_version"] = "9.9.9"
    (parts[1].out / "summary.json").write_text(json.dumps(data))
    code, output = _merge(str(parts[0].out), str(parts[1].out), "--out", str(tmp_path / "m2"))
    assert code == 2 and "harness_version" in output
    assert not (tmp_path / "m2").exists()


def test_run_eval_shards_merged_partially_then_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_eval = FakeRunEval(FakeRunner(), tmp_path, monkeypatch)
    inputs = tmp_path / "in"
    subs = _batch(inputs)
    pairs = [("good", "double_def"), ("good", "two_plus_two"), ("other", "add_comm_explicit"),
             ("bad", "two_plus_two")]
    lost = shard.select(pairs, 2, 3)
    assert lost and not shard.select(pairs, 1, 3)  # shard 1 scores nothing, shard 2 two pairs
    parts = {k: run_eval(*subs, out=tmp_path / f"s{k}", extra=("--shard", f"{k}/3"))
             for k in (1, 3)}
    for part in parts.values():
        assert part.code in (0, 1) and "Traceback" not in part.result.output, part.result.output
        assert (part.out / "summary.json").is_file()
    assert parts[3].verdict("good", "two_plus_two")["verdict"] == "accepted"
    code, output = _merge(str(parts[1].out), str(parts[3].out), "--out", str(tmp_path / "part"))
    assert code == 1 and "shard 2/3 is missing" in output, output
    merged = json.loads((tmp_path / "part" / "summary.json").read_text())
    order = [s.name for s in subs]
    assert [(p["submission"], p["problem"]) for p in merged["not_scored_pairs"]] == \
        sorted(lost, key=lambda p: order.index(p[0]))
    junit = CliRunner().invoke(main, ["report", str(tmp_path / "part"), "--format", "junit"],
                               catch_exceptions=False)
    root = ET.fromstring(junit.output.encode())  # noqa: S314 - our own output
    assert int(root.get("errors") or 0) == len(lost) + 1
    # the missing shard scored afterwards: the merge is whole
    parts[2] = run_eval(*subs, out=tmp_path / "s2", extra=("--shard", "2/3"))
    code, output = _merge(*(str(parts[k].out) for k in (1, 2, 3)), "--out",
                          str(tmp_path / "whole"))
    assert code == 0, output
    summary = json.loads((tmp_path / "whole" / "summary.json").read_text())
    assert summary["not_scored"] == 0 and summary["not_scored_pairs"] == []
    verdicts = {(p["submission"], p["problem"]): p["verdict"] for p in summary["pairs"]}
    assert verdicts == {("good", "two_plus_two"): "accepted", ("good", "double_def"): "accepted",
                        ("other", "add_comm_explicit"): "accepted",
                        ("bad", "two_plus_two"): "rejected"}
    # a shard with its log replaced by a link to a host file: refused
    log = parts[3].out / "good" / "two_plus_two.log"
    log.unlink()
    log.symlink_to(inputs / "good" / "two_plus_two" / "Submission.lean")
    code, output = _merge(*(str(parts[k].out) for k in (1, 2, 3)), "--out",
                          str(tmp_path / "tampered"))
    assert code == 2 and "good/two_plus_two.log" in output
    assert str(parts[3].out) in output and not (tmp_path / "tampered").exists()
