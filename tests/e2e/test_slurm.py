"""examples/distributed's Slurm recipe on a real one-node Slurm (Debian's slurm-wlm and munge, a
private cluster: tests/support/slurm.py), run as its README says: slurm-submit.sh as written with
the README's sizing for a small node, 3 shards over a batch with correct, rejected and `error`
pairs, whose merged verdicts equal one machine's run-eval pair by pair; a task cancelled before it
runs gives a partial merge that says so (exit 1, every report format names the shard and its
pairs), and re-submitting the same command resumes and completes it. Negative control: the former
afterok chain leaves the merge pending forever after such a cancelled task.

Under CI this must run (a missing Slurm fails); elsewhere it skips with the reason."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from support import correct, make_submission, sh_payload, with_lines
from support.background import harness_env
from support.places import BWRAP_FLOOR, REPO, STANDIN
from support.slurm import Cluster, SlurmUnavailable, one_node_cluster

from lean_eval.scoring import shard
from lean_eval.supervise import process

# Each test takes 10-50 s here (two workers, load 4); the bound is for a machine 4x slower.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

HERE = REPO / "examples" / "distributed"
SHARDS = 3
PAIR_MEMORY = "768M"  # what slurm-score.sbatch derives from the README's --mem=1792M, 1 CPU
# each report format, and what in it marks the batch failed ("red")
FORMATS = {"table": "exit 1", "markdown": "exit code 1", "junit": "<error", "json":
           '"exit_code": 1', "csv": "not_scored", "html": "exit code 1"}
# Generous bounds on events, not measures: the suite runs four workers on two cores.
JOB_LIMIT = 150.0
CONFIG_DIRS = (Path("/etc/slurm"), Path("/etc/munge"))

Pair = tuple[str, str]
SORRY = "namespace Submission\ntheorem two_plus_two : 2 + 2 = 4 := by sorry\nend Submission\n"
BUILD_ERROR = ("namespace Submission\ntheorem two_plus_two : 2 + 2 = 4 := by decide\n"
               "-- standin: build-error\nend Submission\n")
# touches 1 GiB in the sandbox: over the pair's memory limit, so the pair ends `error`
HOG = with_lines("two_plus_two", sh_payload(
    "python3 -c 'b = bytearray(1 << 30); import time; time.sleep(30)'"))
BATCH: dict[str, dict[str, str]] = {
    "alice": {"two_plus_two": correct("two_plus_two"), "double_def": correct("double_def")},
    "bob": {"add_comm_explicit": correct("add_comm_explicit")},
    "carol": {"two_plus_two": SORRY},
    "dave": {"two_plus_two": BUILD_ERROR},
    "erin": {"two_plus_two": HOG},
    "frank": {"widget_instance": correct("widget_instance"), "multi_hole": correct("multi_hole")},
}


def unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"SLURM TEST CANNOT RUN: {reason}")
    pytest.skip(f"SLURM TEST SKIPPED: {reason}")


def config_state() -> dict[str, tuple[int, int, int]]:
    """Every file of the system's Slurm and munge configuration, with its mode, size, mtime."""
    found = {}
    for top in CONFIG_DIRS:
        for path in sorted(top.rglob("*")) if top.is_dir() else ():
            st = path.lstat()
            found[str(path)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return found


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    before = config_state()
    with contextlib.ExitStack() as stack:
        try:
            running = stack.enter_context(one_node_cluster(Path(tempfile.gettempdir())))
        except SlurmUnavailable as exc:
            unavailable(str(exc))
        yield running
    assert config_state() == before  # the system's configuration was neither read nor changed


class Batch(NamedTuple):
    subs: Path
    bench: Path
    env: dict[str, str]
    pairs: list[Pair]  # in input order
    single: list[tuple[str, str, str, str]]  # one machine's (submission, problem, verdict, exec)


def verdicts(summary: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [(p["submission"], p["problem"], p["verdict"], p["execution"])
            for p in summary["pairs"]]


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def batch(cluster: Cluster, bench_copy: Path, outside_module: Path, bwrap: str) -> Batch:
    del bwrap
    lean_eval = Path(sys.executable).parent / "lean-eval"
    if not lean_eval.is_file():
        unavailable(f"no lean-eval beside {sys.executable} for the jobs to run")
    subs = outside_module / "subs"
    pairs = []
    for sid, problems in BATCH.items():
        make_submission(subs, sid, {p: {"Submission.lean": t} for p, t in problems.items()})
        pairs += [(sid, p) for p in problems]
    assert all(shard.select(pairs, k, SHARDS) for k in range(1, SHARDS + 1))  # none empty
    # The jobs' environment is the submitter's (sbatch exports it): lean-eval on PATH, and the
    # stand-in toolchain and this machine's bubblewrap through lean-eval's own variables.
    env = {**harness_env(), **cluster.env,
           "PATH": f"{lean_eval.parent}:{cluster.env['PATH']}",
           "LEAN_EVAL_TOOLCHAIN": str(STANDIN), "LEAN_EVAL_BENCHMARK": str(bench_copy),
           "LEAN_EVAL_ALLOW_BWRAP_VERSION": BWRAP_FLOOR, "LEAN_EVAL_SKIP_PROBES": "1",
           "LEAN_EVAL_TIMEOUT": "120"}
    out = outside_module / "single"
    done = process.run_capture((str(lean_eval), "run-eval", *(str(subs / s) for s in BATCH),
                                "--out", str(out), "--jobs", "1", "--memory-limit", PAIR_MEMORY,
                                "-q"), env=env, cwd=bench_copy, timeout=300)
    single = verdicts(load(out / "summary.json"))
    assert done.returncode == 1, done.stderr.decode()  # the `error` pair
    outcomes = {(s, p): v for s, p, v, _ in single}
    assert outcomes[("alice", "two_plus_two")] == "accepted"
    assert outcomes[("carol", "two_plus_two")] == "rejected"
    assert outcomes[("erin", "two_plus_two")] == "error"
    return Batch(subs, bench_copy, env, pairs, single)


def readme_command() -> list[str]:
    """The README's command for a small node, the one these tests run."""
    text = (HERE / "README.md").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines()
             if line.startswith("examples/distributed/slurm-submit.sh") and "--mem=" in line]
    assert len(lines) == 1, lines
    return shlex.split(lines[0])


def submit(batch: Batch, results: Path, *extra: str, script: Path | None = None
           ) -> tuple[str, str]:
    """The README's command with its paths replaced; the array and merge job ids it printed."""
    places = {"/shared/submissions": str(batch.subs), "/shared/results": str(results)}
    argv = [places.get(word, word) for word in readme_command()]
    assert argv[1] == str(SHARDS) and argv[2:4] == [str(batch.subs), str(results)]
    done = process.run_capture(("bash", str(script or REPO / argv[0]), *argv[1:], *extra),
                               env=batch.env, cwd=batch.bench, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    words = done.stdout.decode().split()  # "shards: job A (array 0-2); merge: job M"
    return words[2], words[words.index("merge:") + 2]


def _log(results: Path) -> str:
    path = results / "merge.out"
    return path.read_text(errors="replace") if path.is_file() else "(no merge.out)"


def cancel_before_it_runs(cluster: Cluster, array: str, merge: str, task: int) -> None:
    """Cancel one task of a held submission, then let the rest run."""
    cluster.client("scancel", f"{array}_{task}")
    cluster.client("scontrol", "release", array)
    cluster.client("scontrol", "release", merge)


def largest_shard(batch: Batch) -> int:
    """The 0-based task whose shard holds the most pairs."""
    return max(range(SHARDS), key=lambda i: len(shard.select(batch.pairs, i + 1, SHARDS)))


def report(batch: Batch, merged: Path, fmt: str) -> str:
    done = process.run_capture((sys.executable, "-m", "lean_eval", "report", str(merged),
                                "--format", fmt), env=batch.env, cwd=batch.bench)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def test_the_recipe_as_written_merges_what_one_machine_scores(
        cluster: Cluster, batch: Batch, outside_module: Path) -> None:
    results = outside_module / "complete"
    array, merge = submit(batch, results)
    job = cluster.wait_ended(merge, JOB_LIMIT)[0]
    tasks = cluster.wait_ended(array, JOB_LIMIT)
    assert len(tasks) == SHARDS
    assert (job["JobState"], job["ExitCode"]) == ("FAILED", "1:0"), _log(results)
    merged = load(results / "merged" / "summary.json")
    assert verdicts(merged) == batch.single  # pair by pair, in the same order
    assert merged["missing_shards"] == [] and merged["not_scored"] == 0
    for sid, pid, verdict, _ in batch.single:
        assert load(results / "merged" / sid / f"{pid}.json")["verdict"] == verdict
    for i in range(SHARDS):  # each task was sized from what Slurm granted
        log = (results / f"shard-{i}.out").read_text()
        assert f"shard {i + 1}/{SHARDS}: --jobs 1 --memory-limit {PAIR_MEMORY}" in log, log
    assert (results / "report.md").is_file() and (results / "junit.xml").is_file()


def test_a_task_cancelled_before_it_runs_gives_a_partial_merge_and_resubmitting_completes_it(
        cluster: Cluster, batch: Batch, outside_module: Path) -> None:
    results = outside_module / "cancelled"
    task = largest_shard(batch)
    chosen = set(shard.select(batch.pairs, task + 1, SHARDS))
    lost = [(s, p) for s, p, _, _ in batch.single if (s, p) in chosen]  # in the batch's order
    array, merge = submit(batch, results, "--hold")
    cancel_before_it_runs(cluster, array, merge, task)
    job = cluster.wait_ended(merge, JOB_LIMIT)[0]
    assert (job["JobState"], job["ExitCode"]) == ("FAILED", "1:0"), _log(results)
    assert not (results / f"shard-{task}").exists()  # it never ran
    merged = load(results / "merged" / "summary.json")
    missing = f"{task + 1}/{SHARDS}"
    assert merged["exit_code"] == 1 and merged["missing_shards"] == [missing]
    assert [(p["submission"], p["problem"]) for p in merged["not_scored_pairs"]] == lost
    assert verdicts(merged) == [v for v in batch.single if (v[0], v[1]) not in lost]
    merge_log = _log(results)
    assert f"shard-{task} (array task {task}) wrote no output" in merge_log
    for fmt, red in FORMATS.items():  # each is red, names the missing shard and its pairs
        text = report(batch, results / "merged", fmt)
        assert red in text and missing in text, (fmt, text)
        for sid, pid in lost:  # markdown escapes the underscores
            assert sid in text and (pid in text or pid.replace("_", "\\_") in text), (fmt, pid)
    assert missing in (results / "report.md").read_text()
    junit = ET.fromstring((results / "junit.xml").read_bytes())  # noqa: S314 - our own output
    assert int(junit.get("errors") or 0) >= len(lost)

    # the same command again: the kept shards resume, the cancelled one runs, the merge is whole
    array, merge = submit(batch, results)
    job = cluster.wait_ended(merge, JOB_LIMIT)[0]
    assert (job["JobState"], job["ExitCode"]) == ("FAILED", "1:0")  # the `error` pair
    merged = load(results / "merged" / "summary.json")
    assert merged["missing_shards"] == [] and merged["not_scored"] == 0
    assert verdicts(merged) == batch.single
    assert merged["reused"] == len(batch.pairs) - len(lost)  # kept, not scored again
    assert not list(results.glob(".merged-*"))


def test_negative_control_the_afterok_chain_never_merges_after_a_cancelled_task(
        cluster: Cluster, batch: Batch, outside_module: Path, tmp_path: Path) -> None:
    old = tmp_path / "afterok"
    shutil.copytree(HERE, old)
    script = old / "slurm-submit.sh"
    text = script.read_text(encoding="utf-8")
    assert text.count('--dependency="afterany:') == 1
    script.write_text(text.replace('--dependency="afterany:', '--dependency="afterok:'),
                      encoding="utf-8")
    results = outside_module / "afterok"
    array, merge = submit(batch, results, "--hold", script=script)
    cancel_before_it_runs(cluster, array, merge, largest_shard(batch))
    cluster.wait_ended(array, JOB_LIMIT)
    deadline = time.monotonic() + 60  # the controller re-evaluates dependencies periodically
    while (state := cluster.job(merge)[0])["Reason"] != "DependencyNeverSatisfied":
        assert time.monotonic() < deadline, state
        time.sleep(0.5)
    try:
        assert state["JobState"] == "PENDING"
        assert not (results / "merged").exists() and not (results / "report.md").exists()
    finally:
        cluster.client("scancel", merge)
