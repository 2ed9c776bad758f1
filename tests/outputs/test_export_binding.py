"""export-results bound to an intake and reading the public pipeline's metadata (issue 31 item 2).

An intake accepted one problem at one statement revision: ``--expected-problem-id`` and
``--expected-statement-revision`` (or a server intake's pipeline metadata.json) refuse, exit 2
with nothing written, an export of any other accepted pair, naming both sides. Unbound, the same
export writes the record of the revision the run scored: the negative control. The pipeline's
own metadata shape (fixtures written here in its shape) is mapped onto ours field by field.
"""

from __future__ import annotations

import calendar
import json
import os
import subprocess  # noqa: TID251 - git reads the public validator out of a local checkout
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import given
from hypothesis import strategies as st
from support import make_identity, write_output

from lean_eval.cli import main, publish
from lean_eval.outputs import export_metadata, results_store

COMMIT = "c" * 40
FINISHED = "2026-12-31T23:30:00-02:00"  # 2027-01-01 in UTC: the day the record is accepted
OURS = {"alice": {"user": "alice", "declared_model": "M",
                  "intake": {"kind": "issue", "issue_number": 7},
                  "submission": {"kind": "gist", "repo": "alice/0123abcd", "ref": "a" * 40,
                                 "public": True}}}
SUBMISSION_ID = "01890a5d-ac96-774b-bcce-b302099a8057"


def issue_form(**changes: Any) -> dict[str, Any]:
    """A metadata.json as the pipeline's issue intake freezes it (its field names)."""
    return {"source_url": "https://gist.github.com/alice/0123abcd", "submission_kind": "gist",
            "submission_repo": "alice/0123abcd", "submission_ref": "a" * 40,
            "submission_public": True, "model": "Model X", "submitted_by": "Alice",
            "issue_number": 12, "production_description": "one pass",
            "solution_publication_status": "published",
            "solution_publication_date": "2026-11-30", **changes}


def server_form(**changes: Any) -> dict[str, Any]:
    """A metadata.json as the pipeline's server intake freezes it (schema_version 2)."""
    return {"schema_version": 2, "submission_id": SUBMISSION_ID,
            "source_url": f"https://github.com/alice/proofs/commit/{'b' * 40}",
            "submission_kind": "github_repo", "submission_repo": "alice/proofs",
            "submission_ref": "b" * 40, "submission_public": False, "model": "Model X",
            "submitted_by": "alice", "problem_id": "two_plus_two",
            "problem_group": "formalization-evaluation", "statement_revision": 1,
            "publication_choice": "scheduled",
            "production_metadata": {"harness": "h", "web_access": False}, **changes}


def run(tmp_path: Path, pairs: list[tuple[str, str]], revision: int = 1) -> Path:
    out = write_output(tmp_path / "run", pairs, identity=make_identity(benchmark_commit=COMMIT))
    summary = json.loads((out / "summary.json").read_text())
    summary["finished_at"] = FINISHED
    (out / "summary.json").write_text(json.dumps(summary))
    for sid, pid in pairs:
        path = out / sid / f"{pid}.json"
        data = json.loads(path.read_text())
        data["problem"]["statement_revision"] = revision
        path.write_text(json.dumps(data))
    return out


def export(tmp_path: Path, out: Path, metadata: dict[str, Any], *extra: str) -> Result:
    (tmp_path / "meta.json").write_text(json.dumps(metadata))
    return CliRunner().invoke(main, ["export-results", str(out), "--metadata",
                                     str(tmp_path / "meta.json"), "--results-dir",
                                     str(tmp_path / "results"), *extra],
                              catch_exceptions=False)


def records(tmp_path: Path, user: str) -> list[dict[str, Any]]:
    data = json.loads((tmp_path / "results" / f"{user}.json").read_text())
    return list(data["results"])


def bound(problem: str, revision: int) -> tuple[str, ...]:
    return ("--expected-problem-id", problem, "--expected-statement-revision", str(revision))


# ---------------------------------------------------------------- the binding


def test_unbound_the_export_writes_the_revision_the_run_scored(tmp_path: Path) -> None:
    """The negative control: intake accepted revision 2, the run scored revision 1, and an
    export without the binding records revision 1."""
    result = export(tmp_path, run(tmp_path, [("alice", "two_plus_two")], revision=1), OURS)
    assert result.exit_code == 0, result.output
    assert [r["statement_revision"] for r in records(tmp_path, "alice")] == [1]


@pytest.mark.parametrize(("pairs", "revision", "expected", "accepted"), [
    ([("alice", "two_plus_two")], 1, ("two_plus_two", 2), ("two_plus_two", 1)),
    ([("alice", "double_def")], 1, ("two_plus_two", 1), ("double_def", 1)),
    ([("alice", "two_plus_two"), ("alice", "double_def")], 1, ("two_plus_two", 1),
     ("double_def", 1)),
])
def test_a_bound_export_of_another_problem_or_revision_is_refused_naming_both(
        tmp_path: Path, pairs: list[tuple[str, str]], revision: int,
        expected: tuple[str, int], accepted: tuple[str, int]) -> None:
    result = export(tmp_path, run(tmp_path, pairs, revision), OURS, *bound(*expected))
    assert result.exit_code == 2, result.output
    assert (f"the run accepted problem {accepted[0]} at statement revision {accepted[1]}, but "
            "the intake binding (--expected-problem-id, --expected-statement-revision) expects "
            f"problem {expected[0]} at statement revision {expected[1]}") in result.output
    assert "nothing was written" in result.output
    assert not (tmp_path / "results").exists()


def test_a_bound_export_of_the_accepted_pair_writes_exactly_it(tmp_path: Path) -> None:
    result = export(tmp_path, run(tmp_path, [("alice", "two_plus_two")], revision=3), OURS,
                    *bound("two_plus_two", 3))
    assert result.exit_code == 0, result.output
    (record,) = records(tmp_path, "alice")
    assert (record["problem_id"], record["statement_revision"]) == ("two_plus_two", 3)
    assert record["accepted_at"] == "2027-01-01T01:30:00Z"


def test_a_bound_export_whose_problem_was_not_accepted_writes_nothing(tmp_path: Path) -> None:
    out = write_output(tmp_path / "run", [("bob", "two_plus_two")],  # bob's pairs: rejected
                       identity=make_identity(benchmark_commit=COMMIT))
    result = export(tmp_path, out, {}, *bound("two_plus_two", 1))
    assert result.exit_code == 0, result.output
    assert "0 new result(s)" in result.output
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("given_", [("--expected-problem-id", "two_plus_two"),
                                    ("--expected-statement-revision", "1")])
def test_one_half_of_the_binding_is_a_usage_error(tmp_path: Path,
                                                  given_: tuple[str, str]) -> None:
    result = export(tmp_path, run(tmp_path, [("alice", "two_plus_two")]), OURS, *given_)
    assert result.exit_code == 2
    assert "--expected-problem-id and --expected-statement-revision go together" in result.output
    assert not (tmp_path / "results").exists()


# ---------------------------------------------------------------- the pipeline's metadata


def test_the_issue_form_is_detected_and_mapped_field_by_field(tmp_path: Path) -> None:
    out = run(tmp_path, [("alice", "two_plus_two")])
    result = export(tmp_path, out, issue_form())
    assert result.exit_code == 0, result.output
    (record,) = records(tmp_path, "alice")
    assert record["result_id"] == results_store.result_id("Alice", "Model X", "two_plus_two", 1)
    assert record["declared_model"] == "Model X"
    assert record["intake"] == {"kind": "issue", "issue_number": 12}
    assert record["submission"] == {"kind": "gist", "repo": "alice/0123abcd",
                                    "ref": "a" * 40, "public": True}
    assert record["production_metadata"] == {
        "production_description": "one pass", "solution_publication_status": "published",
        "solution_publication_date": "2026-11-30"}


def test_read_as_ours_the_pipeline_form_is_refused(tmp_path: Path) -> None:
    result = export(tmp_path, run(tmp_path, [("alice", "two_plus_two")]), issue_form(),
                    "--metadata-format", "lean-eval")
    assert result.exit_code == 2
    assert "submission 'submitted_by'" in result.output
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(("changes", "production"), [
    ({}, {"solution_publication_status": "planned", "solution_publication_date": "2027-03-01"}),
    ({"publication_choice": "withheld"}, {"solution_publication_status": "private"}),
    ({"submission_public": True}, {}),  # a public source: the choice records nothing
])
def test_the_server_form_maps_the_publication_choice(
        tmp_path: Path, changes: dict[str, Any], production: dict[str, str]) -> None:
    result = export(tmp_path, run(tmp_path, [("alice", "two_plus_two")]), server_form(**changes))
    assert result.exit_code == 0, result.output
    (record,) = records(tmp_path, "alice")
    assert record["intake"] == {"kind": "server", "submission_id": SUBMISSION_ID}
    assert record["submission"]["kind"] == "github_repo"
    assert record["production_metadata"] == {"harness": "h", "web_access": False, **production}


def test_the_server_forms_problem_and_revision_bind_the_export(tmp_path: Path) -> None:
    out = run(tmp_path, [("alice", "two_plus_two")], revision=1)
    result = export(tmp_path, out, server_form(statement_revision=2))
    assert result.exit_code == 2, result.output
    assert ("the run accepted problem two_plus_two at statement revision 1, but --metadata "
            f"{tmp_path / 'meta.json'} (the submission pipeline's metadata.json) expects problem "
            "two_plus_two at statement revision 2") in result.output
    assert not (tmp_path / "results").exists()


def test_options_that_contradict_the_server_form_are_refused_naming_both(
        tmp_path: Path) -> None:
    out = run(tmp_path, [("alice", "two_plus_two")])
    result = export(tmp_path, out, server_form(), *bound("double_def", 1))
    assert result.exit_code == 2
    assert ("the intake binding (--expected-problem-id, --expected-statement-revision) expects "
            "problem double_def at statement revision 1, but --metadata") in result.output
    assert "says its intake accepted problem two_plus_two at statement revision 1" in result.output
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(("changes", "named"), [
    ({"submission_ref": "HEAD"}, "field submission_ref: String should match pattern"),
    ({"submitted_by": "-bad-"}, "field submitted_by: String should match pattern"),
    ({"surprise": 1}, "field surprise: Extra inputs are not permitted"),
    ({"issue_number": 3}, "exactly one of issue_number (issue intake) and submission_id"),
    ({"publication_choice": "soon"}, "field publication_choice: Input should be 'scheduled'"),
])
def test_a_bad_pipeline_field_is_named_by_its_own_name(
        tmp_path: Path, changes: dict[str, Any], named: str) -> None:
    result = export(tmp_path, run(tmp_path, [("alice", "two_plus_two")]), server_form(**changes))
    assert result.exit_code == 2
    assert named in result.output, result.output
    assert not (tmp_path / "results").exists()


def test_a_pipeline_document_for_a_run_of_several_submissions_is_refused(
        tmp_path: Path) -> None:
    out = run(tmp_path, [("alice", "two_plus_two"), ("dave", "two_plus_two")])
    result = export(tmp_path, out, issue_form())
    assert result.exit_code == 2
    assert "describes one submission, but the run holds 2: alice, dave" in result.output
    assert not (tmp_path / "results").exists()


def test_the_commands_formats_are_the_modules() -> None:
    assert publish.METADATA_FORMATS == export_metadata.METADATA_FORMATS


@given(st.dates(min_value=date(1990, 1, 1), max_value=date(2990, 1, 1)),
       st.integers(min_value=0, max_value=30))
def test_plus_months_lands_in_the_target_month_never_past_the_day(day: date, months: int
                                                                   ) -> None:
    moved = export_metadata.plus_months(day, months)
    assert (moved.year * 12 + moved.month) - (day.year * 12 + day.month) == months
    assert moved.day <= day.day
    assert moved.day in (day.day, calendar.monthrange(moved.year, moved.month)[1])


# ---------------------------------------------------------------- the public validator

REAL = os.environ.get("LEAN_EVAL_REAL_SUBMISSIONS")  # a checkout (or git dir) of the public store


@pytest.mark.skipif(not REAL, reason="LEAN_EVAL_REAL_SUBMISSIONS is not set (a local copy of "
                                     "leanprover/lean-eval-submissions); not run")
def test_the_public_validator_accepts_what_the_server_form_exports(tmp_path: Path) -> None:
    assert REAL
    source = Path(REAL) / "scripts" / "results_schema.py"
    text = source.read_text() if source.is_file() else subprocess.run(
        ["git", "--git-dir", REAL, "show", "HEAD:scripts/results_schema.py"],
        capture_output=True, text=True, check=True).stdout
    namespace: dict[str, Any] = {"__name__": "public_results_schema"}
    exec(compile(text, "results_schema.py", "exec"), namespace)  # noqa: S102 - read, not kept
    for i, changes in enumerate(({}, {"publication_choice": "withheld"}, {})):
        base = tmp_path / str(i)
        base.mkdir()
        out = run(base, [("alice", "two_plus_two")])
        assert export(base, out, server_form(**changes) if i < 2 else issue_form()
                      ).exit_code == 0
        user = "alice"
        namespace["validate_v2"](json.loads((base / "results" / f"{user}.json").read_text()))
