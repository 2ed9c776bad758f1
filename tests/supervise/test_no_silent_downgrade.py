"""No silent downgrade (issue 30 item 4): where the kernel mechanism is there but a pair's group
cannot be made, the pair runs under the watchdog and says so; a value a controller refuses is
found before the run. Stand-in group directories; the real hierarchies in
tests/e2e/test_kernel_limits.py.

Negative control: with ``resources.enforcement`` of before, the pair whose parent group was
removed mid-run ran under the watchdog with nothing kept to warn by (``downgrades`` empty)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lean_eval.errors import ProcessStartError
from lean_eval.supervise import cgroup, cgroup_tree, resources
from lean_eval.supervise.resources import PairLimits


def _parent(tmp_path: Path) -> cgroup.Parent:
    paths = (tmp_path / "memory" / "lean-eval-1-2-3", tmp_path / "pids" / "lean-eval-1-2-3")
    for path in paths:
        path.mkdir(parents=True)
    return cgroup.Parent(cgroup.V1, paths)


def test_a_pair_whose_group_cannot_be_made_mid_run_says_it_ran_under_the_watchdog(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parent = _parent(tmp_path)
    monkeypatch.setattr(cgroup, "cgroup_parent", lambda: parent)
    group, mechanism = resources.enforcement("lake", PairLimits())
    assert mechanism == cgroup.V1 and group is not None  # the parent takes pair groups
    group.remove()
    assert resources.best_effort(PairLimits()) is None  # the run expects the kernel to enforce
    for path in parent.paths:  # then the parent goes (another harness's reclaim, an admin)
        shutil.rmtree(path)
    before = len(resources.downgrades())
    assert resources.enforcement("lake", PairLimits()) == (None, "watchdog")
    found = resources.downgrades()
    assert len(found) == before + 1 and str(parent.paths[0]) in found[-1]
    warning = resources.downgrade_warning("good/two_plus_two")
    assert warning.startswith("good/two_plus_two: limits are best-effort for this pair")
    assert found[-1] in warning
    with pytest.raises(ProcessStartError, match="cannot limit 'lake'"):  # asked for: refused
        resources.enforcement("lake", PairLimits(mechanism=cgroup.V1))


def test_a_value_the_controller_refuses_names_its_option(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parent = _parent(tmp_path)
    monkeypatch.setattr(cgroup, "cgroup_parent", lambda: parent)
    real = cgroup_tree.write_limit

    def pids_max_refuses_millions(path: Path, value: int, which: str) -> None:
        if path.name == "pids.max" and value > 4194304:  # the kernel's PID_MAX_LIMIT
            raise cgroup_tree.LimitRefusedError(which, path.name, value, "Invalid argument")
        real(path, value, which)

    monkeypatch.setattr(cgroup_tree, "write_limit", pids_max_refuses_millions)
    assert resources.refused(PairLimits(1 << 30, 512)) is None
    why = resources.refused(PairLimits(1 << 30, 99999999))
    assert why is not None and why.startswith("--max-processes 99999999: the kernel refuses it")
    assert resources.refused(PairLimits(1 << 30, 99999999, "watchdog")) is None
    monkeypatch.setattr(cgroup, "cgroup_parent", lambda: None)  # no kernel mechanism: nothing
    assert resources.refused(PairLimits(1 << 30, 99999999)) is None
