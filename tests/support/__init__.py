"""What several test modules share: paths, submission builders, CLI runners, process checks and
one factory for verdicts and run outputs built from the models.

A package, one module per concern: ``places`` (paths, names, the toolchain and bubblewrap of
this machine), ``files`` (benchmarks, submissions, archives, keys), ``runs`` (the CLI run
in-process), ``background`` (a run-eval in a child process, watched from outside), ``leftovers``
(what a finished run left behind), ``kernel_limits`` (which cgroup enforces limits here, and
the groups a run left), ``documents`` (verdicts and run outputs built from the
models), ``layout`` (which tests are end to end and must lie under tests/e2e/) and ``profiles``
(Hypothesis example counts: all of them under CI, a tenth in the inner loop). Fixtures
live in conftest.py; everything here is a plain function or constant, re-exported by this file
and imported as ``from support import ...``. No test module imports another test module or
conftest (tests/meta/test_suite_hygiene.py keeps it so).
"""

from __future__ import annotations

from support.background import (
    harness_env,
    harness_pid,
    in_background,
    run_eval_argv,
    unprivileged_python,
    verdict_files,
    wait_for_verdicts,
)
from support.documents import (
    BATCH,
    BATCH_OUTCOME,
    BATCH_PROBLEMS,
    BATCH_SUBMISSIONS,
    HOSTILE,
    KINDS,
    REJECTION,
    REPORT_IDENTITY,
    REPORT_PAIRS,
    make_identity,
    make_summary,
    make_verdict,
    pair_line,
    report_run,
    report_verdict,
    shards_of,
    write_output,
    write_verdicts,
)
from support.files import (
    SOLVED,
    UPDATE_INDEX,
    changed_benchmark,
    copy_benchmark,
    correct,
    fork_archive,
    good,
    keypair,
    make_submission,
    rehash_trusted,
    sh_payload,
    sleeper,
    solved,
    sparse,
    starter,
    tgz,
    with_lines,
    write_tree,
)
from support.kernel_limits import (
    kernel_mechanism,
    leftover_groups,
    own_parents,
    reclaim_ended,
    require_kernel,
)
from support.layout import E2E, e2e_needs, e2e_uses, in_e2e
from support.leftovers import (
    batch_ok,
    no_survivor,
    processes_with,
    survivors,
    unique_marker,
)
from support.places import (
    BENCHMARK_FILES,
    BWRAP_FLOOR,
    CORRECT,
    LAKE_MASKED,
    PROBLEM,
    PROBLEMS,
    REPO,
    SOURCE,
    STANDIN,
    UNPRIVILEGED,
    outside_problem,
    real_toolchain,
)
from support.profiles import examples
from support.runs import (
    DEFAULT,
    Run,
    RunEval,
    standin_only,
    validate_catalog,
    validate_submission,
)

__all__ = [
    "BATCH",
    "BATCH_OUTCOME",
    "BATCH_PROBLEMS",
    "BATCH_SUBMISSIONS",
    "BENCHMARK_FILES",
    "BWRAP_FLOOR",
    "CORRECT",
    "DEFAULT",
    "E2E",
    "HOSTILE",
    "KINDS",
    "LAKE_MASKED",
    "PROBLEM",
    "PROBLEMS",
    "REJECTION",
    "REPO",
    "REPORT_IDENTITY",
    "REPORT_PAIRS",
    "SOLVED",
    "SOURCE",
    "STANDIN",
    "UNPRIVILEGED",
    "UPDATE_INDEX",
    "Run",
    "RunEval",
    "batch_ok",
    "changed_benchmark",
    "copy_benchmark",
    "correct",
    "e2e_needs",
    "e2e_uses",
    "examples",
    "fork_archive",
    "good",
    "harness_env",
    "harness_pid",
    "in_background",
    "in_e2e",
    "kernel_mechanism",
    "keypair",
    "leftover_groups",
    "make_identity",
    "make_submission",
    "make_summary",
    "make_verdict",
    "no_survivor",
    "outside_problem",
    "own_parents",
    "pair_line",
    "processes_with",
    "real_toolchain",
    "reclaim_ended",
    "rehash_trusted",
    "report_run",
    "report_verdict",
    "require_kernel",
    "run_eval_argv",
    "sh_payload",
    "shards_of",
    "sleeper",
    "solved",
    "sparse",
    "standin_only",
    "starter",
    "survivors",
    "tgz",
    "unique_marker",
    "unprivileged_python",
    "validate_catalog",
    "validate_submission",
    "verdict_files",
    "wait_for_verdicts",
    "with_lines",
    "write_output",
    "write_tree",
    "write_verdicts",
]
