"""``lean-eval audit-results`` on fixture histories built here (issue 31 item 4): one source
history through each layout the importer reads (every manifest in one ``problems.toml``
without the lifecycle keys and with the earliest ``theorem = NAME``, then one manifest per
problem), and a results store whose records name its commits. Each status is shown by a record
made for it, beside its negative control: a statement changed without a new revision is
``stale`` (in either layout), the same change with a bumped revision, a reformatting and the
record made after the change are ``ok``; an absent commit is ``unknown_commit``; a problem
absent at the commit, absent now, not generated yet or at another revision is
``unknown_problem``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from click.testing import CliRunner, Result
from support.histories import History, git, store_file, store_record

from lean_eval.benchmark import audit
from lean_eval.cli import main
from lean_eval.errors import CatalogError, UsageError
from lean_eval.supervise import process

ABSENT = "0123456789abcdef" * 2 + "01234567"


class Fixture(NamedTuple):
    src: Path
    results: Path
    commits: dict[str, str]  # step name -> commit
    expected: dict[str, str]  # record label (its declared_model) -> status


def _early(h: History, odd: str) -> None:
    """The single-file layout: no lifecycle keys; odd_square named by ``theorem``."""
    h.single_file([
        {"id": "odd_square", "title": "Odd squares", "theorem": "odd_square_mod"},
        {"id": "sum_bound", "title": "A sum bound", "holes": ["sum_bound_le"]},
        {"id": "reformatted", "title": "Reformatted later", "holes": ["reformatted_eq"]},
        {"id": "withdrawn", "title": "Withdrawn later", "holes": ["withdrawn_eq"]},
        {"id": "pending", "title": "Not generated yet", "holes": ["pending_eq"]}])
    h.workspace("odd_square", "odd_square_mod", odd)
    h.workspace("sum_bound", "sum_bound_le", "∀ n : Nat, n ≤ n * n + 1")
    h.workspace("reformatted", "reformatted_eq", "(1 : Nat) + 1 = 2")
    h.workspace("withdrawn", "withdrawn_eq", "(3 : Nat) = 3")


def build(tmp_path: Path) -> Fixture:
    h = History(tmp_path / "src")
    c: dict[str, str] = {}
    _early(h, "∀ n : Nat, n % 2 = 1 → n * n % 2 = 1")
    c["A"] = h.commit("problems in one file")
    _early(h, "∀ n : Nat, n % 2 = 1 → n * n % 8 = 1")  # changed, no revision to bump
    c["B"] = h.commit("odd_square: a stronger statement")
    h.remove("manifests/problems.toml")
    h.remove("generated/withdrawn")
    for pid in ("odd_square", "sum_bound", "reformatted", "late_change", "pending"):
        h.manifest(pid, title=pid, status="active", visible=True, statement_revision=1,
                   tags=[], holes=[f"{pid}_x" if pid in ("late_change", "pending") else
                                   {"odd_square": "odd_square_mod", "sum_bound": "sum_bound_le",
                                    "reformatted": "reformatted_eq"}[pid]])
    h.workspace("late_change", "late_change_x", "(2 : Nat) ≤ 4")
    h.workspace("pending", "pending_x", "(0 : Nat) = 0")
    c["C"] = h.commit("one manifest per problem, with the lifecycle keys")
    h.manifest("sum_bound", title="sum_bound", status="active", visible=True,
               statement_revision=2, tags=[], holes=["sum_bound_le"])
    h.workspace("sum_bound", "sum_bound_le", "∀ n : Nat, n ≤ n * n")
    c["D"] = h.commit("sum_bound: revised, revision 2")
    h.workspace("reformatted", "reformatted_eq", "(1 : Nat)   +   1 = 2",
                comment="Only the layout changed.")
    c["E"] = h.commit("reformatted: a comment and spacing")
    git(h.root, "checkout", "-q", "-b", "side", c["C"])
    h.write("README.md", "a branch the store recorded a commit of\n")
    c["X"] = h.commit("side branch, never merged")
    git(h.root, "checkout", "-q", "-")
    h.workspace("late_change", "late_change_x", "(2 : Nat) < 4")
    c["F"] = h.commit("late_change: strict, revision kept")
    records = {
        "stale-single-file": ("odd_square", 1, c["A"], "stale"),
        "after-the-change": ("odd_square", 1, c["B"], "ok"),
        "after-the-split": ("odd_square", 1, c["C"], "ok"),
        "bumped-since": ("sum_bound", 1, c["A"], "ok"),
        "at-the-bump": ("sum_bound", 2, c["D"], "ok"),
        "reformatted-since": ("reformatted", 1, c["A"], "ok"),
        "stale-per-problem": ("late_change", 1, c["C"], "stale"),
        "stale-side-branch": ("late_change", 1, c["X"], "stale"),
        "absent-commit": ("odd_square", 1, ABSENT, "unknown_commit"),
        "absent-problem": ("ghost", 1, c["C"], "unknown_problem"),
        "withdrawn-since": ("withdrawn", 1, c["A"], "unknown_problem"),
        "not-generated-yet": ("pending", 1, c["A"], "unknown_problem"),
        "other-revision": ("odd_square", 2, c["C"], "unknown_problem"),
    }
    results = tmp_path / "results"
    store_file(results, "alice", [store_record("alice", pid, rev, commit, model=label)
                                  for label, (pid, rev, commit, _) in records.items()])
    return Fixture(h.root, results, c, {k: v[3] for k, v in records.items()})


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Fixture:
    return build(tmp_path_factory.mktemp("audit"))


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, ["audit-results", *args], catch_exceptions=False)


def statuses(report: Any) -> dict[str, str]:
    models = {r["result_id"]: r["declared_model"] for r in json.loads(
        next(iter(Path(report.results_dir).glob("*.json"))).read_text())["results"]}
    return {models[r.result_id]: r.status for r in report.records}


def test_each_record_has_the_status_made_for_it(history: Fixture) -> None:
    report = audit.audit(history.results, history.src)
    assert statuses(report) == history.expected
    assert report.upstream_commit == history.commits["F"]
    assert report.stale_problems == ("late_change", "odd_square")
    assert report.counts == {"ok": 5, "stale": 3, "unknown_commit": 1, "unknown_problem": 4}


def test_a_stale_record_names_the_commit_that_changed_its_statement(history: Fixture) -> None:
    by_model = {r.detail: r for r in audit.audit(history.results, history.src).records
                if r.status == "stale"}
    details = sorted(by_model)
    assert any(f"changed in {history.commits['B'][:12]}" in d for d in details), details
    assert any(f"changed in {history.commits['F'][:12]}" in d for d in details), details
    bumped = [r for r in audit.audit(history.results, history.src).records
              if r.problem_id == "sum_bound" and r.statement_revision == 1]
    assert bumped[0].revision_now == 2
    assert bumped[0].digest_at_commit != bumped[0].digest_now  # changed, but with a bump


def test_an_earlier_upstream_revision_is_audited_as_it_was(history: Fixture) -> None:
    report = audit.audit(history.results, history.src, history.commits["E"])
    got = statuses(report)
    assert got["stale-per-problem"] == "ok"  # late_change had not changed at E yet
    assert got["stale-single-file"] == "stale"


def test_the_cli_lists_what_is_not_ok_and_exits_1(history: Fixture) -> None:
    result = invoke("--results-dir", str(history.results), "--upstream", str(history.src))
    assert result.exit_code == 1, result.output
    assert "odd_square" in result.output and "late_change" in result.output
    assert "reformatted" not in result.output  # ok records are listed under -v only
    assert result.output.rstrip().splitlines()[-1].endswith(
        "5 ok, 3 stale (2 problem(s): late_change, odd_square), 1 unknown_commit, "
        "4 unknown_problem")
    verbose = invoke("--results-dir", str(history.results), "--upstream", str(history.src),
                     "-v")
    assert "reformatted" in verbose.output


def test_the_cli_json_document(history: Fixture) -> None:
    result = invoke("--results-dir", str(history.results), "--upstream", str(history.src),
                    "--json")
    assert result.exit_code == 1
    document = json.loads(result.output)
    first = document["records"][0]
    assert {"result_id", "problem_id", "statement_revision", "benchmark_commit",
            "status"} <= set(first)
    assert (first["problem_id"], first["benchmark_commit"], first["status"]) == (
        "odd_square", history.commits["A"], "stale")


def test_a_store_of_ok_records_exits_0(history: Fixture, tmp_path: Path) -> None:
    store_file(tmp_path / "clean", "bob", [
        store_record("bob", "odd_square", 1, history.commits["B"]),
        store_record("bob", "sum_bound", 1, history.commits["A"])])
    result = invoke("--results-dir", str(tmp_path / "clean"), "--upstream", str(history.src))
    assert result.exit_code == 0, result.output
    assert "2 record(s)" in result.output and "2 ok, 0 stale" in result.output
    quiet = invoke("--results-dir", str(tmp_path / "clean"), "--upstream", str(history.src),
                   "-q")
    assert (quiet.exit_code, quiet.output) == (0, "")


def test_a_bare_git_directory_is_a_source_too(history: Fixture, tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(history.src), str(bare))
    assert statuses(audit.audit(history.results, bare)) == history.expected


@pytest.mark.parametrize("case", ["no-dir", "no-files", "repo-root", "bad-file", "not-git",
                                  "no-revision"])
def test_unusable_input_exits_2_naming_it(history: Fixture, tmp_path: Path, case: str) -> None:
    results, src, extra = history.results, history.src, []
    if case == "no-dir":
        results = tmp_path / "absent"
    elif case in ("no-files", "repo-root"):
        results = tmp_path / "store"
        results.mkdir()
        if case == "repo-root":
            store_file(results / "results", "alice", [])
    elif case == "bad-file":
        results = tmp_path / "store"
        store_file(results, "alice", [{"problem_id": "odd_square"}])
    elif case == "not-git":
        src = tmp_path / "plain"
        src.mkdir()
    else:
        extra = ["--upstream-rev", "no-such-branch"]
    result = invoke("--results-dir", str(results), "--upstream", str(src), *extra)
    assert result.exit_code == 2, result.output
    needle = {"no-dir": "not a directory", "no-files": "no <user>.json",
              "repo-root": "--results-dir " + str(results / "results"),
              "bad-file": "alice.json: not a results store file",
              "not-git": "not a git repository", "no-revision": "no-such-branch"}[case]
    assert needle in result.output
    with pytest.raises((CatalogError, UsageError)):
        audit.audit(results, src, *(extra[1:]))


def test_git_runs_a_fixed_number_of_times_however_many_commits_are_named(
        history: Fixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = process.run

    def counted(argv: tuple[str, ...], **kwargs: Any) -> process.ProcessResult:
        calls.append(next(a for a in argv[1:] if not a.startswith("-") and "/" not in a))
        return real(argv, **kwargs)

    monkeypatch.setattr(process, "run", counted)
    few = tmp_path / "few"
    store_file(few, "bob", [store_record("bob", "odd_square", 1, history.commits["A"])])
    audit.audit(few, history.src)
    one = sorted(calls)
    calls.clear()
    audit.audit(history.results, history.src)  # six commits, every status
    assert sorted(calls) == one, (one, calls)
    assert calls.count("log") == 1 and len(calls) <= 6, calls
