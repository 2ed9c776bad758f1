"""Sets and selection: --set, --status and --tag on list-problems, run-eval and
validate-submission; frozen sets are refused when a member's statement was revised."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st
from support import SOURCE, examples

from lean_eval.benchmark.sets import Described, ProblemSet, Selection, SetMember, select
from lean_eval.cli import main
from lean_eval.errors import CatalogError

ALL = ["counter_where", "scaled_norm", "widget_facts"]


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def bench(outside: Path) -> Path:
    dest = outside / "bench"
    assert invoke("import-catalog", "-q", str(SOURCE), str(dest)).exit_code == 0
    return dest


def listed(bench: Path, *options: str) -> list[str]:
    result = invoke("list-problems", "--benchmark", str(bench), "--json", *options)
    assert result.exit_code == 0, result.output
    return [p["id"] for p in json.loads(result.stdout)["problems"]]


@pytest.mark.parametrize(("options", "expected"), [
    ((), ALL),
    (("--set", "v1"), ["scaled_norm", "widget_facts"]),
    (("--set", "drafts"), ["counter_where"]),
    (("--status", "draft"), ["counter_where", "widget_facts"]),
    (("--status", "draft", "--status", "active"), ALL),
    (("--tag", "analysis"), ["scaled_norm"]),
    (("--tag", "analysis", "--tag", "algebra"), ["scaled_norm", "widget_facts"]),
    (("--set", "v1", "--status", "draft"), ["widget_facts"]),
    (("--set", "v1", "--problem", "scaled_norm"), ["scaled_norm"]),
])
def test_list_problems_selects_exactly(bench: Path, options: tuple[str, ...],
                                       expected: list[str]) -> None:
    assert listed(bench, *options) == expected


def test_list_problems_shows_holes_kinds_sets_and_tags(bench: Path) -> None:
    data = json.loads(invoke("list-problems", "--benchmark", str(bench), "--json").stdout)
    assert data["schema_version"] == 1
    assert data["sets"] == ["drafts", "v1"]
    widget = next(p for p in data["problems"] if p["id"] == "widget_facts")
    assert widget["sets"] == ["v1"]
    assert widget["tags"] == ["algebra"]
    assert {"name": "Widgets.Solid.instFactWidget", "kind": "theorem"} in widget["holes"]
    assert widget["group"] == "formalization-evaluation"
    text = invoke("list-problems", "--benchmark", str(bench)).stdout
    assert "widget_facts  [draft]  Widgets in a noncomputable section" in text
    assert "counter_where  [draft, hidden]" in text
    assert "Counter.instCounterNat (instance)" in text


def test_unknown_set_and_empty_selection_are_usage_errors(bench: Path) -> None:
    result = invoke("list-problems", "--benchmark", str(bench), "--set", "v2")
    assert result.exit_code == 2
    assert "unknown set 'v2' (sets: drafts, v1)" in result.output
    result = invoke("list-problems", "--benchmark", str(bench), "--tag", "nothing")
    assert result.exit_code == 2
    assert "no problem matches the selection (tag nothing)" in result.output


STATUSES = st.sampled_from(["draft", "active", "archived"])
TAGS = st.lists(st.sampled_from(["a", "b", "c"]), max_size=2, unique=True).map(tuple)


@settings(max_examples=examples(200), deadline=None)
@given(problems=st.dictionaries(st.sampled_from([f"p{i}" for i in range(8)]),
                                st.tuples(STATUSES, TAGS, st.integers(1, 3)), min_size=1),
       members=st.lists(st.sampled_from([f"p{i}" for i in range(8)]), unique=True),
       statuses=st.lists(STATUSES, max_size=2), tags=st.lists(st.sampled_from(["a", "b", "c"]),
                                                              max_size=2))
def test_select_is_the_intersection_of_set_status_and_tag(
        problems: dict[str, tuple[str, tuple[str, ...], int]], members: list[str],
        statuses: list[str], tags: list[str]) -> None:
    described = {pid: Described(status=s, tags=t, statement_revision=r)
                 for pid, (s, t, r) in problems.items()}
    members = [m for m in members if m in problems]
    the_set = ProblemSet(id="s", title="s", frozen=False, members=tuple(
        SetMember(problem_id=m, statement_revision=problems[m][2]) for m in members))
    for set_name in (None, "s"):
        chosen = select(Selection(set_name=set_name, statuses=tuple(statuses), tags=tuple(tags)),
                        described, {"s": the_set})
        expected = {pid for pid, (s, t, _) in problems.items()
                    if (set_name is None or pid in members)
                    and (not statuses or s in statuses)
                    and (not tags or set(t) & set(tags))}
        assert chosen == expected
    frozen = the_set.model_copy(update={"frozen": True})
    if members:
        drifted = {**described, members[0]: described[members[0]].model_copy(
            update={"statement_revision": problems[members[0]][2] + 1})}
        with pytest.raises(CatalogError, match=f"frozen set member '{members[0]}'"):
            select(Selection(set_name="s"), drifted, {"s": frozen})


def test_the_in_memory_index_is_the_committed_one() -> None:
    from support import REPO

    from lean_eval.benchmark import catalog, index, source

    files = source.tree_files(REPO, catalog.TRUSTED_PATHS)
    assert index.render(index.index_of(files)) == (REPO / "workspaces" / "index.json").read_bytes()
