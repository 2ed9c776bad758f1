"""replay: a recorded run scored again and compared; --paranoid audits every bundled checker.

The end-to-end tests run the real CLI (real bubblewrap, stand-in toolchain) on a benchmark that
is a git checkout, so its commit is a pin that can change.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from support import (
    BWRAP_FLOOR,
    STANDIN,
    copy_benchmark,
    correct,
    make_submission,
    no_survivor,
    rehash_trusted,
    with_lines,
)

from lean_eval.cli import main
from lean_eval.records.replay import ReplayReport
from lean_eval.scoring import classification
from lean_eval.supervise import process

PROBLEMS = "two_plus_two,double_def"
# The record's verdict-changing settings, which a replay never takes from it: given here
AS_RECORDED = ("--timeout", "60", "--skip-probes")
SORRY = "namespace Submission\ntheorem two_plus_two : 2 + 2 = 4 := by sorry\nend Submission\n"
Copied = tuple[Path, list[Path]]  # a test's copy of the recorded run: its output, submissions
GIT_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}


# --- the pure parts ------------------------------------------------------------------------------


PARANOID_ORDER = (*classification.PARANOID_KERNELS, "Lean default")


# --- end to end ----------------------------------------------------------------------------------


def _git(bench: Path, *args: str) -> str:
    done = process.run_capture(("git", *args), env=GIT_ENV, cwd=bench, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode().strip()


@pytest.fixture(scope="module")
def recording(outside_module: Path, bwrap: str) -> Path:
    """One recorded run for the module's end-to-end tests, each of which gets a copy of it
    (``bench`` and ``copied``): ``bench`` (the repository's benchmark as a git checkout of its
    own, so it has a commit), ``subs`` (``_submissions``) and ``record`` (run-eval's output)."""
    del bwrap
    path = outside_module / "bench"
    path.mkdir()
    copy_benchmark(path)
    _git(path, "init", "-q")
    _git(path, "add", "-A")
    _git(path, "commit", "-qm", "benchmark")
    subs = _submissions(outside_module / "subs")
    out = outside_module / "record"
    result = _cli("run-eval", *map(str, subs), "--out", str(out), "--problem", PROBLEMS,
                  "--timeout", "60", "--skip-probes", "-q", *_tools(path))
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert [(p["submission"], p["problem"], p["verdict"]) for p in summary["pairs"]] == [
        ("good", "double_def", "accepted"), ("good", "two_plus_two", "accepted"),
        ("flagged", "double_def", "accepted"), ("flagged", "two_plus_two", "accepted"),
        ("bad", "two_plus_two", "rejected")]
    assert summary["options"]["timeout"] == 60 and summary["options"]["skip_probes"] is True
    no_survivor(outside_module)
    return outside_module


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, symlinks=True)  # modes, links and .git as they are
    return target


@pytest.fixture
def bench(recording: Path, outside: Path) -> Path:
    """This test's copy of the recorded run's benchmark checkout (same commit, same bytes)."""
    return _copy(recording / "bench", outside / "bench")


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _replay(*args: str) -> Result:
    """``replay`` with the record's own verdict-changing settings, which it never takes from
    the record itself."""
    return _cli("replay", *AS_RECORDED, *args)


def _tools(bench: Path) -> tuple[str, ...]:
    return ("--benchmark", str(bench), "--toolchain", str(STANDIN),
            "--allow-bwrap-version", BWRAP_FLOOR)


def _submissions(base: Path) -> list[Path]:
    """good: correct; flagged: correct, but con-leche (run by --paranoid only) rejects its
    two_plus_two; bad: a sorry, rejected."""
    good = make_submission(base, "good", {p: {"Submission.lean": correct(p)}
                                          for p in PROBLEMS.split(",")})
    flagged = make_submission(base, "flagged", {
        "two_plus_two": {"Submission.lean": with_lines(
            "two_plus_two", "-- standin: kernel-reject con-leche")},
        "double_def": {"Submission.lean": correct("double_def")}})
    bad = make_submission(base, "bad", {"two_plus_two": {"Submission.lean": SORRY}})
    return [good, flagged, bad]


@pytest.fixture
def copied(recording: Path, outside: Path) -> Copied:
    """This test's copy of the recorded run's output and submissions (good, flagged, bad):
    replay compares identities and digests, never paths, so a copy replays as the original."""
    subs = [_copy(recording / "subs" / name, outside / "subs" / name)
            for name in ("good", "flagged", "bad")]
    return _copy(recording / "record", outside / "record"), subs


def _argv(log: Path) -> list[str]:
    first = log.read_text(encoding="utf-8").splitlines()[0]
    argv: list[str] = json.loads(first.removeprefix("# argv: "))
    return argv


def _replay_json(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "replay.json").read_text())
    return data


@pytest.mark.sandbox
def test_an_unchanged_run_reproduces_every_pair(bench: Path, outside: Path,
                                                copied: Copied) -> None:
    record, subs = copied
    for log in record.rglob("*.log"):  # run-eval never asks for the paranoid checkers
        argv = _argv(log)
        assert argv[1:3] == ["comparator", "--config"] and "--paranoid" not in argv
    out = outside / "replayed"
    result = _replay(str(record), *map(str, subs), "--out", str(out), *_tools(bench))
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    doc = _replay_json(out)
    assert doc["counts"] == {"reproduced": 5, "changed": 0, "kernel_disagreement": 0,
                             "not_scored": 0}
    assert doc["drift"] == [] and doc["paranoid"] is False and doc["exit_code"] == 0
    assert all(p["recorded"]["verdict"] == p["new"]["verdict"] for p in doc["pairs"])
    assert (out / "summary.json").is_file() and (out / "good" / "two_plus_two.json").is_file()
    assert "--paranoid" not in _argv(out / "good" / "two_plus_two.log")
    assert json.loads((record / "summary.json").read_text())["pairs"]  # the record is intact
    shown = _cli("report", str(out))
    assert shown.exit_code == 0 and "5 reproduced; exit 0" in shown.output
    for fmt in ("markdown", "json"):
        assert _cli("report", str(out), "--format", fmt).exit_code == 0
    assert ReplayReport.model_validate(doc).counts["reproduced"] == 5
    no_survivor(outside)


@pytest.mark.sandbox
def test_a_new_benchmark_commit_is_refused_then_named_with_allow_drift(
        bench: Path, outside: Path, copied: Copied) -> None:
    record, subs = copied
    recorded = _git(bench, "rev-parse", "HEAD")
    challenge = bench / "workspaces" / "two_plus_two" / "Challenge.lean"
    old = hashlib.sha256(challenge.read_bytes()).hexdigest()
    challenge.write_text(challenge.read_text() + "-- a later comment\n", encoding="utf-8")
    rehash_trusted(bench, "two_plus_two", "Challenge.lean")
    new = hashlib.sha256(challenge.read_bytes()).hexdigest()
    _git(bench, "commit", "-qam", "later")
    now = _git(bench, "rev-parse", "HEAD")
    out = outside / "replayed"
    refused = _replay(str(record), *map(str, subs), "--out", str(out), *_tools(bench))
    assert refused.exit_code == 2, refused.output
    assert f"benchmark_commit of run: recorded {recorded!r}, now {now!r}" in refused.output
    assert (f"trusted_files of two_plus_two: recorded 'Challenge.lean {old[:16]}', "
            f"now 'Challenge.lean {new[:16]}'") in refused.output
    assert "double_def" not in refused.output  # its trusted files did not change
    assert "nothing was scored" in refused.output and "Traceback" not in refused.output
    assert not out.exists()
    allowed = _replay(str(record), *map(str, subs), "--out", str(out), "--allow-drift",
                   *_tools(bench))
    assert allowed.exit_code == 0, allowed.output
    doc = _replay_json(out)
    assert {"pin": "benchmark_commit", "subject": "run", "recorded": recorded,
            "current": now} in doc["drift"]
    assert doc["allow_drift"] is True and doc["counts"]["reproduced"] == 5
    shown = _cli("report", str(out))
    assert f"drift benchmark_commit of run: recorded '{recorded}'" in shown.output


@pytest.mark.sandbox
def test_tampered_identity_and_changed_submission_are_refused_by_name(
        bench: Path, outside: Path, copied: Copied) -> None:
    record, subs = copied
    verdict_path = record / "bad" / "two_plus_two.json"
    data = json.loads(verdict_path.read_text())
    data["identity"]["bwrap_sha256"] = "0" * 64  # one verdict says another bubblewrap
    verdict_path.write_text(json.dumps(data))
    (subs[0] / "double_def" / "Submission.lean").write_text(correct("double_def") + "\n-- x\n")
    refused = _cli("replay", str(record), *map(str, subs), "--timeout", "99", "--skip-probes",
                   *_tools(bench))
    assert refused.exit_code == 2, refused.output
    assert "bwrap_sha256 of bad/two_plus_two: recorded '" + "0" * 64 in refused.output
    assert "submission_digest of good: recorded" in refused.output
    assert ("--timeout of run: recorded 60, now 99; pass --timeout 60 to replay as recorded"
            in refused.output)
    assert "flagged" not in refused.output  # unchanged pins are not listed


@pytest.mark.slow
@pytest.mark.sandbox
def test_paranoid_turns_a_checker_rejection_into_a_flagged_disagreement(
        bench: Path, outside: Path, copied: Copied) -> None:
    record, subs = copied
    out = outside / "audit"
    result = _replay(str(record), *map(str, subs), "--out", str(out), "--paranoid",
                  *_tools(bench))
    assert result.exit_code == 1, result.output
    doc = _replay_json(out)
    assert doc["paranoid"] is True
    assert doc["counts"] == {"reproduced": 4, "changed": 0, "kernel_disagreement": 1,
                             "not_scored": 0}
    status = {(p["submission"], p["problem"]): p for p in doc["pairs"]}
    flagged = status[("flagged", "two_plus_two")]
    assert flagged["status"] == "kernel_disagreement"
    assert flagged["recorded"]["verdict"] == "accepted"
    assert (flagged["new"]["verdict"], flagged["new"]["reason"]["code"]) == (
        "rejected", "kernel_rejected")
    assert flagged["disagreement"] == ["con-leche kernel rejected the solution"]
    assert flagged["new"]["checker_lines"] == [
        f"{k} kernel {'rejected' if k == 'con-leche' else 'accepts'} the solution"
        for k in PARANOID_ORDER]
    good = status[("good", "two_plus_two")]  # a correct submission stays accepted
    assert (good["status"], good["new"]["verdict"]) == ("reproduced", "accepted")
    assert [c["name"] for c in good["new"]["checkers"]] == list(PARANOID_ORDER)
    assert status[("bad", "two_plus_two")]["status"] == "reproduced"
    assert _argv(out / "good" / "two_plus_two.log")[-1] == "--paranoid"
    assert (out / "summary.json").is_file()
    assert "kernel_disagreement" in result.output and "Traceback" not in result.output
    shown = _cli("report", str(out))
    assert shown.exit_code == 0
    assert "kernel_disagreement flagged/two_plus_two:" in shown.output
    assert "con-leche kernel rejected the solution" in shown.output
    assert "4 reproduced, 1 kernel_disagreement; exit 1" in shown.output
    markdown = _cli("report", str(out), "--format", "markdown").output
    assert "**kernel_disagreement** flagged/two\\_plus\\_two:" in markdown
    no_survivor(outside)


@pytest.mark.slow
@pytest.mark.sandbox
def test_replay_usage_errors(bench: Path, outside: Path, copied: Copied) -> None:
    record, subs = copied
    stranger = make_submission(outside / "other", "stranger", {
        "two_plus_two": {"Submission.lean": correct("two_plus_two")}})
    result = _replay(str(record), str(stranger), *_tools(bench))
    assert result.exit_code == 2 and "(id 'stranger') is not in the record" in result.output
    inside = _replay(str(record), str(subs[0]), "--out", str(record / "x"),
                  *_tools(bench))
    assert inside.exit_code == 2 and "overlap" in inside.output
    empty = outside / "empty"
    empty.mkdir()
    missing = _replay(str(empty), str(subs[0]), *_tools(bench))
    assert missing.exit_code == 2 and "summary.json" in missing.output
    junit = _cli("report", str(record), "--format", "junit")  # a record is still a run
    assert junit.exit_code == 0
    # without --out the report is printed and nothing is left behind
    printed = _replay(str(record), str(subs[2]), *_tools(bench))
    assert printed.exit_code == 0 and "1 reproduced; exit 0" in printed.output
    as_json = _replay(str(record), str(subs[2]), "--json", "-q", *_tools(bench))
    doc = ReplayReport.model_validate_json(as_json.stdout)
    assert (as_json.exit_code, doc.out, doc.counts["reproduced"]) == (0, None, 1)
    assert doc.pairs[0].path is None


@pytest.mark.sandbox
def test_the_replayer_gives_the_disk_written_file_and_intake_limits_itself(
        bench: Path, outside: Path) -> None:
    # A record made with other disk, written-file and intake limits is drift until the
    # replayer states the same limits on its own command line (never taken from the record).
    (good,) = [s for s in _submissions(outside / "subs") if s.name == "good"]
    record = outside / "record"
    limits = ("--disk-limit", "64MiB", "--disk-files", "0", "--max-written-file-bytes", "32MiB",
              "--max-file-bytes", "512KiB")
    made = _cli("run-eval", str(good), "--out", str(record), "--problem", "two_plus_two",
                *AS_RECORDED, *limits, "-q", *_tools(bench))
    assert made.exit_code == 0, made.output
    options = json.loads((record / "summary.json").read_text())["options"]
    assert options["disk_limit"] == 64 << 20 and options["disk_files"] is None
    refused = _replay(str(record), str(good), "--out", str(outside / "r1"), *_tools(bench))
    assert refused.exit_code == 2, refused.output
    # each named by the flag that sets it, with the value to pass (design §5.6)
    for flag in ("--disk-limit 64M", "--disk-files 0", "--max-written-file-bytes 32M",
                 "--max-file-bytes 512K"):
        assert f"pass {flag}" in refused.output or f" {flag} " in refused.output, flag
    assert "option " not in refused.output and "limits" not in refused.output
    assert not (outside / "r1" / "summary.json").exists()
    same = _replay(str(record), str(good), "--out", str(outside / "r2"), *limits,
                   *_tools(bench))
    assert same.exit_code == 0, same.output
    doc = _replay_json(outside / "r2")
    assert doc["drift"] == [] and doc["counts"]["reproduced"] == 1
    no_survivor(outside)
