"""A comparator runner for tests that replays recorded transcripts: no bubblewrap, no process.

A transcript (``tests/transcripts/<case>.json``) is one real ``lake comparator`` run of the
stand-in toolchain under real bubblewrap, as the driver received it
(:class:`process.ProcessResult`: exit status, signal, deadline, captured output, line times, the
limit that ended it and the limits mechanism), with the paths of that run replaced by
placeholders, and the verdict the real run gave it. :class:`FakeRunner` hands the driver such a
result for every launch, so a whole batch runs through ``batch.run_batch`` (planning,
admission, resume, the driver's classification, the log, the limits record, verdicts and the
summary) in milliseconds.

Which transcript a launch replays: ``pick`` (default: the ``-- transcript: <case>`` line of a
submitted ``.lean`` file in the pair's workspace, see :func:`submission`; :func:`by_pair` names
cases by pair; else ``default``). The runner reaches the driver the way every run's does, in
``Tools.runner``: :func:`score` calls ``batch.run_batch`` with it; :class:`FakeRunEval` runs the
``run-eval`` command itself, its tool resolution patched to hand over the runner.

Re-record every transcript after a change of the stand-in or of what the driver passes Lake:

    PYTHONPATH=$PWD python3 tests/transcripts/record.py          # rewrite tests/transcripts/
    PYTHONPATH=$PWD python3 tests/transcripts/record.py --check  # compare, write nothing

(real bubblewrap needed; ``tests/e2e/test_seam_transcripts.py`` runs the check under the
``sandbox`` marker).
"""

from __future__ import annotations

import functools
import hashlib
import re
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic import BaseModel, ConfigDict
from support import REPO, STANDIN, Run, copy_benchmark, correct, make_submission

from lean_eval.benchmark.catalog import Catalog
from lean_eval.benchmark.checkout import load
from lean_eval.benchmark.toolchain import resolve_toolchain
from lean_eval.cli import main
from lean_eval.records.verdict import Preflight, Summary, Verdict
from lean_eval.sandbox import bubblewrap
from lean_eval.sandbox.runner import ComparatorRunner, Launch
from lean_eval.scoring import batch, setup
from lean_eval.scoring.arguments import check_ids
from lean_eval.scoring.options import RunOptions, Tools, not_probed
from lean_eval.scoring.scheduler import Progress
from lean_eval.supervise import process
from lean_eval.supervise.resources import PairLimits

TRANSCRIPTS = REPO / "tests" / "transcripts"
PROBLEM = "two_plus_two"  # every transcript is of this problem's workspace
MARKER = re.compile(r"^-- transcript: (?P<case>[a-z_]+)$", re.MULTILINE)
# The paths of the recorded run, written as these in a transcript and put back on replay
PAIR, TOOLCHAIN = "{pair}", "{toolchain}"


class Recorded(BaseModel):
    """How one comparator run ended (the fields of :class:`process.ProcessResult`), as text."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    returncode: int | None
    signal: int | None
    timed_out: bool
    duration: float
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    orphans_killed: int
    line_marks: tuple[tuple[float, str], ...]
    limit_exceeded: str | None
    limits_mechanism: str | None


class Transcript(BaseModel):
    """One recorded case: what was scored, how Lake ended, and what the real run decided."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case: str
    problem: str
    options: dict[str, Any]  # the RunOptions fields the recording changed
    verdict: str
    execution: str
    reason: str
    outcome: Recorded


def _put(text: str, pair: Path, toolchain: Path) -> str:
    return text.replace(PAIR, str(pair)).replace(TOOLCHAIN, str(toolchain))


def _take(text: str, pair: Path, toolchain: Path) -> str:
    return text.replace(str(pair), PAIR).replace(str(toolchain), TOOLCHAIN)


def toolchain_of(launch: Launch) -> Path:
    """The toolchain root of a launch: its argv[0] is ``<root>/bin/lake``."""
    return Path(launch.argv[0]).parent.parent


def pair_of(launch: Launch) -> tuple[str, str]:
    """(submission id, problem id) of a launch: its cwd is ``<root>/<sid>/<pid>/workspace``."""
    return launch.cwd.parent.parent.name, launch.cwd.parent.name


def outcome_of(transcript: Transcript, launch: Launch) -> process.ProcessResult:
    """The transcript's outcome with its placeholders made this launch's paths."""
    rec, pair, tc = transcript.outcome, launch.cwd.parent, toolchain_of(launch)
    return process.ProcessResult(
        returncode=rec.returncode, signal=rec.signal, timed_out=rec.timed_out,
        duration=rec.duration, stdout=_put(rec.stdout, pair, tc).encode(),
        stderr=_put(rec.stderr, pair, tc).encode(), stdout_truncated=rec.stdout_truncated,
        stderr_truncated=rec.stderr_truncated, orphans_killed=rec.orphans_killed,
        line_marks=tuple((at, _put(text, pair, tc).encode()) for at, text in rec.line_marks),
        limit_exceeded=rec.limit_exceeded, limits_mechanism=rec.limits_mechanism)


def recorded(launch: Launch, outcome: process.ProcessResult) -> Recorded:
    """``outcome`` of ``launch`` as a transcript stores it (this run's paths as placeholders)."""
    pair, tc = launch.cwd.parent, toolchain_of(launch)

    def text(data: bytes) -> str:
        return _take(data.decode("utf-8"), pair, tc)  # the stand-in writes UTF-8 only

    return Recorded(
        returncode=outcome.returncode, signal=outcome.signal, timed_out=outcome.timed_out,
        duration=round(outcome.duration, 3), stdout=text(outcome.stdout),
        stderr=text(outcome.stderr), stdout_truncated=outcome.stdout_truncated,
        stderr_truncated=outcome.stderr_truncated, orphans_killed=outcome.orphans_killed,
        line_marks=tuple((round(at, 3), text(raw)) for at, raw in outcome.line_marks),
        limit_exceeded=outcome.limit_exceeded, limits_mechanism=outcome.limits_mechanism)


def load_transcripts(directory: Path = TRANSCRIPTS) -> dict[str, Transcript]:
    """Every stored transcript, by case."""
    found = (Transcript.model_validate_json(p.read_bytes())
             for p in sorted(directory.glob("*.json")))
    return {t.case: t for t in found}


def marked_case(launch: Launch) -> str | None:
    """The case named by a ``-- transcript: <case>`` line of a submitted file, if any."""
    for path in sorted(launch.cwd.glob("Submission*.lean")) + sorted(
            launch.cwd.glob("Submission/**/*.lean")):
        found = MARKER.search(path.read_text(encoding="utf-8"))
        if found:
            return found["case"]
    return None


def by_pair(cases: Mapping[tuple[str, str], str]) -> Callable[[Launch], str | None]:
    """A ``pick`` naming the case of each (submission id, problem id); others: the marker."""
    return lambda launch: cases.get(pair_of(launch)) or marked_case(launch)


class FakeRunner:
    """Replays a transcript for each launch and remembers the launches (thread-safe).

    ``on_start``/``on_end`` are called in the pair's worker thread right before and after
    the replay (a test may block there to hold the pair "running")."""

    def __init__(self, transcripts: Mapping[str, Transcript] | None = None, *,
                 pick: Callable[[Launch], str | None] = marked_case,
                 default: str | None = "accepted",
                 on_start: Callable[[Launch], None] | None = None,
                 on_end: Callable[[Launch], None] | None = None) -> None:
        self.transcripts = dict(transcripts if transcripts is not None else load_transcripts())
        self.pick, self.default = pick, default
        self.on_start, self.on_end = on_start, on_end
        self.launches: list[Launch] = []
        self.started: list[tuple[str, str]] = []  # pairs, in the order their replay began
        self.ended: list[tuple[str, str]] = []  # pairs, in the order their replay returned
        self.running = 0
        self.most_running = 0
        self._changed = threading.Condition()

    def wait_until(self, ready: Callable[[FakeRunner], bool], timeout: float = 30) -> bool:
        """Block until ``ready(self)`` holds (re-checked as launches start and end), at most
        ``timeout`` seconds; whether it held."""
        with self._changed:
            return self._changed.wait_for(lambda: ready(self), timeout)

    def run(self, launch: Launch) -> process.ProcessResult:
        case = self.pick(launch) or self.default
        if case is None or case not in self.transcripts:
            raise LookupError(f"no transcript {case!r} for {pair_of(launch)}")
        with self._changed:
            self.launches.append(launch)
            self.started.append(pair_of(launch))
            self.running += 1
            self.most_running = max(self.most_running, self.running)
            self._changed.notify_all()
        try:
            if self.on_start is not None:
                self.on_start(launch)
            outcome = outcome_of(self.transcripts[case], launch)
            if self.on_end is not None:
                self.on_end(launch)
            return outcome
        finally:
            with self._changed:
                self.running -= 1
                self.ended.append(pair_of(launch))
                self._changed.notify_all()


class Recorder:
    """A runner that runs another (the sandboxed one) and keeps each launch's outcome."""

    def __init__(self, inner: ComparatorRunner) -> None:
        self.inner = inner
        self.runs: list[tuple[Launch, process.ProcessResult]] = []

    def run(self, launch: Launch) -> process.ProcessResult:
        outcome = self.inner.run(launch)
        self.runs.append((launch, outcome))
        return outcome


# --- building a run around a runner ------------------------------------------------------------


def bench(path: Path) -> Catalog:
    """A copy of this repository's benchmark at ``path`` (not a git checkout), loaded."""
    path.mkdir(parents=True, exist_ok=True)
    copy_benchmark(path)
    return load(path, "HEAD")


@functools.cache
def shared_bench() -> Path:
    """One benchmark copy per test session, in the session's temp dir (removed with it)."""
    path = Path(tempfile.mkdtemp(prefix="fake-bench-"))
    bench(path)
    return path


def catalog() -> Catalog:
    """The catalog of :func:`shared_bench`."""
    return load(shared_bench(), "HEAD")


def fake_bwrap() -> bubblewrap.BwrapInfo:
    """An identity for runs that never start bubblewrap (its path does not exist)."""
    return bubblewrap.BwrapInfo(path=Path("/nonexistent/fake-bwrap"), version="0.12.0",
                                owner="root", sha256=hashlib.sha256(b"fake").hexdigest())


def tools(runner: ComparatorRunner, bwrap: bubblewrap.BwrapInfo | None = None) -> Tools:
    """The stand-in toolchain with ``runner`` (and a fake bwrap unless one is given)."""
    toolchain = resolve_toolchain(STANDIN, {}, "leanprover/lean4:v4.35.0")
    return Tools(toolchain=toolchain, bwrap=bwrap or fake_bwrap(), runner=runner)


def options(out: Path, **fields: Any) -> RunOptions:
    """Run options as ``run-eval --skip-probes`` would make them, with ``fields`` changed.

    A timeout of 60 s unless given; the preflight record is filled in by :func:`score`."""
    tree = {k: fields.pop(k) for k in list(fields) if k in PairLimits._fields}
    options = RunOptions(out_dir=out, **{"timeout": 60.0, **fields})
    return options._replace(pair_limits=options.pair_limits._replace(**tree))


def score(inputs: Sequence[Path], catalog: Catalog, runner: ComparatorRunner,
          run_options: RunOptions, *,
          on_progress: Callable[[Progress], None] | None = None,
          on_verdict: Callable[[Verdict], None] | None = None) -> Summary:
    """``batch.run_batch`` as a run with ``skip_probes`` scores, through ``runner``."""
    run_tools = tools(runner)
    preflight: Preflight = not_probed(run_tools)
    return batch.run_batch(check_ids(inputs), catalog, run_tools,
                           run_options._replace(preflight=preflight), {"PATH": "/usr/bin:/bin"},
                           on_verdict=on_verdict, on_progress=on_progress)


def submission(base: Path, name: str, case: str, problem: str = PROBLEM,
               text: str | None = None) -> Path:
    """A submission ``base/name`` whose ``problem`` replays transcript ``case``: the correct
    proof (or ``text``) with a ``-- transcript:`` line, so it is never ``unchanged``."""
    body = (correct(problem) if text is None else text) + f"\n-- transcript: {case}\n"
    return make_submission(base, name, {problem: {"Submission.lean": body}})


class FakeRunEval:
    """``lean-eval run-eval`` in-process, as ``conftest.RunEval`` invokes it, with every Lake
    launch replayed by ``runner``: ``monkeypatch`` makes ``scoring.setup.resolve_tools`` (what
    run-eval resolves its tools with) return the stand-in toolchain, a fake bwrap identity and
    ``runner``. Nothing else of the CLI, the API or the batch is replaced."""

    def __init__(self, runner: ComparatorRunner, base: Path,
                 monkeypatch: pytest.MonkeyPatch) -> None:
        self.runner, self.base, self.benchmark = runner, base, shared_bench()

        def resolve(name: str, toolchain: Path | None, *_: object, **__: object) -> Tools:
            return Tools(toolchain=resolve_toolchain(toolchain, {}, name),
                         bwrap=fake_bwrap(), runner=self.runner)

        monkeypatch.setattr(setup, "resolve_tools", resolve)

    def __call__(self, *submissions: Path, extra: tuple[str, ...] = (),
                 out: Path | None = None, timeout: float = 60, quiet: bool = True) -> Run:
        out = out or self.base / "out"
        args = ["run-eval", *map(str, submissions), "--out", str(out), "--benchmark",
                str(self.benchmark), "--timeout", str(timeout), *(["-q"] if quiet else []),
                "--skip-probes", "--toolchain", str(STANDIN), *extra]
        return Run(CliRunner().invoke(main, args, catch_exceptions=False), out)
