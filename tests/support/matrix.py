"""Run-eval's options as a matrix (issue 32 item 1): one combination run and checked, whatever
runs the pairs (replayed transcripts in ``tests/cli/test_option_matrix.py``, real bubblewrap in
``tests/e2e/test_option_matrix_e2e.py``). Every combination keeps these invariants:

- a signed output verifies (``lean-eval verify``), a merge of signed shards too;
- the process's exit code is every exit code the run prints or records: its console's last
  line, stderr's gate message, ``summary.json`` and the ``--json`` document; and it is the code
  design §4.5 gives the verdicts under the combination;
- a merge of the shards holds the single run's verdicts, and ``report --fail-on`` on it exits
  as its gate says, the pairs no shard scored failing it;
- an interrupted run resumed holds a fresh run's verdicts.

The batch: alice's two correct proofs (``accepted``, and must stay so), bob's ``sorry``
(``rejected``) and, unless the combination leaves her out, carol's build that runs out its
deadline (``error``): without her a finished run exits 0 unless its gate says otherwise, which
is where a gate used to rewrite a signed summary.
"""

from __future__ import annotations

import json
import re
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from click.testing import CliRunner, Result

from lean_eval.cli import main
from lean_eval.records.verdict import TALLY

GOOD, WRONG, SLOW = "alice", "bob", "carol"
# what every combination's verdicts must be, by pair
EXPECTED = {(GOOD, "two_plus_two"): "accepted", (GOOD, "double_def"): "accepted",
            (WRONG, "two_plus_two"): "rejected", (SLOW, "two_plus_two"): "error"}
GATES = ("", "rejected", "error", "unchanged", "rejected,invalid,error")
MODES = ("single", "shards", "resume")
_EXIT_IN_TEXT = re.compile(r"(?<!recorded )\bexit (\d+)\b")  # a code the process says it returns


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
    private: Path  # the signing key
    public: Path


class Ended(NamedTuple):
    """How one run-eval ended."""

    code: int
    stdout: str
    stderr: str


# (submissions, --out, options, interrupt once the first pair started) -> how it ended
Invoke = Callable[[tuple[Path, ...], Path, tuple[str, ...], bool], Ended]


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def said_codes(result: Result) -> set[int]:
    """Every exit code a command's output says it returns."""
    return {int(n) for n in _EXIT_IN_TEXT.findall(result.output)}


def expected(combo: Combo) -> dict[tuple[str, str], str]:
    return {k: v for k, v in EXPECTED.items() if combo.error_pair or k[0] != SLOW}


def verdicts(out: Path) -> dict[tuple[str, str], tuple[str, str, str]]:
    """(verdict, execution, reason) of every pair the summary lists, from its verdict file."""
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


def _kinds(out: Path) -> dict[tuple[str, str], str]:
    return {k: v[0] for k, v in verdicts(out).items()}


def gate(fail_on: str) -> frozenset[str]:
    return frozenset(k for k in fail_on.split(",") if k)


def expected_code(out: Path, combo: Combo, interrupted: bool) -> int:
    """The code design §4.5 gives the verdicts in ``out`` under ``combo``."""
    if interrupted:
        return 128 + signal.SIGINT
    if combo.exit_zero:
        return 0
    kinds = [TALLY[v] for v, _, _ in verdicts(out).values()]
    if "error" in kinds:
        return 1
    return 1 if gate(combo.fail_on) & set(kinds) else 0


def counts_agree(document: dict[str, Any]) -> None:
    """The public pipeline's counts are those of ``problems``."""
    problems = document["problems"]
    assert document["total_problems"] == len(problems)
    assert document["attempted_problems"] == sum(1 for p in problems if p["attempted"])
    assert document["succeeded_problems"] == sum(1 for p in problems if p["succeeded"])
    assert all(p["attempted"] for p in problems if p["succeeded"])
    assert all(isinstance(p["visible"], bool) for p in problems)


class Matrix:
    """Runs and checks one combination; ``invoke`` runs run-eval (not quiet)."""

    def __init__(self, invoke: Invoke, batch: Batch, base: Path) -> None:
        self.run_eval, self.batch, self.base = invoke, batch, base

    def args(self, combo: Combo, *more: str) -> tuple[str, ...]:
        return (*(("--sign-key", str(self.batch.private)) if combo.sign else ()),
                *(("--fail-on", combo.fail_on) if combo.fail_on else ()),
                *(("--json",) if combo.as_json else ()), "-j", str(combo.jobs),
                *(("--exit-zero",) if combo.exit_zero else ()), *more)

    def run(self, combo: Combo, out: Path, *more: str, interrupt: bool = False) -> int:
        """One run-eval, its invariants checked; its exit code."""
        subs = self.batch.subs if combo.error_pair else self.batch.subs[:2]
        ended = self.run_eval(subs, out, self.args(combo, *more), interrupt)
        code = ended.code
        said = f"{out.name} {combo}: {ended.stdout[-2000:]}{ended.stderr[-2000:]}"
        assert code == expected_code(out, combo, interrupt), said
        summary = json.loads((out / "summary.json").read_text())
        assert summary["exit_code"] == code, said
        assert summary["interrupted"] is interrupt, said
        if combo.as_json:
            document = json.loads(ended.stdout)
            assert document["exit_code"] == code, said
            counts_agree(document)
        else:
            assert ended.stdout.rstrip("\n").splitlines()[-1].endswith(f"; exit {code}"), said
        printed = [int(n) for n in _EXIT_IN_TEXT.findall(ended.stderr)]
        assert all(n == code for n in printed), said
        if combo.sign:
            self.verify(out)
        return code

    def verify(self, out: Path) -> None:
        result = cli("verify", str(out), "--key", str(self.batch.public))
        assert result.exit_code == 0, f"{out}: {result.output}"

    def check(self, combo: Combo) -> None:
        where = Path(tempfile.mkdtemp(prefix="combo-", dir=self.base))
        if combo.mode == "single":
            self.run(combo, where / "single")
            assert _kinds(where / "single") == expected(combo)
        elif combo.mode == "shards":
            self.shards(combo, where)
        else:
            self.resume(combo, where)

    def shards(self, combo: Combo, where: Path) -> None:
        parts = [where / f"shard{k}" for k in (1, 2)]
        for k, part in enumerate(parts, 1):
            self.run(combo, part, "--shard", f"{k}/2")
        merged = where / "merged"
        result = cli("merge", *map(str, parts), "--out", str(merged))
        summary = json.loads((merged / "summary.json").read_text())
        assert result.exit_code == summary["exit_code"] == int(combo.error_pair), result.output
        assert _kinds(merged) == expected(combo)
        if combo.sign:
            self.verify(merged)
        kinds = gate(combo.fail_on)
        report = cli("report", str(merged), *(("--fail-on", combo.fail_on) if kinds else ()))
        failing = bool(kinds & {TALLY[v] for v in expected(combo).values()})
        assert report.exit_code == int(failing), report.output
        assert said_codes(report) <= {report.exit_code}, report.output
        # one shard alone: a partial merge, whose unscored pairs fail every gate
        alone = next((p for p in parts if verdicts(p)), parts[0])
        partial = where / "partial"
        merged_alone = cli("merge", str(alone), "--out", str(partial))
        assert merged_alone.exit_code == 1, merged_alone.output  # a shard is missing
        report = cli("report", str(partial), *(("--fail-on", combo.fail_on) if kinds else ()))
        assert report.exit_code == int(bool(kinds)), report.output
        assert said_codes(report) <= {report.exit_code}, report.output

    def resume(self, combo: Combo, where: Path) -> None:
        out, fresh = where / "resumed", where / "fresh"
        self.run(combo, out, interrupt=True)
        assert len(verdicts(out)) < len(expected(combo))  # the interrupt left pairs to score
        self.run(combo, out)
        self.run(combo, fresh)
        assert verdicts(out) == verdicts(fresh)
        assert _kinds(out) == expected(combo)
        left, right = (json.loads((d / "summary.json").read_text()) for d in (out, fresh))
        for key in ("counts", "exit_code", "pairs", "submissions", "signing_key"):
            assert left[key] == right[key], key
