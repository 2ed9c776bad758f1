"""Re-record the comparator transcripts that tests/fake_runner.py replays.

    PYTHONPATH=$PWD python3 tests/transcripts/record.py          # rewrite tests/transcripts/*.json
    PYTHONPATH=$PWD python3 tests/transcripts/record.py --check  # compare only, write nothing

Each case (``CASES``) is one submission of ``two_plus_two`` scored by ``batch.run_batch`` (the
path ``run-eval`` takes) with the stand-in toolchain and real bubblewrap, through a runner that
wraps the sandboxed one and keeps the outcome Lake's launch ended with. That outcome, with the
run's paths as placeholders, and the verdict the run wrote, are the case's transcript.
``--check`` records every case again and exits 1 when a case's verdict, execution, reason or
phase lines differ from the stored transcript (outputs themselves differ run to run: times,
temporary names). Needs bubblewrap that works here (``tests/conftest.py``'s ``bwrap``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: support, fake_runner

from fake_runner import (
    PROBLEM,
    TRANSCRIPTS,
    Recorder,
    Transcript,
    bench,
    load_transcripts,
    make_submission,
    pair_of,
    recorded,
    tools,
)
from fake_runner import (
    options as run_options,
)
from support import BWRAP_FLOOR, correct

from lean_eval.benchmark.catalog import Catalog
from lean_eval.benchmark.problem import ComparatorConfig
from lean_eval.sandbox import bubblewrap, runner
from lean_eval.scoring import batch, classification
from lean_eval.scoring.arguments import check_ids

HEADER = correct(PROBLEM).split("theorem")[0]
THEOREM = "theorem two_plus_two : 2 + 2 = 4 := by"
BIG = 100_000  # bytes of each helper's body: each olean fits in the case's written-file
# limit of 256 KiB, the Solution export (all four) does not


def _proof(body: str, *lines: str) -> str:
    return "\n".join([HEADER.rstrip(), *lines, f"{THEOREM} {body}", "", "end Submission", ""])


def _export_overflow() -> dict[str, str]:
    """Four helper modules, each small enough to build, whose constants the proof uses, so the
    Solution export (all of them in one file) passes the written-file limit."""
    files = {f"Submission/H{i}.lean": (f'namespace Submission\n\ndef big{i} : String := '
                                       f'"{"x" * BIG}"\n\nend Submission\n') for i in range(4)}
    imports = "".join(f"import Submission.H{i}\n" for i in range(4))
    uses = " ".join(f"have _h{i} := big{i};" for i in range(4))
    files["Submission.lean"] = imports + _proof(f"{uses} decide")
    return files


class Case(NamedTuple):
    name: str
    files: dict[str, str]  # the submission's files of PROBLEM
    options: dict[str, Any]  # RunOptions fields besides out_dir


CASES = (
    Case("accepted", {"Submission.lean": correct(PROBLEM)}, {}),
    Case("rejected_statement", {"Submission.lean": _proof("decide").replace(
        "2 + 2 = 4", "(2 : Nat) + 2 = 4")}, {}),
    Case("rejected_sorry", {"Submission.lean": _proof("sorry")}, {}),
    Case("rejected_axiom", {"Submission.lean": "\n".join([
        HEADER.rstrip(), "axiom cheat : 2 + 2 = 4", "", "theorem two_plus_two : 2 + 2 = 4 := cheat",
        "", "end Submission", ""])}, {}),
    Case("build_error", {"Submission.lean": _proof("decide", "-- standin: build-error")}, {}),
    Case("kernel_rejected", {"Submission.lean": _proof("decide",
                                                       "-- standin: kernel-reject nanoda")}, {}),
    Case("export_failed", _export_overflow(), {"max_written_file_bytes": 256 * 1024}),
    Case("timeout", {"Submission.lean": _proof("decide", "-- standin-io: sleep 30")},
         {"timeout": 3.0}),
    Case("resource_exhausted", {"Submission.lean": _proof("decide", (
        "-- standin-io: python3 -c 'b = bytearray(1 << 30); import time; time.sleep(30)'"))},
        {"memory_limit": 384 << 20}),
)


def record(cases: Sequence[Case], catalog: Catalog, bwrap: bubblewrap.BwrapInfo,
           base: Path) -> list[Transcript]:
    """Score ``cases`` (of one set of options) in one batch under the real sandbox."""
    subs = []
    for case in cases:
        files = {rel: text + (f"\n-- transcript: {case.name}\n"
                              if rel == "Submission.lean" else "")
                 for rel, text in case.files.items()}
        subs.append(make_submission(base / "subs", case.name, {PROBLEM: files}))
    recorder = Recorder(runner.SANDBOXED)
    out = base / "out" / cases[0].name
    options = run_options(out, jobs=2, **cases[0].options)
    batch.run_batch(check_ids(subs), catalog, tools(recorder, bwrap), options,
                    {"PATH": os.environ.get("PATH", "")})
    launched = {pair_of(launch)[0]: (launch, outcome) for launch, outcome in recorder.runs}
    if sorted(launched) != sorted(c.name for c in cases) or len(recorder.runs) != len(cases):
        raise SystemExit(f"launches {sorted(launched)}, expected one per case of {cases}")
    found = []
    for case in cases:
        verdict = json.loads((out / case.name / f"{PROBLEM}.json").read_text(encoding="utf-8"))
        found.append(Transcript(case=case.name, problem=PROBLEM, options=case.options,
                                verdict=verdict["verdict"], execution=verdict["execution"],
                                reason=verdict["reason"]["code"],
                                outcome=recorded(*launched[case.name])))
    return found


def _phases(t: Transcript, config: ComparatorConfig) -> list[str]:
    return [line for line in t.outcome.stdout.splitlines()
            if classification.phase_of(line.strip(), config) is not None]


def record_all(catalog: Catalog, bwrap: bubblewrap.BwrapInfo, base: Path) -> dict[str, Transcript]:
    """Every case recorded afresh under ``base``, by name."""
    groups: dict[str, list[Case]] = {}
    for case in CASES:  # the cases that share their options are scored in one batch
        groups.setdefault(json.dumps(case.options, sort_keys=True), []).append(case)
    return {t.case: t for group in groups.values() for t in record(group, catalog, bwrap, base)}


def drift(fresh: dict[str, Transcript], stored: dict[str, Transcript],
          config: ComparatorConfig) -> list[str]:
    """How ``fresh`` recordings differ from the ``stored`` ones where it matters: the verdict,
    execution, reason and phase lines of each case (outputs differ run to run: times, names)."""
    def gist(t: Transcript) -> tuple[str, str, str, list[str]]:
        return t.verdict, t.execution, t.reason, _phases(t, config)

    return [f"{name}: stored {gist(s) if s else None}, now {gist(t)}"
            for name, t in fresh.items() if (s := stored.get(name)) is None or gist(s) != gist(t)
            ] + [f"{name}: stored, no longer a case" for name in sorted(set(stored) - set(fresh))]


def main(argv: Sequence[str]) -> int:
    check = "--check" in argv
    with tempfile.TemporaryDirectory(prefix="record-transcripts-") as tmp:
        base = Path(tmp)
        # Everything the runs put in the temp dir (scoring roots, Lake's files) goes under base.
        tempfile.tempdir = os.environ["TMPDIR"] = tmp
        catalog = bench(base / "bench")
        bwrap = bubblewrap.resolve_bwrap(None, os.environ, (), BWRAP_FLOOR)
        fresh = record_all(catalog, bwrap, base)
        if check:
            found = drift(fresh, load_transcripts(), catalog.problems[PROBLEM].config)
            for line in found:
                print(line, file=sys.stderr)
            return 1 if found else 0
        TRANSCRIPTS.mkdir(exist_ok=True)
        for name, t in fresh.items():
            (TRANSCRIPTS / f"{name}.json").write_text(t.model_dump_json(indent=1) + "\n",
                                                      encoding="utf-8")
        return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
