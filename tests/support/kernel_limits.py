"""Which kernel mechanism enforces a pair's limits on this machine, and what cgroups a run left.

Under CI, on a machine whose cgroup v1 ``memory`` and ``pids`` hierarchies (or a delegated v2
subtree) the harness can write, a kernel-mechanism test fails instead of skipping: such a
machine must enforce with the kernel (issue 23)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from lean_eval.supervise import cgroup, cgroup_tree, cgroup_v1


def kernel_mechanism() -> str | None:
    """"cgroup_v2" or "cgroup_v1" as this process's harness enforces with, else None."""
    parent = cgroup.cgroup_parent()
    return None if parent is None else parent.version


def v1_writable() -> bool:
    """Whether this process may make groups in the v1 memory and pids hierarchies."""
    try:
        return all(os.access(cgroup_v1.own_group(c), os.W_OK) for c in cgroup_v1.CONTROLLERS)
    except (OSError, ValueError):
        return False


def require_kernel(version: str | None = None) -> str:
    """The kernel mechanism (``version`` if given): skip without it, fail under CI where the
    machine offers one."""
    found = kernel_mechanism()
    if found is not None and version in (None, found):
        return found
    why = (f"limits are enforced by {found or 'the watchdog'} here, not {version or 'a cgroup'}"
           f" ({cgroup.unavailable_reason() or 'another hierarchy is in use'})")
    if os.environ.get("CI") and found is None and v1_writable():
        pytest.fail(f"cgroup v1 memory and pids are writable, yet {why}")
    pytest.skip(why)


def own_parents() -> list[Path]:
    """Every directory that may hold this machine's harness parent groups."""
    found = []
    with contextlib.suppress(OSError):
        found.append(cgroup.own_cgroup2())
    for controller in cgroup_v1.CONTROLLERS:
        with contextlib.suppress(OSError, ValueError):
            found.append(cgroup_v1.own_group(controller))
    return found


def leftover_groups() -> list[str]:
    """Pair groups left in this process's parent groups: every in-process run removes its
    pairs' groups. (Parents a SIGKILLed harness left, which other tests make on purpose, are
    the next harness's to reclaim: ``reclaim_ended``, and
    tests/e2e/test_kernel_limits.py's reclaiming test.)"""
    left: list[str] = []
    parent = cgroup.cgroup_parent()
    for path in parent.paths if parent is not None else ():
        with contextlib.suppress(OSError):
            left += [str(p) for p in path.iterdir() if p.is_dir()]
    return left


def reclaim_ended() -> list[str]:
    """Reclaim the parent groups of every harness that has ended (what a next run would do):
    the suite's last step, so no group a test made outlives the session. Only groups whose lock
    it can take (``cgroup_tree.reclaim_stale``): never those of a live harness beside the suite,
    in any pid namespace, nor groups of the earlier naming, which carry no lock."""
    return [name for own in own_parents() for name in cgroup_tree.reclaim_stale(own)]
