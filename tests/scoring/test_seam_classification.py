"""Every recorded comparator transcript, replayed through the batch, gets its verdict and reason;
what the driver hands the runner; the sandboxed runner itself (no bubblewrap anywhere here)."""

from __future__ import annotations

import json
import os
import resource
import stat
from pathlib import Path

import pytest
from fake_runner import (
    PROBLEM,
    FakeRunner,
    catalog,
    load_transcripts,
    options,
    outcome_of,
    score,
    submission,
)
from support import STANDIN

from lean_eval.records.verdict import Mounts
from lean_eval.sandbox import environment, runner, wrapper
from lean_eval.scoring import classification, driver
from lean_eval.supervise import resources

# case: verdict, execution, reason code, last phase, reason message (None: not checked)
EXPECTED = {
    "accepted": ("accepted", "completed", "accepted", "kernel:Lean default",
                 "Your solution is okay!"),
    "rejected_statement": ("rejected", "completed", "statement_mismatch", "export_solution",
                           "Challenge and solution theorem statement do not match: "
                           "'two_plus_two'"),
    "rejected_sorry": ("rejected", "completed", "illegal_axiom", "export_solution",
                       "Illegal axiom detected: 'sorryAx'"),
    "rejected_axiom": ("rejected", "completed", "illegal_axiom", "export_solution",
                       "Illegal axiom detected: 'Submission.cheat'"),
    "build_error": ("rejected", "completed", "build_failed", "build_solution",
                    "Submission.lean:1:0: error: build failed (-- standin: build-error)"),
    "kernel_rejected": ("rejected", "completed", "kernel_rejected", "kernel:Lean default",
                        "nanoda exited with 1"),
    "export_failed": ("rejected", "completed", "export_failed", "export_solution",
                      "Child exited with 1"),
    "timeout": ("error", "timed_out", "timeout", "build_solution",
                "deadline of 60s reached while in phase build_solution"),
    "resource_exhausted": ("error", "resource_exhausted", "resource_limit", "build_solution",
                           "the pair exceeded its memory limit while in phase build_solution"),
}
TRANSCRIPTS = load_transcripts()


def test_every_transcript_is_expected_and_was_classified_so_when_recorded() -> None:
    assert set(TRANSCRIPTS) == set(EXPECTED)
    for case, t in TRANSCRIPTS.items():
        assert (t.verdict, t.execution, t.reason) == EXPECTED[case][:3], case
        assert t.problem == PROBLEM


def test_each_transcript_replayed_through_the_batch_gets_its_verdict(tmp_path: Path) -> None:
    subs = [submission(tmp_path / "subs", case, case) for case in EXPECTED]
    fake = FakeRunner(default=None)
    out = tmp_path / "out"
    summary = score(subs, catalog(), fake, options(out, jobs=2))
    assert sorted(fake.started) == sorted((case, PROBLEM) for case in EXPECTED)
    by_pair = {(launch.cwd.parent.parent.name, launch.cwd.parent.name): launch
               for launch in fake.launches}
    for case, (verdict, execution, reason, phase, message) in EXPECTED.items():
        v = json.loads((out / case / f"{PROBLEM}.json").read_text(encoding="utf-8"))
        assert (v["verdict"], v["execution"], v["reason"]["code"], v["last_phase"]) == (
            verdict, execution, reason, phase), (case, v["reason"])
        assert v["reason"]["message"] == message, case
        replayed = outcome_of(TRANSCRIPTS[case], by_pair[case, PROBLEM])
        assert (v["exit_code"], v["signal"]) == (replayed.returncode, replayed.signal)
        config = catalog().problems[PROBLEM].config
        assert v["timings"]["phases"] == classification.phase_seconds(replayed, config)
        assert v["limits"]["exceeded"] == replayed.limit_exceeded
        assert v["limits"]["mechanism"] == replayed.limits_mechanism
        log = (out / v["log"]["path"]).read_text(encoding="utf-8")
        assert replayed.stdout.decode() in log and replayed.stderr.decode() in log
        assert tuple(v["log"]["tail"]) == tuple(log.splitlines()[-driver.LOG_TAIL_LINES:])
    assert [p.submission for p in summary.pairs] == list(EXPECTED)
    assert summary.counts == {"accepted": 1, "rejected": 6, "invalid_submission": 0,
                              "unchanged": 0, "error": 2}
    assert summary.exit_code == 1  # an infrastructure failure: never a clean run


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_classify_of_each_transcript_alone(case: str, tmp_path: Path) -> None:
    """The pure step, on the replayed outcome: the same verdict as through the batch."""
    launch = runner.Launch(argv=("/tc/bin/lake",), env={}, cwd=tmp_path / "s" / "p" / "workspace",
                           timeout=60.0, output_cap=1, rlimits={},
                           limits=resources.PairLimits(), wrapper=tmp_path / "w",
                           spec=wrapper.WrapperSpec(bwrap=Path("/b")))
    c = classification.classify(outcome_of(TRANSCRIPTS[case], launch),
                                catalog().problems[PROBLEM].config, 60.0)
    assert (c.verdict, c.execution, c.reason.code, c.last_phase, c.reason.message) == \
        EXPECTED[case]


def test_the_driver_decides_the_launch_and_the_runner_only_carries_it_out(
        tmp_path: Path) -> None:
    subs = [submission(tmp_path / "subs", f"s{i}", "accepted") for i in range(2)]
    fake = FakeRunner()
    out = tmp_path / "out"
    score(subs, catalog(), fake, options(out, keep_work=True, jobs=1, timeout=42.0,
                                        work_dir=tmp_path / "work"))
    assert len(fake.launches) == 2
    first, second = fake.launches
    state = first.cwd.parent / "state"
    assert first.argv == (str(STANDIN.resolve() / "bin" / "lake"), "comparator", "--config",
                          str(state / "comparator.json"))
    assert set(first.env) <= set(environment.ENV_ALLOWLIST)
    assert first.env["COMPARATOR_BWRAP"] == str(first.wrapper) == str(state / "bwrap-wrapper")
    assert first.env["TMPDIR"] == str(state / "tmp")
    assert first.timeout == 42.0
    assert first.rlimits[resource.RLIMIT_CORE] == (0, 0)
    assert first.limits.disk_paths == (str(first.cwd), str(state))
    assert "-- transcript: accepted" in (first.cwd / "Submission.lean").read_text()
    forced = json.loads((state / "comparator.json").read_text())
    assert forced["external_kernels"]["nanoda"] == [str(STANDIN.resolve() / "bin" / "nanoda_bin")]
    assert not first.wrapper.exists()  # writing the wrapper is the sandboxed runner's part
    # the run's one mask set: the same record in every launch and in every verdict
    assert first.spec.mounts is second.spec.mounts
    assert first.spec.bwrap == Path("/nonexistent/fake-bwrap")
    verdict = json.loads((out / "s0" / f"{PROBLEM}.json").read_text())
    assert Mounts.model_validate(verdict["mounts"]) == first.spec.mounts


def test_the_sandboxed_runner_writes_the_wrapper_then_runs_the_launch(tmp_path: Path) -> None:
    """The real runner without bubblewrap: its launch is a shell that reads the wrapper."""
    script = tmp_path / "bwrap-wrapper"
    spec = wrapper.WrapperSpec(bwrap=Path("/opt/bw/bwrap"), mounts=Mounts(masks=("/srv/m",)))
    launch = runner.Launch(argv=("/bin/sh", "-c", 'cat "$COMPARATOR_BWRAP"; exit 3'),
                           env={"COMPARATOR_BWRAP": str(script), "PATH": "/usr/bin:/bin"},
                           cwd=tmp_path, timeout=30.0, output_cap=1 << 20,
                           rlimits=driver.pair_rlimits(1 << 20),
                           limits=resources.PairLimits(None, None), wrapper=script, spec=spec)
    outcome = runner.SANDBOXED.run(launch)
    assert outcome.returncode == 3
    assert outcome.stdout.decode() == wrapper.wrapper_text(spec)
    assert stat.S_IMODE(os.stat(script).st_mode) == 0o755  # the sandbox identity runs it
    with pytest.raises(FileExistsError):  # never through what is already there
        runner.SANDBOXED.run(launch)
