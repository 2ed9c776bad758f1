"""merge: shards of one batch combine into a single run's pairs; anything else is refused.

Shard outputs are built from the models (as ``run-eval --shard K/N`` writes them) so every
refusal can be provoked exactly; the CLI-level twin runs real shards through ``run-eval``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from support import BATCH, BATCH_PROBLEMS, make_identity, shards_of, write_output

from lean_eval.cli import main
from lean_eval.errors import MergeRefusedError
from lean_eval.files.atomic import file_umask
from lean_eval.outputs import merge
from lean_eval.records.verdict import Summary
from lean_eval.scoring import shard


def pair_files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != "summary.json"}


def test_merge_of_shards_equals_a_single_run(tmp_path: Path) -> None:
    single = write_output(tmp_path / "single", BATCH)
    parts = shards_of(tmp_path, 3)
    result = merge.merge(parts, tmp_path / "merged")
    assert result.missing == () and result.missing_shards == ()
    merged = Summary.model_validate_json((tmp_path / "merged" / "summary.json").read_bytes())
    whole = Summary.model_validate_json((single / "summary.json").read_bytes())
    assert merged.pairs == whole.pairs  # same pairs, same order (input order)
    # the shards' compact unchanged lists combine into the whole run's
    assert [s.unchanged for s in merged.submissions] == [s.unchanged for s in whole.submissions]
    assert merged.submissions[2].unchanged == BATCH_PROBLEMS  # carol's, from all three shards
    assert merged.every_pair() == whole.every_pair()
    assert merged.counts == whole.counts
    assert [s.problems for s in merged.submissions] == [s.problems for s in whole.submissions]
    tallies = [getattr(s, "tally", None) for s in merged.submissions]
    assert all(t is None for t in tallies) or [t.solved for t in tallies] == [3, 0, 0, 3]
    assert merged.shard is None and merged.exit_code == 0
    assert pair_files(tmp_path / "merged") == pair_files(single)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_cli_merge_then_report(tmp_path: Path) -> None:
    parts = shards_of(tmp_path)
    result = CliRunner().invoke(main, ["merge", *map(str, parts), "--out",
                                       str(tmp_path / "m")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "merged 2 shard output(s)" in result.output
    assert json.loads((tmp_path / "m" / "summary.json").read_text())["counts"]["accepted"] == 6


def test_cli_merge_quiet_verbose_and_json(tmp_path: Path) -> None:
    parts = shards_of(tmp_path)
    quiet = CliRunner().invoke(main, ["merge", *map(str, parts), "--out", str(tmp_path / "q"),
                                      "-q"], catch_exceptions=False)
    assert (quiet.exit_code, quiet.output) == (0, "")
    as_json = CliRunner().invoke(main, ["merge", *map(str, parts), "--out",
                                        str(tmp_path / "j"), "--json"], catch_exceptions=False)
    assert as_json.exit_code == 0
    assert Summary.model_validate_json(as_json.output).pairs == \
        Summary.model_validate_json((tmp_path / "q" / "summary.json").read_bytes()).pairs
    plain = CliRunner().invoke(main, ["merge", *map(str, parts), "--out", str(tmp_path / "p")],
                               catch_exceptions=False)
    assert plain.exit_code == 0 and "shard 1/" not in plain.output
    verbose = CliRunner().invoke(main, ["merge", *map(str, parts), "--out", str(tmp_path / "v"),
                                        "-v"], catch_exceptions=False)
    assert verbose.exit_code == 0, verbose.output
    n = len(parts)
    for k, part in enumerate(parts, 1):
        assert f"{part}: shard {k}/{n}, " in verbose.output


def test_another_harness_version_is_refused(tmp_path: Path) -> None:
    one = write_output(tmp_path / "a", shard.select(BATCH, 1, 2), k=1)
    two = write_output(tmp_path / "b", shard.select(BATCH, 2, 2), k=2,
                       identity=make_identity(harness_version="0.2.0"))
    result = CliRunner().invoke(main, ["merge", str(one), str(two), "--out", str(tmp_path / "m")],
                                catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert "harness_version" in result.output
    assert str(one) in result.output and str(two) in result.output
    assert not (tmp_path / "m").exists()
    assert "Traceback" not in result.output


@pytest.mark.parametrize("change", [{"toolchain_name": "leanprover/lean4:v4.23.0"},
                                    {"bwrap_sha256": "cd" * 32},
                                    {"benchmark_commit": "deadbeef"}])
def test_other_identity_is_refused(tmp_path: Path, change: dict[str, str]) -> None:
    one = write_output(tmp_path / "a", shard.select(BATCH, 1, 2), k=1)
    two = write_output(tmp_path / "b", shard.select(BATCH, 2, 2), k=2,
                       identity=make_identity(**change))
    with pytest.raises(MergeRefusedError, match="identity"):
        merge.merge([one, two], tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_paths_of_other_machines_do_not_matter(tmp_path: Path) -> None:
    one = write_output(tmp_path / "a", shard.select(BATCH, 1, 2), k=1)
    two = write_output(tmp_path / "b", shard.select(BATCH, 2, 2), k=2,
                       identity=make_identity(benchmark_path="/elsewhere", toolchain_path="/other"))
    assert merge.merge([one, two], tmp_path / "m").missing == ()


def test_other_options_or_batch_are_refused(tmp_path: Path) -> None:
    one = write_output(tmp_path / "a", shard.select(BATCH, 1, 2), k=1)
    two = write_output(tmp_path / "b", shard.select(BATCH, 2, 2), k=2, options_digest="p" * 64)
    with pytest.raises(MergeRefusedError, match="options"):
        merge.merge([one, two], tmp_path / "m")
    three = write_output(tmp_path / "c", shard.select(BATCH, 2, 2), k=2, digest="e" * 64)
    with pytest.raises(MergeRefusedError, match="different batches") as info:
        merge.merge([one, three], tmp_path / "m")
    assert str(one) in str(info.value) and str(three) in str(info.value)
    four = write_output(tmp_path / "d", shard.select(BATCH, 2, 3), k=2, n=3)
    with pytest.raises(MergeRefusedError, match="shard counts"):
        merge.merge([one, four], tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_a_pair_scored_twice_is_refused(tmp_path: Path) -> None:
    one = write_output(tmp_path / "a", shard.select(BATCH, 1, 2), k=1)
    again = write_output(tmp_path / "b", shard.select(BATCH, 1, 2), k=1)
    result = CliRunner().invoke(main, ["merge", str(one), str(again), "--out",
                                       str(tmp_path / "m")], catch_exceptions=False)
    assert result.exit_code == 2
    assert "scored by both" in result.output
    assert not (tmp_path / "m").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_the_same_directory_twice_is_refused(tmp_path: Path) -> None:
    one = write_output(tmp_path / "a", shard.select(BATCH, 1, 2), k=1)
    with pytest.raises(MergeRefusedError, match="same directory"):
        merge.merge([one, tmp_path / "." / "a"], tmp_path / "m")


def test_missing_shard_exits_1_and_names_it(tmp_path: Path) -> None:
    parts = shards_of(tmp_path, 3)
    result = CliRunner().invoke(main, ["merge", str(parts[0]), str(parts[2]), "--out",
                                       str(tmp_path / "m")], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert "shard 2/3 is missing" in result.output
    summary = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert summary["exit_code"] == 1


def test_unscored_pairs_are_listed(tmp_path: Path) -> None:
    pairs = shard.select(BATCH, 1, 2)
    one = write_output(tmp_path / "a", shard.select(BATCH, 2, 2), k=2)
    # shard 1 was interrupted: it planned its pairs but recorded only the first
    two = write_output(tmp_path / "b", pairs[:1], k=1)
    data = json.loads((two / "summary.json").read_text())
    for sub in data["submissions"]:
        sub["problems"] = [p for s, p in pairs if s == sub["id"]]
    (two / "summary.json").write_text(json.dumps(data))
    result = CliRunner().invoke(main, ["merge", str(one), str(two), "--out", str(tmp_path / "m")],
                                catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert f"{len(pairs) - 1} pair(s) were scored by no shard" in result.output
    for sid, pid in pairs[1:]:
        assert f"  {sid}/{pid}" in result.output


def test_existing_output_is_never_touched(tmp_path: Path) -> None:
    parts = shards_of(tmp_path)
    target = tmp_path / "m"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    with pytest.raises(MergeRefusedError, match="not an empty directory"):
        merge.merge(parts, target)
    assert [p.name for p in target.iterdir()] == ["keep.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert merge.merge(parts, empty).missing == ()
    assert (empty / "summary.json").is_file()


def test_a_shard_without_summary_is_refused(tmp_path: Path) -> None:
    (tmp_path / "nothing").mkdir()
    result = CliRunner().invoke(main, ["merge", str(tmp_path / "nothing"), "--out",
                                       str(tmp_path / "m")], catch_exceptions=False)
    assert result.exit_code == 2
    assert "no readable summary.json" in result.output
    assert str(tmp_path / "nothing") in result.output


def test_output_inside_a_shard_is_refused(tmp_path: Path) -> None:
    parts = shards_of(tmp_path)
    with pytest.raises(MergeRefusedError, match="overlap"):
        merge.merge(parts, parts[0] / "merged")


def test_an_unwritable_output_leaves_nothing_and_no_traceback(tmp_path: Path) -> None:
    parts = shards_of(tmp_path)
    (tmp_path / "file").write_text("x")
    result = CliRunner().invoke(main, ["merge", *map(str, parts), "--out",
                                       str(tmp_path / "file" / "m")], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert "cannot create the merged output" in result.output
    assert "Traceback" not in result.output


def test_merged_files_get_the_usual_modes(tmp_path: Path) -> None:
    parts = shards_of(tmp_path)
    out = merge.merge(parts, tmp_path / "m").out_dir
    assert out.stat().st_mode & 0o777 == 0o777 & ~file_umask()
    assert (out / "summary.json").stat().st_mode & 0o777 == 0o666 & ~file_umask()


def test_a_merge_of_2_of_3_shards_says_so_in_the_summary_and_every_report_format(
        tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    from lean_eval.outputs.report.markdown import md
    from lean_eval.records.run_report import RunReport

    parts = shards_of(tmp_path, 3)
    lost = shard.select(BATCH, 2, 3)
    assert lost  # shard 2 of 3 holds pairs of this batch
    result = CliRunner().invoke(main, ["merge", str(parts[0]), str(parts[2]), "--out",
                                       str(tmp_path / "m")], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert "shard 2/3 is missing" in result.output
    assert f"{len(lost)} pair(s) were scored by no shard" in result.output
    merged = Summary.model_validate_json((tmp_path / "m" / "summary.json").read_bytes())
    assert merged.missing_shards == ("2/3",)
    assert [(r.submission, r.problem) for r in merged.not_scored_pairs] == lost
    assert merged.not_scored == len(lost) and merged.exit_code == 1
    # every submission still lists its whole batch, scored or not
    assert [(s.id, p) for s in merged.submissions for p in s.problems] == BATCH
    assert len(merged.every_pair()) + len(lost) == len(BATCH)  # unchanged ones included

    def render(fmt: str) -> str:
        done = CliRunner().invoke(main, ["report", str(tmp_path / "m"), "--format", fmt],
                                  catch_exceptions=False)
        assert done.exit_code == 0, done.output
        return done.output

    markdown = render("markdown")
    assert "### Not scored" in markdown and "shard 2/3 is missing" in markdown
    assert f"{len(lost)} not scored (missing shard(s) 2/3)" in markdown
    for sid, pid in lost:
        assert f"| {md(sid)} | {md(pid)} | not scored: its shard 2/3 is missing" \
            in markdown
    table = " ".join(render("table").split())
    assert table.count("not scored") >= len(lost) and "shard 2/3 is missing" in table
    root = ET.fromstring(render("junit").encode())  # noqa: S314 - our own output
    unscored = root.findall("./testsuite/testcase/error[@type='not_scored']")
    assert len(unscored) == len(lost)
    cases = {(c.get("classname"), c.get("name")) for c in root.iter("testcase")
             if c.find("error[@type='not_scored']") is not None}
    assert cases == set(lost)
    assert root.findall("./testsuite[@name='(missing shards)']/testcase/error")
    assert int(root.get("errors") or 0) == len(lost) + 1  # a CI view of this merge is red
    doc = RunReport.model_validate_json(render("json"))
    assert [(r.submission, r.problem) for r in doc.not_scored] == lost
    assert doc.missing_shards == ("2/3",)


def test_a_complete_merge_reports_nothing_unscored(tmp_path: Path) -> None:
    from lean_eval.outputs.report import formats, run_report

    merge.merge(shards_of(tmp_path, 3), tmp_path / "m")
    run = run_report.load_run(tmp_path / "m")
    assert run.summary.not_scored_pairs == () and run.summary.missing_shards == ()
    assert "Not scored" not in formats.render(run, "markdown")
    assert 'errors="0"' in formats.render(run, "junit")
    assert "not scored" not in formats.render(run, "table")


