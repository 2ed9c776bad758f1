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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: conftest, fake_runner

from conftest import BWRAP_FLOOR, correct
from fake_runner import (
    PROBLEM,
    TRANSCRIPTS,
    Recorder,
    Transcript,
    bench,
    load_transcripts,
    make_submission,
    recorded,
    tools,
)

from lean_eval import batch, bubblewrap, driver, runner
from lean_eval.catalog import Catalog, ComparatorConfig

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


def record(case: Case, catalog: Catalog, bwrap: bubblewrap.BwrapInfo, base: Path) -> Transcript:
    """Score ``case`` once under the real sandbox; its transcript."""
    files = {rel: text + (f"\n-- transcript: {case.name}\n" if rel == "Submission.lean" else "")
             for rel, text in case.files.items()}
    sub = make_submission(base / "subs", case.name, {PROBLEM: files})
    recorder = Recorder(runner.SANDBOXED)
    run_tools = tools(recorder, bwrap)
    out = base / "out" / case.name
    options = batch.RunOptions(out_dir=out, **{"timeout": 60.0, **case.options})
    batch.run_batch([sub], catalog, run_tools, options, {"PATH": os.environ.get("PATH", "")})
    if len(recorder.runs) != 1:
        raise SystemExit(f"{case.name}: {len(recorder.runs)} launches, expected one")
    launch, outcome = recorder.runs[0]
    verdict = json.loads((out / case.name / f"{PROBLEM}.json").read_text(encoding="utf-8"))
    return Transcript(case=case.name, problem=PROBLEM, options=case.options,
                      verdict=verdict["verdict"], execution=verdict["execution"],
                      reason=verdict["reason"]["code"], outcome=recorded(launch, outcome))


def _phases(t: Transcript, config: ComparatorConfig) -> list[str]:
    return [line for line in t.outcome.stdout.splitlines()
            if driver.phase_of(line.strip(), config) is not None]


def main(argv: Sequence[str]) -> int:
    check = "--check" in argv
    with tempfile.TemporaryDirectory(prefix="record-transcripts-") as tmp:
        base = Path(tmp)
        # Everything the runs put in the temp dir (scoring roots, Lake's files) goes under base.
        tempfile.tempdir = os.environ["TMPDIR"] = tmp
        catalog = bench(base / "bench")
        config = catalog.problems[PROBLEM].config
        bwrap = bubblewrap.resolve_bwrap(None, os.environ, (), BWRAP_FLOOR)
        fresh = {c.name: record(c, catalog, bwrap, base) for c in CASES}
        if not check:
            TRANSCRIPTS.mkdir(exist_ok=True)
            for name, t in fresh.items():
                (TRANSCRIPTS / f"{name}.json").write_text(t.model_dump_json(indent=1) + "\n",
                                                          encoding="utf-8")
            return 0
        stored = load_transcripts()
        drift = [f"{name}: stored {s.verdict}/{s.execution}/{s.reason}, now "
                 f"{t.verdict}/{t.execution}/{t.reason}"
                 for name, t in fresh.items() if (s := stored.get(name)) is None
                 or (s.verdict, s.execution, s.reason, _phases(s, config))
                 != (t.verdict, t.execution, t.reason, _phases(t, config))]
        for line in drift:
            print(line, file=sys.stderr)
        return 1 if drift else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
