"""A few of the option matrix's combinations (``support/matrix.py``) end to end: each run-eval a
child process under real bubblewrap and the stand-in toolchain, carol's build really going over
its memory limit (``error``, whatever the machine's speed: no deadline is tight), and the
interrupt a real SIGINT sent once the first verdict is on disk.
``tests/cli/test_option_matrix.py`` runs every combination with replayed Lake launches."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest
from support import (
    BWRAP_FLOOR,
    REPO,
    STANDIN,
    correct,
    harness_env,
    harness_pid,
    in_background,
    keypair,
    make_submission,
    sh_payload,
    wait_for_verdicts,
    with_lines,
)
from support.matrix import GOOD, SLOW, WRONG, Batch, Combo, Ended, Matrix

from lean_eval.supervise import process

pytestmark = pytest.mark.timeout(900)
SORRY = "namespace Submission\ntheorem two_plus_two : 2 + 2 = 4 := by sorry\nend Submission\n"
# carol's build holds 1 GiB, four times --memory-limit, until the limit ends it
HOG = "python3 -c 'import time; hog = bytearray(1 << 30); time.sleep(300)'"


@pytest.fixture
def matrix(outside: Path, bench_copy: Path, bwrap: str) -> Matrix:
    del bwrap
    subs = outside / "subs"
    good = make_submission(subs, GOOD, {pid: {"Submission.lean": correct(pid)}
                                        for pid in ("two_plus_two", "double_def")})
    wrong = make_submission(subs, WRONG, {"two_plus_two": {"Submission.lean": SORRY}})
    slow = make_submission(subs, SLOW, {"two_plus_two": {
        "Submission.lean": with_lines("two_plus_two", sh_payload(HOG))}})
    private, public = keypair(outside)

    def invoke(inputs: tuple[Path, ...], out: Path, extra: tuple[str, ...],
               interrupt: bool) -> Ended:
        argv = (sys.executable, "-m", "lean_eval", "run-eval", *map(str, inputs), "--out",
                str(out), "--benchmark", str(bench_copy), "--toolchain", str(STANDIN),
                "--timeout", "240", "--memory-limit", "256M", "--skip-probes",
                "--allow-bwrap-version", BWRAP_FLOOR, *extra)
        if interrupt:
            thread, outcomes = in_background(argv, timeout=300, grace=60)
            wait_for_verdicts(out, 1, thread, outcomes)
            pid = harness_pid(str(out))
            assert pid is not None
            os.kill(pid, signal.SIGINT)
            thread.join(120)
            assert outcomes, "the interrupted run did not end"
            done = outcomes[0]
        else:
            done = process.run_capture(argv, env=harness_env(), cwd=REPO, timeout=300)
        return Ended(done.returncode if done.returncode is not None else -1,
                     done.stdout.decode(), done.stderr.decode())

    return Matrix(invoke, Batch((good, wrong, slow), private, public), outside)


COMBOS = {
    "signed, --fail-on, -j 2": Combo(sign=True, fail_on="rejected", jobs=2, error_pair=False),
    "signed, interrupted, resumed with --fail-on": Combo(sign=True, fail_on="rejected",
                                                          mode="resume", error_pair=False),
    "signed shards, --json, --exit-zero over --fail-on, merged": Combo(
        sign=True, fail_on="rejected,invalid,error", as_json=True, exit_zero=True,
        mode="shards"),
}


@pytest.mark.parametrize("combo", COMBOS.values(), ids=COMBOS.keys())
def test_a_combination_keeps_every_invariant_under_bubblewrap(matrix: Matrix,
                                                              combo: Combo) -> None:
    matrix.check(combo)
