"""Every run option with every other (issue 32 item 1): a small batch run by ``run-eval`` under
combinations of ``--sign-key``, ``--fail-on``, ``--json``, ``-j``, ``--shard`` + ``merge``,
an interrupt + resume and ``--exit-zero``, each combination holding the same invariants:

- a signed output verifies (``lean-eval verify``), a merge of signed shards too;
- the process's exit code is every exit code the run prints or records: its console's last
  line, stderr's gate message, ``summary.json`` and the ``--json`` document; and it is the code
  the policy (design §4.5) gives the verdicts;
- a merge of the shards holds the single run's verdicts, and ``report --fail-on`` on it exits
  as its gate says, pairs no shard scored failing it;
- an interrupted run resumed holds a fresh run's verdicts.

The batch: alice's two correct proofs (``accepted``, and must stay so), bob's ``sorry``
(``rejected``) and, unless the combination leaves her out, carol's build that runs out its
deadline (``error``): without her a finished run exits 0 unless its gate says otherwise, which
is where a gate used to rewrite a signed summary. Lake launches are
replayed from real transcripts (``tests/fake_runner.py``): everything else is the real CLI, the
real planning, resume, signing, summary, merge, report and verify, so a combination costs a
few runs of a second or less. The combinations the issue names are pinned below; Hypothesis
draws the rest (a bounded count: the inner loop's profile runs a tenth).
"""

from __future__ import annotations

import json
import os
import re
import signal
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from click.testing import CliRunner, Result
from fake_runner import FakeRunEval, FakeRunner, submission
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import correct, keypair, make_submission
from support.profiles import examples

from lean_eval.cli import main
from lean_eval.records.verdict import TALLY

pytestmark = pytest.mark.timeout(900)

GOOD, WRONG, SLOW = "alice", "bob", "carol"
# what every combination's verdicts must be, by pair
EXPECTED = {(GOOD, "two_plus_two"): "accepted", (GOOD, "double_def"): "accepted",
            (WRONG, "two_plus_two"): "rejected", (SLOW, "two_plus_two"): "error"}
GATES = ("", "rejected", "error", "unchanged", "rejected,invalid,error")
EXIT_IN_TEXT = re.compile(r"\bexit (\d+)\b")


class Combo(NamedTuple):
    """One combination of run-eval's options and of how the batch is run."""

    sign: bool = False
    fail_on: str = ""
    as_json: bool = False
    jobs: int = 1
    mode: str = "single"  # single | shards (2, then merge) | resume (interrupted, then again)
    exit_zero: bool = False
    error_pair: bool = True  # carol (an error pair) is in the batch


class Batch(NamedTuple):
    subs: tuple[Path, ...]  # alice, bob, carol
    private: Path
    public: Path


def _expected(combo: Combo) -> dict[tuple[str, str], str]:
    return {k: v for k, v in EXPECTED.items() if combo.error_pair or k[0] != SLOW}


def _batch(base: Path) -> Batch:
    subs = base / "subs"
    good = make_submission(subs, GOOD, {
        pid: {"Submission.lean": correct(pid) + "\n-- transcript: accepted\n"}
        for pid in ("two_plus_two", "double_def")})
    wrong = submission(subs, WRONG, "rejected_sorry")
    slow = submission(subs, SLOW, "timeout")
    private, public = keypair(base)
    return Batch((good, wrong, slow), private, public)


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _verdicts(out: Path) -> dict[tuple[str, str], tuple[str, str, str]]:
    """(verdict, execution, reason) of every pair, read from its verdict file."""
    summary = json.loads((out / "summary.json").read_text())
    found = {}
    for sub in summary["submissions"]:
        for pid in (*sub["problems"], *sub.get("unchanged", ())):
            path = out / sub["id"] / f"{pid}.json"
            if path.is_file():
                data = json.loads(path.read_text())
                found[(sub["id"], pid)] = (data["verdict"], data["execution"],
                                           data["reason"]["code"])
    return found


def _gate(fail_on: str) -> frozenset[str]:
    return frozenset(k for k in fail_on.split(",") if k)


def _expected_code(out: Path, combo: Combo, interrupted: bool) -> int:
    """The code design §4.5 gives the verdicts in ``out`` under ``combo``."""
    if interrupted:
        return 128 + signal.SIGINT
    if combo.exit_zero:
        return 0
    kinds = [TALLY[v] for v, _, _ in _verdicts(out).values()]
    if "error" in kinds:
        return 1
    return 1 if _gate(combo.fail_on) & set(kinds) else 0


class Matrix:
    """Runs and checks one combination."""

    def __init__(self, fake: FakeRunEval, batch: Batch, base: Path) -> None:
        self.fake, self.batch, self.base = fake, batch, base

    def args(self, combo: Combo, *more: str) -> tuple[str, ...]:
        return (*(("--sign-key", str(self.batch.private)) if combo.sign else ()),
                *(("--fail-on", combo.fail_on) if combo.fail_on else ()),
                *(("--json",) if combo.as_json else ()), "-j", str(combo.jobs),
                *(("--exit-zero",) if combo.exit_zero else ()), *more)

    def run(self, combo: Combo, out: Path, *more: str, interrupt: bool = False) -> int:
        """One run-eval, its invariants checked; its exit code."""
        self.fake.runner = FakeRunner(on_start=_interrupt_once() if interrupt else None)
        subs = self.batch.subs if combo.error_pair else self.batch.subs[:2]
        run = self.fake(*subs, out=out, extra=self.args(combo, *more), quiet=False)
        code = run.code
        said = f"{out.name} {combo}: {run.result.output[-3000:]}"
        assert code == _expected_code(out, combo, interrupt), said
        summary = json.loads((out / "summary.json").read_text())
        assert summary["exit_code"] == code, said
        assert summary["interrupted"] is interrupt, said
        stdout = run.result.stdout
        if combo.as_json:
            document = json.loads(stdout)
            assert document["exit_code"] == code, said
            _counts_agree(document)
        else:
            assert stdout.rstrip("\n").splitlines()[-1].endswith(f"; exit {code}"), said
        printed = [int(n) for n in EXIT_IN_TEXT.findall(run.result.stderr)]
        assert all(n == code for n in printed), said
        if combo.sign:
            self.verify(out)
        return code

    def verify(self, out: Path) -> None:
        result = _cli("verify", str(out), "--key", str(self.batch.public))
        assert result.exit_code == 0, f"{out}: {result.output}"

    def check(self, combo: Combo) -> None:
        where = Path(tempfile.mkdtemp(prefix="combo-", dir=self.base))
        if combo.mode == "single":
            self.run(combo, where / "single")
            assert {k: v[0] for k, v in _verdicts(where / "single").items()} == _expected(combo)
        elif combo.mode == "shards":
            self.shards(combo, where)
        else:
            self.resume(combo, where)

    def shards(self, combo: Combo, where: Path) -> None:
        parts = [where / f"shard{k}" for k in (1, 2)]
        for k, part in enumerate(parts, 1):
            self.run(combo, part, "--shard", f"{k}/2")
        merged = where / "merged"
        result = _cli("merge", *map(str, parts), "--out", str(merged))
        summary = json.loads((merged / "summary.json").read_text())
        assert result.exit_code == summary["exit_code"] == int(combo.error_pair), result.output
        assert {k: v[0] for k, v in _verdicts(merged).items()} == _expected(combo)
        if combo.sign:
            self.verify(merged)
        gate = _gate(combo.fail_on)
        report = _cli("report", str(merged), *(("--fail-on", combo.fail_on) if gate else ()))
        failing = bool(gate & {TALLY[v] for v in _expected(combo).values()})
        assert report.exit_code == int(failing), report.output
        # one shard alone: a partial merge, whose unscored pairs fail every gate
        alone = next((p for p in parts if _verdicts(p)), parts[0])
        partial = where / "partial"
        merged_alone = _cli("merge", str(alone), "--out", str(partial))
        assert merged_alone.exit_code == 1, merged_alone.output  # a shard is missing
        report = _cli("report", str(partial), *(("--fail-on", combo.fail_on) if gate else ()))
        assert report.exit_code == int(bool(gate)), report.output

    def resume(self, combo: Combo, where: Path) -> None:
        out, fresh = where / "resumed", where / "fresh"
        self.run(combo, out, interrupt=True)
        assert len(_verdicts(out)) < len(_expected(combo))  # the interrupt left pairs to score
        self.run(combo, out)
        self.run(combo, fresh)
        assert _verdicts(out) == _verdicts(fresh)
        assert {k: v[0] for k, v in _verdicts(out).items()} == _expected(combo)
        left, right = (json.loads((d / "summary.json").read_text()) for d in (out, fresh))
        for key in ("counts", "exit_code", "pairs", "submissions", "signing_key"):
            assert left[key] == right[key], key


def _interrupt_once() -> Any:
    """An ``on_start`` that sends this process SIGINT when the first pair starts (the run's
    handler, installed in the main thread, stops admission: design §5.5 "Resume")."""
    sent: list[bool] = []

    def send(launch: object) -> None:
        del launch
        if not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)

    return send


def _counts_agree(document: dict[str, Any]) -> None:
    """The public pipeline's counts are those of ``problems``."""
    problems = document["problems"]
    assert document["total_problems"] == len(problems)
    assert document["attempted_problems"] == sum(1 for p in problems if p["attempted"])
    assert document["succeeded_problems"] == sum(1 for p in problems if p["succeeded"])
    assert all(p["attempted"] for p in problems if p["succeeded"])
    assert all(isinstance(p["visible"], bool) for p in problems)


@pytest.fixture
def matrix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Matrix:
    return Matrix(FakeRunEval(FakeRunner(), tmp_path, monkeypatch), _batch(tmp_path), tmp_path)


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
                   mode=st.sampled_from(("single", "shards", "resume")),
                   exit_zero=st.booleans(), error_pair=st.booleans())


@settings(max_examples=examples(40), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(combo=COMBOS)
def test_every_drawn_combination_keeps_every_invariant(matrix: Matrix, combo: Combo) -> None:
    matrix.check(combo)
