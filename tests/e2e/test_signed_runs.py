"""Results a public leaderboard can trust, tried as an attacker with write access to an output
directory (a shared scratch disk, a CI artifact, a published record) would: a signed run is one
signed whole, a resumed run never signs what it did not score, a replay takes no setting from
its record, merge and report read verdict files, and every verdict says its settings
(SECURITY.md invariants 19-21).

Real bubblewrap, the stand-in toolchain, and a benchmark that is a git checkout with two
commits: in the second, ``two_plus_two``'s statement was revised, so alice's proof of it is
``accepted`` on the first and not on the second. Every batch has a correct submission that
stays ``accepted`` (alice's ``double_def``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from click.testing import CliRunner, Result
from support import (
    BWRAP_FLOOR,
    STANDIN,
    RunEval,
    copy_benchmark,
    correct,
    keypair,
    make_submission,
    no_survivor,
    rehash_trusted,
)

from lean_eval.cli import main
from lean_eval.supervise import process

SORRY = "namespace Submission\ntheorem two_plus_two : 2 + 2 = 4 := by sorry\nend Submission\n"
GIT_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
TIB = 1 << 40


class Signed(NamedTuple):
    """The module's runs, each copied by the tests that change it."""

    base: Path
    bench1: Path  # commit 1
    bench2: Path  # commit 2: two_plus_two's statement revised
    commits: tuple[str, str]
    subs: dict[str, Path]  # alice (both problems, correct), bob (sorry), carol (correct)
    private: Path
    public: Path
    a: Path  # alice, bob on commit 1, signed
    b: Path  # alice, bob, carol on commit 2, signed
    shards: tuple[Path, Path]  # alice, bob on commit 1 as shards 1/2 and 2/2, signed


def _git(bench: Path, *args: str) -> str:
    done = process.run_capture(("git", *args), env=GIT_ENV, cwd=bench, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode().strip()


def _cli(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def _verify(out: Path, signed: Signed, *submissions: str) -> Result:
    extra = [a for sid in submissions for a in ("--submission", str(signed.subs[sid]))]
    return _cli("verify", str(out), "--key", str(signed.public), *extra)


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def _write(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2))


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, symlinks=True)
    return target


@pytest.fixture(scope="module")
def signed(outside_module: Path, bwrap: str) -> Signed:
    del bwrap
    base = outside_module
    bench1 = base / "bench1"
    bench1.mkdir()
    copy_benchmark(bench1)
    _git(bench1, "init", "-q")
    _git(bench1, "add", "-A")
    _git(bench1, "commit", "-qm", "benchmark")
    bench2 = _copy(bench1, base / "bench2")
    challenge = bench2 / "workspaces" / "two_plus_two" / "Challenge.lean"
    challenge.write_text(challenge.read_text().replace(
        "theorem two_plus_two : 2 + 2 = 4", "theorem two_plus_two : 4 = 2 + 2"))
    rehash_trusted(bench2, "two_plus_two", "Challenge.lean")
    manifest = bench2 / "problems" / "two_plus_two.toml"
    manifest.write_text(manifest.read_text().replace("statement_revision = 1",
                                                     "statement_revision = 2"))
    _git(bench2, "commit", "-qam", "two_plus_two: statement revised")
    commits = (_git(bench1, "rev-parse", "HEAD"), _git(bench2, "rev-parse", "HEAD"))
    subs = {"alice": make_submission(base / "in", "alice", {
                p: {"Submission.lean": correct(p)} for p in ("two_plus_two", "double_def")}),
            "bob": make_submission(base / "in", "bob", {
                "two_plus_two": {"Submission.lean": SORRY}}),
            "carol": make_submission(base / "in", "carol", {
                "two_plus_two": {"Submission.lean": correct("two_plus_two")}})}
    private, public = keypair(base)
    sign = ("--sign-key", str(private))
    one, two = RunEval(bench1, base), RunEval(bench2, base)
    a = one(subs["alice"], subs["bob"], out=base / "A", extra=sign)
    assert a.code == 0, a.result.output
    assert a.verdict("alice", "two_plus_two")["verdict"] == "accepted"
    assert a.verdict("alice", "double_def")["verdict"] == "accepted"
    assert a.verdict("bob", "two_plus_two")["verdict"] == "rejected"
    b = two(subs["alice"], subs["bob"], subs["carol"], out=base / "B", extra=sign)
    assert b.code == 0, b.result.output
    assert b.verdict("alice", "two_plus_two")["verdict"] != "accepted"
    assert b.verdict("alice", "double_def")["verdict"] == "accepted"
    shards = tuple(one(subs["alice"], subs["bob"], out=base / f"S{k}",
                       extra=(*sign, "--shard", f"{k}/2")) for k in (1, 2))
    assert all(s.code == 0 for s in shards), [s.result.output for s in shards]
    no_survivor(base)
    return Signed(base, bench1, bench2, commits, subs, private, public, a.out, b.out,
                  (shards[0].out, shards[1].out))


def test_untouched_signed_runs_and_their_merge_verify(signed: Signed, outside: Path) -> None:
    assert _verify(signed.a, signed, "alice", "bob").exit_code == 0
    assert _verify(signed.b, signed, "alice", "bob", "carol").exit_code == 0
    merged = _cli("merge", *map(str, signed.shards), "--out", str(outside / "merged"))
    assert merged.exit_code == 0, merged.output
    assert sorted(p.name for p in (outside / "merged").glob("run.*")) == [
        "run.1-of-2.intoto.json", "run.2-of-2.intoto.json"]
    result = _verify(outside / "merged", signed, "alice", "bob")
    assert result.exit_code == 0, result.output
    assert "3 verdict(s), 3 envelope(s)" in result.output


def test_a_dropped_pair_is_named(signed: Signed, outside: Path) -> None:
    """Verdict, envelope, log and summary lines of alice's double_def deleted."""
    out = _copy(signed.a, outside / "A")
    for suffix in (".json", ".intoto.json", ".log"):
        (out / "alice" / f"double_def{suffix}").unlink(missing_ok=True)
    summary = _json(out / "summary.json")
    summary["pairs"] = [p for p in summary["pairs"] if p["problem"] != "double_def"]
    for sub in summary["submissions"]:
        sub["problems"] = [p for p in sub["problems"] if p != "double_def"]
        if sub["id"] == "alice":
            sub["tally"]["solved"] -= 1
    summary["counts"]["accepted"] -= 1
    _write(out / "summary.json", summary)
    result = _verify(out, signed, "alice")
    assert result.exit_code == 1, result.output
    assert ("FAILED alice/double_def.json: run.intoto.json lists it, but it is missing or "
            "unreadable") in result.output
    assert "a pair of the signed run was dropped" in result.output
    assert "FAILED summary.json: differs from the summary run.intoto.json signs" in result.output
    assert "alice/two_plus_two.json" not in result.output  # the pair left is fine


def test_a_verdict_transplanted_from_a_run_on_another_commit_is_named(
        signed: Signed, outside: Path) -> None:
    """A's signed `accepted` of alice's two_plus_two (commit 1) copied over B's (commit 2),
    B's summary line set to accepted to match."""
    out = _copy(signed.b, outside / "B")
    for suffix in (".json", ".intoto.json"):
        shutil.copy(signed.a / "alice" / f"two_plus_two{suffix}",
                    out / "alice" / f"two_plus_two{suffix}")
    summary = _json(out / "summary.json")
    for pair in summary["pairs"]:
        if (pair["submission"], pair["problem"]) == ("alice", "two_plus_two"):
            pair.update(verdict="accepted", execution="completed", reason="accepted")
    _write(out / "summary.json", summary)
    result = _verify(out, signed, "alice")
    assert result.exit_code == 1, result.output
    assert ("FAILED alice/two_plus_two.json: differs from the verdict run.intoto.json lists"
            in result.output)
    c1, c2 = signed.commits
    assert (f"FAILED alice/two_plus_two.json: identity benchmark_commit is {c1!r}, the signed "
            f"run's (run.intoto.json) is {c2!r}: not scored by this run") in result.output
    assert "alice/double_def" not in result.output


@pytest.mark.parametrize("name", ["two_plus_two.json", "two_plus_two.intoto.json"])
def test_a_symlinked_verdict_or_envelope_is_named_never_followed(
        signed: Signed, outside: Path, name: str) -> None:
    """The signed file moved elsewhere and linked back: the bytes behind the link are the
    signed ones, yet the output does not hold them, so verify names the link (as report,
    merge and export-results refuse it). Negative control: read through the link (the old
    ``read_bytes``), verify passes."""
    out = _copy(signed.a, outside / "A")
    held = outside / "elsewhere"
    held.mkdir()
    shutil.move(out / "alice" / name, held / name)
    (out / "alice" / name).symlink_to(held / name)
    result = _verify(out, signed, "alice")
    assert result.exit_code == 1, result.output
    assert f"alice/{name} is a symbolic link; only regular files are read" in result.output
    assert "bob/" not in result.output


def test_a_symlinked_summary_or_run_envelope_is_named(signed: Signed, outside: Path) -> None:
    out = _copy(signed.a, outside / "A")
    held = outside / "elsewhere"
    held.mkdir()
    shutil.move(out / "run.intoto.json", held / "run.intoto.json")
    (out / "run.intoto.json").symlink_to(held / "run.intoto.json")
    result = _verify(out, signed)
    assert result.exit_code == 1, result.output
    assert "run.intoto.json is a symbolic link" in result.output
    shutil.move(out / "summary.json", held / "summary.json")
    (out / "summary.json").symlink_to(held / "summary.json")
    result = _verify(out, signed)
    assert result.exit_code != 0, result.output
    assert "summary.json is a symbolic link" in result.output


def test_an_added_pair_is_named(signed: Signed, outside: Path) -> None:
    """B's signed verdict of carol (a submission A never scored) put into A."""
    out = _copy(signed.a, outside / "A")
    (out / "carol").mkdir()
    for suffix in (".json", ".intoto.json"):
        shutil.copy(signed.b / "carol" / f"two_plus_two{suffix}",
                    out / "carol" / f"two_plus_two{suffix}")
    result = _verify(out, signed)
    assert result.exit_code == 1, result.output
    assert ("FAILED carol/two_plus_two.json: is not among the verdicts the signed run lists: "
            "added, or transplanted from another run") in result.output


def test_a_tampered_verdict_is_scored_again_never_re_signed(signed: Signed,
                                                            outside: Path) -> None:
    """bob's rejected `sorry` edited to accepted (its resume key kept), then the same signed
    run-eval again on the same --out."""
    out = _copy(signed.a, outside / "A")
    path = out / "bob" / "two_plus_two.json"
    verdict = _json(path)
    rejected = (verdict["verdict"], verdict["reason"]["code"])
    verdict.update(verdict="accepted", execution="completed",
                   reason={"code": "accepted", "message": "ok"})
    _write(path, verdict)
    assert _verify(out, signed, "bob").exit_code == 1
    again = RunEval(signed.bench1, outside)(signed.subs["alice"], signed.subs["bob"], out=out,
                                             extra=("--sign-key", str(signed.private)))
    assert again.code == 0, again.result.output
    summary = again.summary()
    assert summary["reused"] == 2  # alice's two verdicts, whose envelopes verify
    assert summary["not_reused"] == [
        "bob/two_plus_two: the verdict file changed after it was signed"]
    assert ("not kept, scored again: bob/two_plus_two: the verdict file changed after it "
            "was signed") in again.result.output
    assert (again.verdict("bob", "two_plus_two")["verdict"],
            again.verdict("bob", "two_plus_two")["reason"]["code"]) == rejected
    assert again.verdict("alice", "double_def")["verdict"] == "accepted"
    result = _verify(out, signed, "alice", "bob")
    assert result.exit_code == 0, result.output


def _options(record: Path) -> dict[str, Any]:
    options: dict[str, Any] = _json(record / "summary.json")["options"]
    return options


def test_a_replay_takes_no_limit_and_no_probe_policy_from_its_record(
        signed: Signed, outside: Path) -> None:
    record = _copy(signed.a, outside / "record")
    subs = (str(signed.subs["alice"]), str(signed.subs["bob"]))
    tools = ("--benchmark", str(signed.bench1), "--toolchain", str(STANDIN),
             "--allow-bwrap-version", BWRAP_FLOOR)
    # untouched: the replayer's settings equal the record's, so it reproduces
    clean = _cli("replay", str(record), *subs, "--timeout", "60", "--skip-probes", *tools)
    assert clean.exit_code == 0, clean.output
    # the record's skip_probes is a pin, never the replay's policy
    probing = _cli("replay", str(record), *subs, "--timeout", "60", *tools)
    assert probing.exit_code == 2, probing.output
    assert ("--skip-probes of run: the record skipped the probes, this replay runs them; pass "
            "--skip-probes to replay as recorded") in probing.output
    summary = _json(record / "summary.json")
    summary["options"].update(memory_limit=TIB, max_processes=1_000_000, disk_limit=None,
                              timeout=100_000.0)
    _write(record / "summary.json", summary)
    refused = _cli("replay", str(record), *subs, "--timeout", "60", "--skip-probes", *tools)
    assert refused.exit_code == 2, refused.output
    assert "--memory-limit of run: recorded 1024G, now 8G; pass --memory-limit 1024G" \
        in refused.output
    assert "--timeout of run: recorded 100000, now 60; pass --timeout 100000" in refused.output
    assert ("--memory-limit of alice/two_plus_two: recorded 1024G, the verdict says 8G (the "
            "recorded verdict disagrees with the record's options)") in refused.output
    assert "--max-processes of bob/two_plus_two: recorded 1000000, the verdict says 512" \
        in refused.output
    assert "resume_key of alice/double_def: recorded '" in refused.output
    out = outside / "replayed"
    allowed = _cli("replay", str(record), *subs, "--timeout", "60", "--skip-probes",
                   "--allow-drift", "--out", str(out), *tools)
    assert allowed.exit_code == 0, allowed.output
    report = _json(out / "replay.json")
    assert {"pin": "option memory_limit", "subject": "run", "recorded": str(TIB),
            "current": str(8 << 30)} in report["drift"]
    assert report["counts"]["reproduced"] == 3
    for sid, pid in (("alice", "two_plus_two"), ("bob", "two_plus_two")):
        verdict = _json(out / sid / f"{pid}.json")  # scored under the replayer's limits
        assert verdict["limits"]["memory_bytes"] == 8 << 30
        assert verdict["options"]["timeout"] == 60 and verdict["options"]["disk_limit"]


def _holder(shards: tuple[Path, Path], sid: str, pid: str) -> Path:
    return next(s for s in shards if (s / sid / f"{pid}.json").is_file())


def test_an_edited_shard_summary_line_is_refused_by_merge_and_shown_as_filed_by_report(
        signed: Signed, outside: Path) -> None:
    shards = tuple(_copy(s, outside / s.name) for s in signed.shards)
    edited = _holder((shards[0], shards[1]), "bob", "two_plus_two")
    filed = _json(edited / "bob" / "two_plus_two.json")
    summary = _json(edited / "summary.json")
    for pair in summary["pairs"]:
        if pair["submission"] == "bob":
            pair.update(verdict="accepted", execution="completed", reason="accepted")
    summary["counts"]["accepted"] += 1
    summary["counts"]["rejected"] -= 1
    _write(edited / "summary.json", summary)
    merged = _cli("merge", *map(str, shards), "--out", str(outside / "merged"))
    assert merged.exit_code == 2, merged.output
    said = f"{filed['verdict']}/{filed['execution']}/{filed['reason']['code']}"
    assert (f"bob/two_plus_two: summary.json says accepted/completed/accepted, the verdict file "
            f"says {said}; refusing to merge") in merged.output
    assert not (outside / "merged").exists()
    csv = _cli("report", str(edited), "--format", "csv")
    assert csv.exit_code == 0, csv.output
    (row,) = [line for line in csv.output.splitlines() if line.startswith("bob,")]
    assert row.startswith(f"bob,two_plus_two,{filed['verdict']},rejected,")
    assert "summary.json says accepted/completed/accepted" in row
    table = _cli("report", str(edited))
    assert "warning: bob/two_plus_two: summary.json says accepted" in table.output
    for fmt in ("markdown", "junit", "html"):  # every format names it
        shown = _cli("report", str(edited), "--format", fmt).output
        assert "summary.json says accepted/completed/accepted" in shown, fmt
    doc = json.loads(_cli("report", str(edited), "--format", "json").output)
    assert doc["counts"]["accepted"] == summary["counts"]["accepted"] - 1
    assert len(doc["disagreements"]) == 1
    # the untouched shards still merge, and the merge verifies as one signed whole
    clean = _cli("merge", *map(str, signed.shards), "--out", str(outside / "clean"))
    assert clean.exit_code == 0, clean.output
    assert _verify(outside / "clean", signed, "alice", "bob").exit_code == 0
    # a shard's run envelope from another run (B, commit 2) is named
    shard_two = outside / "clean" / "run.2-of-2.intoto.json"
    shutil.copy(signed.b / "run.intoto.json", shard_two)
    result = _verify(outside / "clean", signed)
    assert result.exit_code == 1, result.output
    assert "FAILED run.2-of-2.intoto.json: signs shard 1/1" in result.output
    assert "FAILED run.2-of-2.intoto.json: is of another run: identity" in result.output


def test_every_verdict_says_the_settings_it_was_given_under(signed: Signed,
                                                            outside: Path) -> None:
    out = outside / "out"
    result = _cli("run-eval", str(signed.subs["carol"]), "--out", str(out), "--benchmark",
                  str(signed.bench1), "--toolchain", str(STANDIN), "--allow-bwrap-version",
                  BWRAP_FLOOR, "--skip-probes", "-q", "--timeout", "977",
                  "--max-written-file-bytes", "3MiB", "--max-files", "777",
                  env={"LEAN_EVAL_MAX_DEPTH": "17"})
    assert result.exit_code == 0, result.output
    verdict = _json(out / "carol" / "two_plus_two.json")
    assert verdict["verdict"] == "accepted" and verdict["schema_version"] == 2
    options = verdict["options"]
    assert options["timeout"] == 977
    assert options["max_written_file_bytes"] == 3 << 20
    assert options["limits"]["max_files"] == 777 and options["limits"]["max_depth"] == 17
    assert options == _options(out)  # the summary's, which the resume key covers
