"""Per-pair memory and process limits (design §5.5 Limits): cgroup v2 where possible, else the
watchdog; a pair over a limit ends resource_exhausted and nothing of it survives."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from support import (
    RunEval,
    correct,
    kernel_mechanism,
    leftover_groups,
    make_submission,
    no_survivor,
    processes_with,
    sh_payload,
    standin_only,
    unique_marker,
    with_lines,
)

from lean_eval.supervise import cgroup

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

P = "two_plus_two"


def storm(marker: str, count: int = 400) -> str:
    """A fork storm bounded at ``count`` sleepers, so a broken limit cannot harm the machine."""
    return (f"i=0; while [ $i -lt {count} ]; do sleep {marker} & i=$((i+1)); done; wait")


# --- end to end: real bubblewrap, the stand-in, one batch -------------------------------------


@pytest.mark.parametrize("mechanism", ["auto", "watchdog"])
def test_a_hog_and_a_storm_end_resource_exhausted_beside_an_accepted_pair(
        run_eval: RunEval, outside: Path, monkeypatch: pytest.MonkeyPatch, mechanism: str) -> None:
    """Issue 7 item 5 (design §5.5 Limits): run-eval --memory-limit/--max-processes, the payloads
    running inside the sandbox during the Solution build."""
    standin_only(run_eval, "the payloads are -- standin-io: lines")
    if mechanism == "watchdog":  # as on a machine without a usable cgroup v2 group
        monkeypatch.setattr(cgroup, "cgroup_parent", lambda: None)
    expected = (kernel_mechanism() or "watchdog") if mechanism == "auto" else "watchdog"
    marker = unique_marker()
    subs = outside / "subs"
    make_submission(subs, "good", {P: {"Submission.lean": correct(P)}})
    make_submission(subs, "hog", {P: {"Submission.lean": with_lines(P, sh_payload(
        f"python3 -c 'b = bytearray(1 << 30); import time; time.sleep(30)' {marker}"))}})
    make_submission(subs, "storm", {P: {"Submission.lean": with_lines(P, sh_payload(
        storm(marker)))}})
    run = run_eval(subs / "good", subs / "hog", subs / "storm",
                   extra=("--memory-limit", "384M", "--max-processes", "64"))
    output = run.result.output
    assert "Traceback" not in output, output
    assert (run.out / "summary.json").is_file(), output
    good = run.verdict("good", P)
    assert good["verdict"] == "accepted", run.log("good", P)
    limits = good["limits"]
    assert {k: limits[k] for k in ("memory_bytes", "max_processes", "mechanism", "exceeded")} == {
        "memory_bytes": 384 << 20, "max_processes": 64, "mechanism": expected, "exceeded": None}
    for name, which in (("hog", "memory"), ("storm", "processes")):
        v = run.verdict(name, P)
        assert (v["verdict"], v["execution"]) == ("error", "resource_exhausted"), (
            name, v["reason"], run.log(name, P))
        assert v["limits"]["exceeded"] == which and v["limits"]["mechanism"] == expected
    assert run.code == 1  # an infrastructure failure, never a rejection
    deadline = time.monotonic() + 30  # an event with a generous bound, not a fixed delay
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(marker) == []
    assert leftover_groups() == []


# --- shared memory (issue 12 item 2): MAP_SHARED, memfd, /dev/shm ---------------------------


@pytest.mark.parametrize("payload", [
    pytest.param("python3 -c 'import mmap, time; m = mmap.mmap(-1, 1 << 30); "
                 "[m.__setitem__(i, 1) for i in range(0, 1 << 30, 4096)]; time.sleep(30)'",
                 id="map_shared"),
    pytest.param("dd if=/dev/zero of=/dev/shm/fill bs=1M count=1024 2>/dev/null; sleep 30",
                 id="dev_shm"),
])
def test_a_build_touching_a_gib_of_shared_memory_ends_resource_exhausted(
        run_eval: RunEval, outside: Path, monkeypatch: pytest.MonkeyPatch, payload: str) -> None:
    """Issue 12 item 2: 1 GiB through a MAP_SHARED anonymous mapping, or stored in the
    sandbox's own /dev/shm, under --memory-limit 256M and the watchdog; a correct pair beside
    it stays accepted. Negative control (run by hand): with the old measure the pair is
    accepted."""
    standin_only(run_eval, "the payloads are -- standin-io: lines")
    monkeypatch.setattr(cgroup, "cgroup_parent", lambda: None)
    marker = unique_marker()
    subs = outside / "subs"
    make_submission(subs, "good", {P: {"Submission.lean": correct(P)}})
    make_submission(subs, "shm", {P: {"Submission.lean": with_lines(P, sh_payload(
        f"{payload} # {marker}"))}})
    run = run_eval(subs / "good", subs / "shm",
                   extra=("-j", "2", "--memory-limit", "256M"))
    output = run.result.output
    assert "Traceback" not in output, output
    assert (run.out / "summary.json").is_file(), output
    assert run.verdict("good", P)["verdict"] == "accepted", run.log("good", P)
    v = run.verdict("shm", P)
    assert (v["verdict"], v["execution"]) == ("error", "resource_exhausted"), (
        v["reason"], run.log("shm", P))
    assert v["limits"]["exceeded"] == "memory" and v["limits"]["mechanism"] == "watchdog"
    no_survivor(outside)
