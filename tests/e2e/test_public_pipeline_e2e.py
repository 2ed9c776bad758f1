"""The public pipeline's contract with ``run-eval --json`` (issue 27 item 4): its consumer counts
a problem solved when its entry in ``problems`` has ``succeeded`` exactly ``True``. Applied to
our output, that rule must give exactly the accepted problems: no more, no fewer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support import CORRECT, RunEval, correct, make_submission, starter

INCORRECT = CORRECT.parent / "incorrect"


def consumer_rule(document: dict[str, Any]) -> list[str]:
    """The public consumer's reading, restated: ids of entries whose succeeded is True."""
    return [e["id"] for e in document.get("problems", [])
            if isinstance(e, dict) and e.get("succeeded") is True and isinstance(e.get("id"), str)]


def test_the_public_consumers_rule_reads_exactly_the_accepted_problems(
        run_eval: RunEval, outside: Path) -> None:
    fork = make_submission(outside / "subs", "fork", {
        "two_plus_two": {"Submission.lean": correct("two_plus_two")},
        "double_def": {"Submission.lean": correct("double_def")},
        "add_comm_explicit": {"Submission.lean": (INCORRECT / "add_comm_explicit" /
                                                  "Submission.lean").read_text()},
        "multi_hole": {"Submission.lean": starter("multi_hole")}})
    run = run_eval(fork, extra=("--json",))
    document = json.loads(run.result.stdout)
    accepted = sorted(p["problem"] for p in run.summary()["pairs"] if p["verdict"] == "accepted")
    assert accepted == ["double_def", "two_plus_two"]
    assert sorted(consumer_rule(document)) == accepted
    entries = {e["id"]: e for e in document["problems"]}
    for key in ("id", "title", "visible", "attempted", "succeeded", "exit_code", "mismatches"):
        assert all(key in e for e in entries.values()), key
    assert entries["two_plus_two"]["title"] != "two_plus_two"  # the manifest's title
    assert (entries["add_comm_explicit"]["attempted"], entries["add_comm_explicit"]["exit_code"]
            ) == (True, 1)
    assert entries["add_comm_explicit"]["mismatches"][0].startswith("fork: rejected")
    assert (entries["multi_hole"]["attempted"], entries["multi_hole"]["succeeded"],
            entries["multi_hole"]["exit_code"]) == (False, False, None)
    assert document["schema_version"] == 4 and document["summary_schema_version"] == 3
    # the pipeline's summary comment reads these: "Attempted 3 / 5; succeeded on 2."
    assert (document["total_problems"], document["attempted_problems"],
            document["succeeded_problems"]) == (len(entries), 3, 2)
    assert document["pairs"] == run.summary()["pairs"]  # our pairs kept beside them
    assert run.code == 0


def _lakefile(bench: Path, pid: str) -> str:
    return (bench / "workspaces" / pid / "lakefile.toml").read_text()


def test_gist_and_renamed_directories_with_a_matching_lakefile_are_scored(
        run_eval: RunEval, outside: Path, bench_copy: Path) -> None:
    gist = outside / "subs" / "gist"
    gist.mkdir(parents=True)
    (gist / "lakefile.toml").write_text(_lakefile(bench_copy, "two_plus_two"))
    (gist / "Submission.lean").write_text(correct("two_plus_two"))
    renamed = make_submission(outside / "subs", "renamed", {
        "my-double": {"Submission.lean": correct("double_def"),
                      "lakefile.toml": _lakefile(bench_copy, "double_def")}})
    run = run_eval(gist, renamed)
    assert run.verdict("gist", "two_plus_two")["verdict"] == "accepted"
    assert run.verdict("renamed", "double_def")["verdict"] == "accepted"
    assert run.code == 0


def test_a_pristine_duplicate_does_not_reject_the_changed_directory(
        run_eval: RunEval, outside: Path, bench_copy: Path) -> None:
    sub = make_submission(outside / "subs", "both", {
        "two_plus_two": {"Submission.lean": starter("two_plus_two")},
        "generated-copy": {"Submission.lean": correct("two_plus_two"),
                           "lakefile.toml": _lakefile(bench_copy, "two_plus_two")},
        "double_def": {"Submission.lean": correct("double_def")}})
    run = run_eval(sub)
    assert run.summary()["submissions"][0]["rejection"] is None
    assert run.verdict("both", "two_plus_two")["verdict"] == "accepted"
    assert run.verdict("both", "double_def")["verdict"] == "accepted"
