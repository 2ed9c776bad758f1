"""How the driver starts ``lake comparator`` (design §5.4 step 5; SECURITY.md invariant 23).

The driver decides everything about a launch (:class:`Launch`); a runner only carries it out.
:data:`SANDBOXED` is the package's only runner and the default of both records that carry one
(``scoring.options``, ``scoring.driver``); only tests pass another, to replay recorded
transcripts, and no option, setting or environment variable chooses one.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple, Protocol

from lean_eval.sandbox import wrapper
from lean_eval.supervise import process, resources


class Launch(NamedTuple):
    """One ``lake comparator`` run of one pair, as the driver decided it."""

    argv: tuple[str, ...]
    env: Mapping[str, str]  # all of Lake's environment; COMPARATOR_BWRAP names ``wrapper``
    cwd: Path  # the pair's workspace
    timeout: float
    output_cap: int
    rlimits: Mapping[int, tuple[int, int]]
    limits: resources.PairLimits
    wrapper: Path  # where the wrapper goes (not yet written)
    spec: wrapper.WrapperSpec
    user: tuple[int, int] | None = None  # (uid, gid) Lake runs as (``sandbox.identity``)


class ComparatorRunner(Protocol):
    """Runs one launch to its end and reports how it ended."""

    def run(self, launch: Launch) -> process.ProcessResult:
        """Run ``launch``; its processes are all gone on return."""
        ...


class SandboxedRunner:
    """The wrapper written, then Lake started through ``supervise.process.run``."""

    def run(self, launch: Launch) -> process.ProcessResult:
        wrapper.write_wrapper(launch.wrapper, launch.spec)
        return process.run(launch.argv, env=launch.env, cwd=launch.cwd, timeout=launch.timeout,
                           output_cap=launch.output_cap, rlimits=launch.rlimits,
                           limits=launch.limits, user=launch.user)


SANDBOXED: ComparatorRunner = SandboxedRunner()
