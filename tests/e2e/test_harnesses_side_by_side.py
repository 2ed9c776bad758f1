"""Two harnesses at once on one machine, one of them in a pid namespace of its own (a container,
a CI job under ``unshare -p``), as issue 30 item 3 found them: each reclaims only the groups of
a harness that has ended, never the other's, so both correct pairs end ``accepted`` under the
kernel mechanism. The harness started second makes its parent group, reclaiming, while the
first one's pair is held open inside its group (a gated build), in both orders; and this test
process, a third live harness whose parent group is empty meanwhile, keeps it.

Negative control (run by hand with the staleness test of before, a pid looked up in the
caller's /proc, and its ``lean-eval-<pid>-<ticks>`` naming): the namespaced harness's pairs
were SIGKILLed (its pid 1 is the host's init here, started at another time), and the idle
parent group of this process was removed by the namespaced harness, which sees no such pid."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support import (
    PROBLEM,
    RunEval,
    gated,
    good,
    harness_in_namespace,
    in_background,
    in_pid_namespace,
    no_survivor,
    parents_of,
    pid_namespace_problem,
    release,
    require_kernel,
    run_eval_argv,
    standin_only,
    wait_until,
    waiting,
)

from lean_eval.supervise import cgroup

# two harnesses, each waited for (up to 120 s apiece on a loaded machine: a bound, not a claim)
pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="a pid namespace needs root"),
              pytest.mark.timeout(400)]


def _groups(out: Path) -> list[Path]:
    """The parent groups, and their pair groups, of the live harness writing ``out``."""
    found = harness_in_namespace(str(out))
    if found is None:
        return []
    _, namespace, pid = found
    parents = parents_of(namespace, pid)
    return parents + [q for p in parents for q in sorted(p.glob("pair-*"))]


def _seen(work: Path, out: Path) -> Path:
    """``work`` as the live harness writing ``out`` sees it: a harness in a mount namespace of
    its own (``unshare --mount-proc``) mounts each pair's filesystem there (supervise.pair_fs),
    which only its own processes see."""
    found = harness_in_namespace(str(out))
    return work if found is None else Path(f"/proc/{found[0]}/root") / work.relative_to("/")


@pytest.mark.parametrize("first", ["host", "namespace"])
def test_two_harnesses_one_in_its_own_pid_namespace_leave_each_other_alone(
        run_eval: RunEval, outside: Path, first: str) -> None:
    standin_only(run_eval, "gated builds of -- standin-io: lines")
    mechanism = require_kernel()
    problem = pid_namespace_problem()
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(problem)
        pytest.skip(problem)
    order = [first, "namespace" if first == "host" else "host"]
    places = {}
    for who in order:
        subs = outside / who / "subs"
        gated(subs, "held")
        good(subs)
        out, work = outside / who / "out", outside / who / "work"
        argv = run_eval_argv(run_eval, [subs / "held", subs / "good"], out, work, "-j", "2")
        places[who] = (in_pid_namespace(argv) if who == "namespace" else argv, out, work)
    started = []
    try:
        for who in order:
            argv, out, work = places[who]
            started.append(in_background(argv, timeout=600))
            wait_until(f"the {who} harness holds its gated pair in its own group",
                       lambda: waiting(_seen(work, out)) and any(  # noqa: B023 - this iteration
                           p.name.startswith("pair-") for p in _groups(out)))  # noqa: B023
        # The second harness has made its parent group, reclaiming what it may, while the
        # first one's pair was held in its group: nothing of the first was taken.
        first_groups = _groups(places[first][1])
        assert first_groups and all(p.is_dir() for p in first_groups)
        idle = cgroup.cgroup_parent()  # made by require_kernel, before either harness started
        assert idle is not None and all(p.is_dir() for p in idle.paths)
    finally:
        for _, out, work in places.values():
            release(_seen(work, out))
        for thread, _ in started:
            thread.join()
    for (who, (_, out, _)), (_, outcomes) in zip(places.items(), started, strict=True):
        assert outcomes and outcomes[0].returncode == 0, (who, outcomes)
        for sub in ("held", "good"):
            found = json.loads((out / sub / f"{PROBLEM}.json").read_text())
            assert (found["verdict"], found["limits"]["mechanism"]) == ("accepted", mechanism), (
                who, sub, found["execution"], found["reason"])
    no_survivor(outside)
