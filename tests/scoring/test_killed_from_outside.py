"""A pair killed with no limit of its reached is ``infrastructure_error``, never
``resource_exhausted`` (issue 30 item 3): where its own cgroup enforced its limits, the group
counts every OOM kill, so a SIGKILL it did not count was sent by a process (another harness's
reclaim, an operator), not by a limit. Negative control: with ``classification._kill_kind``
reverted, every case below that expects ``infrastructure_error`` was ``resource_exhausted``."""

from __future__ import annotations

import signal

import pytest

from lean_eval.benchmark import problem
from lean_eval.scoring import classification
from lean_eval.supervise import process

CONFIG = problem.ComparatorConfig(challenge_module="Challenge", solution_module="Solution",
                                  theorem_names=("t",), permitted_axioms=("propext",))
BUILDING = ("Resolving dependencies\nBuilding Challenge\nExporting #[t] from Challenge\n"
            "Building Solution\n")


def _killed(mechanism: str | None, exceeded: str | None = None, *, sig: int | None = 9,
            returncode: int | None = None, stderr: str = "") -> classification.Classification:
    done = process.ProcessResult(
        returncode=returncode, signal=sig, timed_out=False, duration=1.0,
        stdout=BUILDING.encode(), stderr=stderr.encode(), stdout_truncated=False,
        stderr_truncated=False, orphans_killed=0, limit_exceeded=exceeded,
        limits_mechanism=mechanism)
    return classification.classify(done, CONFIG, 60)


@pytest.mark.parametrize("mechanism", ["cgroup_v1", "cgroup_v2"])
def test_a_sigkill_its_group_did_not_count_is_an_infrastructure_error(mechanism: str) -> None:
    c = _killed(mechanism)
    assert (c.verdict, c.execution, c.reason.code) == (
        "error", "infrastructure_error", "killed_from_outside")
    assert "SIGKILL" in c.reason.message and "no limit of the pair reached" in c.reason.message
    lake_exit = _killed(mechanism, sig=None, returncode=137)  # lake's own exit 128 + 9
    assert lake_exit.execution == "infrastructure_error"
    child = _killed(mechanism, sig=None, returncode=1,  # a child Lake reports as SIGKILLed
                    stderr="error: Solution: lean exited with code -9\nerror: build failed\n"
                           "error: Child exited with 1\n")
    assert (child.verdict, child.execution) == ("error", "infrastructure_error")


@pytest.mark.parametrize("mechanism", ["cgroup_v1", "cgroup_v2"])
def test_a_limit_the_group_enforced_stays_resource_exhausted(mechanism: str) -> None:
    for exceeded in ("memory", "processes"):
        c = _killed(mechanism, exceeded)
        assert (c.verdict, c.execution, c.reason.code) == (
            "error", "resource_exhausted", "resource_limit")
    assert _killed(mechanism, sig=signal.SIGXFSZ).execution == "resource_exhausted"  # rlimit
    assert _killed(mechanism, sig=signal.SIGSEGV).execution == "crashed"


@pytest.mark.parametrize("mechanism", ["watchdog", None])
def test_without_a_group_a_sigkill_may_be_the_oom_killer_s(mechanism: str | None) -> None:
    """The watchdog cannot tell the host's OOM killer from another sender: resource_exhausted,
    as before (SECURITY.md, limits)."""
    assert _killed(mechanism).execution == "resource_exhausted"
