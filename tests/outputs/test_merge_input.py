"""merge and report read only what an output directory really holds (SECURITY.md invariant 21).

Each attack of a tampered shard is reproduced: a pair named ``../../pwned``, ``../victimdir``
over an existing file, a log that is a symlink to a local file (linked on one filesystem,
copied across filesystems: the copy path is forced), a relative ``path`` with ``..``, and a pair
that does not hash into its shard. Every one is refused with exit 2 naming the shard and the
entry, with nothing written; the negative control shows the traversal succeeding when the
summary checks are switched off.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from support import BATCH, make_verdict, shards_of, write_output

from lean_eval.cli import main
from lean_eval.errors import OutputRefusedError
from lean_eval.files.atomic import write_model
from lean_eval.outputs import merge, outdir, shard_input
from lean_eval.records.verdict import Summary
from lean_eval.scoring import shard

PID = "two_plus_two"


def merge_cli(*args: Path | str) -> Result:
    return CliRunner().invoke(main, ["merge", *map(str, args)], catch_exceptions=False)


def report_cli(out: Path, fmt: str = "json") -> Result:
    return CliRunner().invoke(main, ["report", str(out), "--format", fmt],
                              catch_exceptions=False)


def tamper(out: Path, **changes: Any) -> dict[str, Any]:
    """Rewrite ``out/summary.json`` through ``changes`` (callables get the old value)."""
    data: dict[str, Any] = json.loads((out / "summary.json").read_text())
    for key, change in changes.items():
        data[key] = change(data[key]) if callable(change) else change
    (out / "summary.json").write_text(json.dumps(data))
    return data


def inject(out: Path, sid: str, pid: str = PID, path: str | None = None) -> None:
    """Add the pair (``sid``, ``pid``) to a shard's summary, as an attacker would."""
    tamper(out, pairs=lambda pairs: [*pairs, {
               "submission": sid, "problem": pid, "verdict": "accepted",
               "execution": "completed", "reason": "accepted",
               "path": path if path is not None else f"{sid}/{pid}.json"}],
           submissions=lambda subs: [*subs, {"id": sid, "source": "/in/x", "digest": "d" * 64,
                                             "problems": [pid]}])


def refused(result: Result, *names: str | Path) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    for name in names:
        assert str(name) in result.output, result.output


def nothing_written(base: Path) -> None:
    assert not (base / "o").exists() or not any((base / "o").iterdir())
    assert not list(base.rglob("pwned")), list(base.rglob("pwned"))
    assert not list(base.rglob(".*merge-*"))


@pytest.fixture
def parts(tmp_path: Path) -> list[Path]:
    """Two shards as one artifact unpacked them: tmp/art/shard1, tmp/art/shard2."""
    return shards_of(tmp_path / "art", 2)


@pytest.mark.parametrize("sid", ["../../pwned", "../pwned", "a/../../pwned", "..", ".", "",
                                 ".hidden", "x\n", "pwned/x", "/pwned"])
def test_a_pair_whose_submission_id_leaves_the_output_is_refused(
        tmp_path: Path, parts: list[Path], sid: str) -> None:
    inject(parts[0], sid)
    result = merge_cli(*parts, "--out", tmp_path / "o" / "m")
    refused(result, parts[0], "submission id")
    nothing_written(tmp_path)


@pytest.mark.parametrize("pid", ["../../pwned", "../x", "x/../../pwned", "Two.lean", "x\n"])
def test_a_pair_whose_problem_id_breaks_the_catalog_rule_is_refused(
        tmp_path: Path, parts: list[Path], pid: str) -> None:
    inject(parts[0], "alice", pid)
    refused(merge_cli(*parts, "--out", tmp_path / "o" / "m"), parts[0], "problem id")
    nothing_written(tmp_path)


@pytest.mark.parametrize("checked", [True, False], ids=["checked", "negative-control"])
def test_a_traversing_pair_writes_outside_out_only_when_the_checks_are_off(
        tmp_path: Path, parts: list[Path], checked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = "../pwned"
    # the attacker's verdict sits beside the shard in the same artifact
    honest = make_verdict("alice", PID, identity=shard_input.load_shard(parts[1]).summary.identity)
    write_model(parts[0] / sid / f"{PID}.json", honest.model_copy(update={
        "submission": honest.submission.model_copy(update={"id": sid})}))
    inject(parts[0], sid)
    if not checked:  # what merge did before: trust the summary's names
        monkeypatch.setattr(outdir, "check_summary", lambda where, summary: None)
    result = merge_cli(*parts, "--out", tmp_path / "o" / "m")
    escaped = tmp_path / "o" / "pwned" / f"{PID}.json"  # outside --out tmp/o/m
    if checked:
        refused(result, parts[0], "'../pwned'")
        assert not escaped.exists() and not (tmp_path / "o" / "m").exists()
    else:
        assert result.exit_code in (0, 1), result.output  # 1: the batch digest differs
        assert escaped.is_file()  # the traversal works against a merge that skips the checks
        merged = Summary.model_validate_json((tmp_path / "o" / "m" / "summary.json").read_text())
        assert (sid, PID, "accepted") in [(p.submission, p.problem, p.verdict)
                                          for p in merged.pairs]


def test_a_victim_beside_out_is_never_overwritten(tmp_path: Path, parts: list[Path]) -> None:
    victim = tmp_path / "o" / "victimdir" / f"{PID}.json"
    victim.parent.mkdir(parents=True)
    victim.write_text("precious")
    inject(parts[0], "../victimdir")
    refused(merge_cli(*parts, "--out", tmp_path / "o" / "m"), parts[0], "../victimdir")
    assert victim.read_text() == "precious"
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["victimdir"]


@pytest.mark.parametrize("copy", [False, True], ids=["link", "copy"])
def test_placing_never_replaces_a_file(tmp_path: Path, copy: bool,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    if copy:
        monkeypatch.setattr(merge, "_hard_link", cross_device)
    (tmp_path / "source").write_text("attacker")
    (tmp_path / "target").write_text("precious")
    fd = os.open(tmp_path / "source", os.O_RDONLY)
    dir_fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(FileExistsError):
            merge._place(fd, dir_fd, "target")
    finally:
        os.close(fd)
        os.close(dir_fd)
    assert (tmp_path / "target").read_text() == "precious"


def cross_device(fd: int, dir_fd: int, name: str) -> None:
    """``os.link`` as it fails when the shard is on another filesystem."""
    raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))


def plant(part: Path, what: str, secret: Path) -> str:
    """Replace one of alice's files in ``part`` by a link or special file; the entry's name."""
    pid = next(p for s, p in shard.select(BATCH, 1, 2) if s == "alice")
    if what == "log symlink":
        (part / "alice" / f"{pid}.log").unlink()
        (part / "alice" / f"{pid}.log").symlink_to(secret)
        return f"alice/{pid}.log"
    if what == "verdict symlink":
        real = part / "alice" / f"{pid}.json"
        real.rename(secret.parent / "verdict.json")
        real.symlink_to(secret.parent / "verdict.json")
        return f"alice/{pid}.json"
    if what == "log fifo":
        (part / "alice" / f"{pid}.log").unlink()
        os.mkfifo(part / "alice" / f"{pid}.log")
        return f"alice/{pid}.log"
    (part / "alice").rename(secret.parent / "alice")  # the submission directory a symlink
    (part / "alice").symlink_to(secret.parent / "alice")
    return "alice"


KINDS = ["log symlink", "verdict symlink", "log fifo", "submission directory symlink"]


@pytest.mark.parametrize("copy", [False, True], ids=["link", "copy"])
@pytest.mark.parametrize("what", KINDS)
def test_links_and_special_files_in_a_shard_are_refused(
        tmp_path: Path, parts: list[Path], what: str, copy: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    if copy:  # as when the shard sits on another filesystem than --out
        monkeypatch.setattr(merge, "_hard_link", cross_device)
    secret = tmp_path / "host" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("SECRET of the host\n")
    entry = plant(parts[0], what, secret)
    result = merge_cli(*parts, "--out", tmp_path / "o" / "m")
    refused(result, parts[0], entry)
    nothing_written(tmp_path)
    leaked = [p for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()
              and p.parent != secret.parent and b"SECRET" in p.read_bytes()]
    assert not leaked, leaked


def test_the_copy_path_copies_what_the_shard_holds(tmp_path: Path, parts: list[Path],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(merge, "_hard_link", cross_device)
    out = merge.merge(parts, tmp_path / "o" / "m").out_dir
    for sid, pid in BATCH:
        for suffix in (".json", ".log"):
            copied = out / sid / f"{pid}{suffix}"
            owner = next(p for p in parts if (p / sid / f"{pid}{suffix}").exists())
            assert copied.read_bytes() == (owner / sid / f"{pid}{suffix}").read_bytes()
            assert not copied.samefile(owner / sid / f"{pid}{suffix}")


@pytest.mark.parametrize("path", ["alice/../../../elsewhere/two_plus_two.json",
                                  "../elsewhere/two_plus_two.json", "bob/two_plus_two.json",
                                  "/x/../elsewhere/alice/two_plus_two.json", "alice"])
def test_a_recorded_path_off_the_pairs_place_is_refused_by_merge_and_report(
        tmp_path: Path, path: str) -> None:
    # a verdict-shaped file elsewhere on the host, which the path points at
    elsewhere = write_output(tmp_path / "elsewhere", [("alice", PID)])
    one = write_output(tmp_path / "art" / "single", [p for p in BATCH if p[0] != "alice"])
    inject(one, "alice", PID, path=path)
    assert (elsewhere / "alice" / f"{PID}.json").is_file()
    refused(merge_cli(one, "--out", tmp_path / "o" / "m"), one, "records path")
    nothing_written(tmp_path)
    for fmt in ("json", "table", "markdown", "junit"):
        refused(report_cli(one, fmt), one, "records path")


def test_a_pair_in_the_wrong_shard_is_refused(tmp_path: Path) -> None:
    one, two = shard.select(BATCH, 1, 2), shard.select(BATCH, 2, 2)
    stray = two[0]  # belongs to shard 2; shard 1 claims it and shard 2 leaves it out
    first = write_output(tmp_path / "art" / "s1", [*one, stray], k=1)
    second = write_output(tmp_path / "art" / "s2", two[1:], k=2)
    result = merge_cli(first, second, "--out", tmp_path / "o" / "m")
    refused(result, first, f"{stray[0]}/{stray[1]}", "belongs to shard 2/2")
    nothing_written(tmp_path)
    refused(report_cli(first), first, "belongs to shard 2/2")


def test_a_recorded_batch_that_is_not_the_digested_one_is_refused(tmp_path: Path,
                                                                  parts: list[Path]) -> None:
    tamper(parts[0], shard=lambda info: {**info, "batch": {"alice": [PID]}})
    refused(merge_cli(*parts, "--out", tmp_path / "o" / "m"), parts[0], "batch digest")


@pytest.mark.parametrize("what", KINDS)
def test_report_refuses_links_and_special_files(tmp_path: Path, what: str) -> None:
    out = write_output(tmp_path / "out", shard.select(BATCH, 1, 2), k=1)
    secret = tmp_path / "host" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("SECRET")
    entry = plant(out, what, secret)
    for fmt in ("json", "table", "markdown", "junit"):
        result = report_cli(out, fmt)
        refused(result, out, entry)
        assert "SECRET" not in result.output


def test_report_refuses_ids_intake_would_not_give(tmp_path: Path) -> None:
    out = write_output(tmp_path / "out", BATCH)
    inject(out, "../../pwned")
    refused(report_cli(out, "markdown"), out, "'../../pwned'")


def test_the_checks_raise_a_typed_refusal(tmp_path: Path) -> None:
    out = write_output(tmp_path / "out", BATCH)
    inject(out, "a/b")
    summary = Summary.model_validate_json((out / "summary.json").read_bytes())
    with pytest.raises(OutputRefusedError, match=r"submission id 'a/b'"):
        outdir.check_summary(out, summary)


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_a_shard_whose_summary_is_a_link_or_no_regular_file_is_refused(
        tmp_path: Path, parts: list[Path], kind: str) -> None:
    # merge reads summary.json as verify and report do (outdir.read_file): a link to a summary
    # elsewhere (another run's, with its own verdicts) is named, never followed
    elsewhere = tmp_path / "elsewhere.json"
    (parts[0] / "summary.json").rename(elsewhere)
    if kind == "symlink":
        (parts[0] / "summary.json").symlink_to(elsewhere)
    else:
        os.mkfifo(parts[0] / "summary.json")
    refused(merge_cli(*parts, "--out", tmp_path / "o" / "m"), parts[0], "summary.json")
    nothing_written(tmp_path)
