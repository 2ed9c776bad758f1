"""End-to-end self-checks: generated submissions to the benchmark's ``two_plus_two`` scored
through the real pipeline, so a failure is the installation's, never a proof's. The
``SelfCheckReport`` that ``--json`` prints is built here and nowhere else."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from lean_eval.benchmark.catalog import Catalog
from lean_eval.errors import CatalogError
from lean_eval.records.documents import SelfCheckFinding, SelfCheckReport
from lean_eval.records.verdict import Verdict
from lean_eval.scoring import batch
from lean_eval.scoring.arguments import check_ids
from lean_eval.scoring.options import RunOptions, Tools

PROBLEM = "two_plus_two"
KNOWN_GOOD = """-- lean-eval self-check: a known-good proof.
namespace Submission

theorem two_plus_two : 2 + 2 = 4 := by decide

end Submission
"""


def _variant(body: str, *extra: str) -> str:
    lines = ["-- lean-eval self-check", "namespace Submission", "", body, "", "end Submission",
             *extra]
    return "\n".join(lines) + "\n"


OBVIOUSLY_WRONG = _variant("theorem two_plus_two : 2 + 2 = 4 := by sorry")


class Expectation(NamedTuple):
    """What one generated submission must score, and its own deadline (None: ``--timeout``)."""

    verdicts: frozenset[str]
    reasons: frozenset[str]
    seconds: float | None = None


class SelfCheck(NamedTuple):
    report: SelfCheckReport
    where: Path  # submissions, verdicts and logs; removed when the check passed

    @property
    def ok(self) -> bool:
        return self.report.ok


def _finding(submission: str, expected: Expectation, verdict: Verdict | None
             ) -> SelfCheckFinding:
    got, reason, message = (verdict.verdict, verdict.reason.code, verdict.reason.message) \
        if verdict else ("missing", "missing", "no verdict was written")
    return SelfCheckFinding(
        submission=submission, ok=got in expected.verdicts and reason in expected.reasons,
        verdict=got, reason=reason, message=message,
        expected_verdicts=tuple(sorted(expected.verdicts)),
        expected_reasons=tuple(sorted(expected.reasons)))


def _expect(verdict: str, *reasons: str, seconds: float | None = None) -> Expectation:
    return Expectation(frozenset({verdict}), frozenset(reasons), seconds)


# The infrastructure-failure case: a correct proof whose build never ends (a Lean `#eval` that
# sleeps, and the stand-in's model of it), scored under a short deadline of its own. It must
# end `error`/`timeout` however fast the machine is; an installation that turns a hang into a
# verdict on the proof (or never stops it) fails the check.
HANG_SECONDS = 5.0
HANG = _variant("theorem two_plus_two : 2 + 2 = 4 := by decide",
                "-- standin-io: sleep 3600", "#eval IO.sleep 3600000")


# name -> (Submission.lean or None for a symlink, expectation)
WORKFLOW: dict[str, tuple[str | None, Expectation]] = {
    "wf_accepted": (KNOWN_GOOD, _expect("accepted", "accepted")),
    # Real Lean fails the trusted bridge's build on a changed statement; the stand-in reports
    # the comparator's mismatch. Both are rejections of the proof.
    "wf_mismatch": (_variant("theorem two_plus_two : 2 + 2 = 5 := by decide"),
                    _expect("rejected", "statement_mismatch", "build_failed")),
    "wf_sorry": (OBVIOUSLY_WRONG, _expect("rejected", "illegal_axiom")),
    "wf_axiom": (_variant("axiom cheat : 2 + 2 = 4\n\ntheorem two_plus_two : 2 + 2 = 4 := cheat"),
                 _expect("rejected", "illegal_axiom")),
    "wf_native_decide": (_variant("theorem two_plus_two : 2 + 2 = 4 := by native_decide"),
                         _expect("rejected", "illegal_axiom")),
    "wf_build_error": (_variant("theorem two_plus_two : 2 + 2 = 4 := by decide",
                                "-- standin: build-error",
                                "example : True := by exact no_such_lemma"),
                       _expect("rejected", "build_failed")),
    "wf_invalid": (None, _expect("invalid_submission", "path_rejected")),
    "wf_unchanged": ("", _expect("unchanged", "unchanged")),
    "wf_timeout": (HANG, _expect("error", "timeout", seconds=HANG_SECONDS)),
}


def _write(root: Path, name: str, text: str | None, starter: bytes) -> Path:
    problem_dir = root / name / PROBLEM
    problem_dir.mkdir(parents=True)
    target = problem_dir / "Submission.lean"
    if text is None:
        (problem_dir / "elsewhere.lean").write_text(KNOWN_GOOD, encoding="utf-8")
        os.symlink("elsewhere.lean", target)
    elif text == "":
        target.write_bytes(starter)
    else:
        target.write_text(text, encoding="utf-8")
    return root / name


def _starter(catalog: Catalog) -> bytes:
    if PROBLEM not in catalog.problems:
        raise CatalogError(f"the self-checks need the starter problem {PROBLEM!r} in the benchmark")
    return catalog.problems[PROBLEM].starter["Submission.lean"]


def _score(check: str, catalog: Catalog, tools: Tools, caller_env: Mapping[str, str],
           cases: Mapping[str, tuple[str | None, Expectation]], work: Path | None,
           timeout: float) -> SelfCheck:
    starter = _starter(catalog)
    only = catalog.model_copy(update={"problems": {PROBLEM: catalog.problems[PROBLEM]}})
    base = Path(tempfile.mkdtemp(prefix="lean-eval-selfcheck-", dir=work))
    base.chmod(0o711)  # the sandbox identity passes it to its pairs, lists nothing
    # One batch per deadline: the cases with their own (the hang) beside the others.
    deadlines = sorted({e.seconds for _, e in cases.values()}, key=lambda d: d is not None)
    by_name: dict[str, Verdict] = {}
    counts: dict[str, int] = {}
    for number, seconds in enumerate(deadlines):
        names = [name for name, (_, e) in cases.items() if e.seconds == seconds]
        inputs = [_write(base / "subs", name, cases[name][0], starter) for name in names]
        options = RunOptions(out_dir=base / f"out{number or ''}", work_dir=base / "work",
                             timeout=timeout if seconds is None else min(timeout, seconds))
        summary = batch.run_batch(check_ids(inputs), only, tools, options, caller_env)
        for pair in summary.every_pair():
            # summary paths are relative to --out (absolute ones are kept as they are)
            by_name[pair.submission] = Verdict.model_validate_json(
                Path(options.out_dir, pair.path).read_bytes())
        for kind, n in summary.counts.items():
            if n:  # the summary lists zeros
                counts[kind] = counts.get(kind, 0) + n
    findings = tuple(_finding(name, expected, by_name.get(name))
                     for name, (_, expected) in cases.items())
    expected_counts: dict[str, int] = {}
    for _, expectation in cases.values():
        (verdict,) = expectation.verdicts
        expected_counts[verdict] = expected_counts.get(verdict, 0) + 1
    counts = dict(sorted(counts.items()))
    expected_counts = dict(sorted(expected_counts.items()))
    ok = all(f.ok for f in findings) and counts == expected_counts
    report = SelfCheckReport(check=check, ok=ok, counts=counts, expected_counts=expected_counts,
                             where=None if ok else str(base), findings=findings)
    if ok:
        shutil.rmtree(base, ignore_errors=True)
    return SelfCheck(report, base)


def check_comparator_installation(catalog: Catalog, tools: Tools,
                                  caller_env: Mapping[str, str], work: Path | None = None,
                                  timeout: float = 600) -> SelfCheck:
    """The starter problem accepted with a known-good proof and rejected with a wrong one."""
    cases = {"known_good": (KNOWN_GOOD, _expect("accepted", "accepted")),
             "obviously_wrong": (OBVIOUSLY_WRONG, _expect("rejected", "illegal_axiom"))}
    return _score("check-comparator-installation", catalog, tools, caller_env, cases, work,
                  timeout)


def check_eval_workflow(catalog: Catalog, tools: Tools, caller_env: Mapping[str, str],
                        work: Path | None = None, timeout: float = 600) -> SelfCheck:
    """A generated batch covering every verdict kind (``WORKFLOW``), ``error`` included."""
    return _score("check-eval-workflow", catalog, tools, caller_env, WORKFLOW, work, timeout)
