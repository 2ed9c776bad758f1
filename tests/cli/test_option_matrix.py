"""Every run option with every other (issue 32 item 1): the batch and the invariants of
``support/matrix.py`` under combinations of ``--sign-key``, ``--fail-on``, ``--json``, ``-j``,
``--shard`` + ``merge``, an interrupt + resume and ``--exit-zero``.

Lake launches are replayed from real transcripts (``tests/fake_runner.py``; carol's is a real
timeout): everything else is the real CLI, planning, resume, signing, summary, merge, report
and verify, so a combination costs a few runs of a fraction of a second. The combinations the
issues name are pinned; Hypothesis draws the rest (a bounded count: the inner loop's profile
runs a tenth). ``tests/e2e/test_option_matrix_e2e.py`` runs a few under real bubblewrap.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from fake_runner import FakeRunEval, FakeRunner, submission
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import correct, keypair, make_submission
from support.matrix import GATES, GOOD, MODES, SLOW, WRONG, Batch, Combo, Ended, Matrix
from support.profiles import examples

from lean_eval.sandbox.runner import Launch

pytestmark = pytest.mark.timeout(900)


def _batch(base: Path) -> Batch:
    subs = base / "subs"
    good = make_submission(subs, GOOD, {
        pid: {"Submission.lean": correct(pid) + "\n-- transcript: accepted\n"}
        for pid in ("two_plus_two", "double_def")})
    private, public = keypair(base)
    return Batch((good, submission(subs, WRONG, "rejected_sorry"),
                  submission(subs, SLOW, "timeout")), private, public)


def _interrupt_once() -> Callable[[Launch], None]:
    """An ``on_start`` that sends this process SIGINT when the first pair starts (the run's
    handler, installed in the main thread, stops admission: design §5.5 "Resume")."""
    sent: list[bool] = []

    def send(launch: Launch) -> None:
        del launch
        if not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)

    return send


@pytest.fixture
def matrix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Matrix:
    fake = FakeRunEval(FakeRunner(), tmp_path, monkeypatch)

    def invoke(subs: tuple[Path, ...], out: Path, extra: tuple[str, ...],
               interrupt: bool) -> Ended:
        fake.runner = FakeRunner(on_start=_interrupt_once() if interrupt else None)
        run = fake(*subs, out=out, extra=extra, quiet=False)
        return Ended(run.code, run.result.stdout, run.result.stderr)

    return Matrix(invoke, _batch(tmp_path), tmp_path)


# The combinations issue 32 names: each failed its own verify, or its report's gate, before.
NAMED = {
    "signed, --fail-on": Combo(sign=True, fail_on="rejected", error_pair=False),
    "signed, --fail-on, --json": Combo(sign=True, fail_on="rejected", as_json=True,
                                       error_pair=False),
    "signed, --fail-on, -j 2": Combo(sign=True, fail_on="rejected,invalid,error", jobs=2,
                                     error_pair=False),
    "signed, interrupted, resumed with --fail-on": Combo(sign=True, fail_on="rejected",
                                                          mode="resume", error_pair=False),
    "signed shards, merged, report --fail-on": Combo(sign=True, fail_on="rejected,invalid,error",
                                                    mode="shards"),
    "signed, --fail-on, an error pair": Combo(sign=True, fail_on="rejected", jobs=2),
    "signed, --exit-zero over --fail-on": Combo(sign=True, fail_on="rejected", exit_zero=True,
                                                as_json=True),
    "interrupted under --exit-zero keeps 130": Combo(exit_zero=True, mode="resume", jobs=2),
}


@pytest.mark.parametrize("combo", NAMED.values(), ids=NAMED.keys())
def test_a_named_combination_keeps_every_invariant(matrix: Matrix, combo: Combo) -> None:
    matrix.check(combo)


COMBOS = st.builds(Combo, sign=st.booleans(), fail_on=st.sampled_from(GATES),
                   as_json=st.booleans(), jobs=st.sampled_from((1, 2)),
                   mode=st.sampled_from(MODES), exit_zero=st.booleans(),
                   error_pair=st.booleans())


@settings(max_examples=examples(40), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(combo=COMBOS)
def test_every_drawn_combination_keeps_every_invariant(matrix: Matrix, combo: Combo) -> None:
    matrix.check(combo)
