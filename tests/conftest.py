"""Shared fixtures: the stand-in toolchain, real bubblewrap, a benchmark copy and a CLI runner;
the ``e2e`` mark of every test under tests/e2e/.

Plain helpers and constants are in the support package, tests/support/ (test modules import them
from there, never from here)."""

from __future__ import annotations

import compileall
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from hypothesis import settings
from pydantic import TypeAdapter
from support import (
    STANDIN,
    RunEval,
    copy_benchmark,
    e2e_needs,
    in_e2e,
    outside_problem,
    passable,
    real_toolchain,
    reclaim_ended,
)
from support.profiles import CI, DEV

from lean_eval.probes import preflight
from lean_eval.records.probe_result import ProbeResult
from lean_eval.scoring.options import Tools
from lean_eval.supervise import pair_fs

# Every example count under CI; a tenth of each in the inner loop. The whole check
# (scripts/run_tests.sh) passes --hypothesis-profile=ci, which wins over this.
settings.load_profile(CI if os.environ.get("CI") else DEV)

def _bwrap_works() -> str | None:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not on PATH"
    probe = os.system(f"{bwrap} --ro-bind / / --unshare-all --die-with-parent -- /bin/true "  # noqa: S605, TID251
                      ">/dev/null 2>&1")
    return None if probe == 0 else f"{bwrap} cannot create a sandbox here"


@pytest.fixture(scope="session")
def bwrap() -> str:
    """Real bubblewrap; a hard failure under CI, a loud skip elsewhere (design §8)."""
    problem = _bwrap_works()
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"{problem}; CI must install bubblewrap (apt-get install bubblewrap)")
        pytest.skip(f"SANDBOX TESTS SKIPPED: {problem}")
    found = shutil.which("bwrap")
    assert found is not None
    return found



@pytest.hookimpl(tryfirst=True)  # before -m deselects by mark
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test under tests/e2e/ ``e2e``; refuse a test elsewhere that needs real
    bubblewrap (``-m "not e2e"``, the inner loop, must never start a sandbox)."""
    del config
    misplaced = []
    for item in items:
        if in_e2e(item.path):
            item.add_marker(pytest.mark.e2e)
        elif needs := e2e_needs(getattr(item, "fixturenames", ()),
                                (mark.name for mark in item.iter_markers())):
            misplaced.append(f"{item.nodeid} ({', '.join(needs)})")
    if misplaced:
        raise pytest.UsageError("tests outside tests/e2e/ need real bubblewrap; move them "
                                "there:\n  " + "\n  ".join(misplaced))

# --- where tests may write: a private temp base, and a place outside Lake's masks ----------
#
# The whole session writes its temporary files (pytest's tmp_path and everything the harness
# puts in the system temp dir) under one private directory in /tmp, removed at the end; a
# harness that left `lean-eval-*` entries there fails the session, and so (under CI only, see
# pytest_sessionfinish) does anything new in /tmp itself. Leak tests need a place
# *outside* Lake's masks: LEAN_EVAL_TEST_OUTSIDE (default /srv/lean-eval-tests), under which the
# session uses its own subdirectory, also removed at the end.

OUTSIDE_DEFAULT = "/srv/lean-eval-tests"
_SESSION: dict[str, Path] = {}


_SYSTEM_TMP_BEFORE: set[str] = set()


def _system_tmp_entries() -> set[str]:
    """Entries directly in /tmp, test sessions' private bases aside."""
    return {p.name for p in Path("/tmp").iterdir() if not p.name.startswith("lean-eval-pytest-")}


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Under CI, where the suite runs alone, fail when /tmp itself gained entries: a test or
    child that ignored TMPDIR. Judged once, by the controller after every worker ended (a
    worker would see another's live temporaries); elsewhere /tmp is not judged at all, since
    other processes on a developer's machine (their own run-eval) write there too."""
    if hasattr(session.config, "workerinput") or not os.environ.get("CI"):
        return
    stray = sorted(_system_tmp_entries() - _SYSTEM_TMP_BEFORE)
    if stray:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"FAILED: /tmp gained entries during the run (a child that "
                                f"ignored TMPDIR?): {', '.join(stray[:10])}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_configure(config: pytest.Config) -> None:
    """Compile the stand-in's modules once, then point the system temp dir (TMPDIR and
    :mod:`tempfile`) at a private session base."""
    if not hasattr(config, "workerinput") and not sys.dont_write_bytecode:
        # The stand-in's tools run in sandboxes that mount the toolchain read-only, so they
        # never write their bytecode cache: without this, each of their thousands of starts
        # compiles its modules from source until a test imports them in-process. Done once,
        # in the controller, before any xdist worker starts.
        compileall.compile_dir(STANDIN / "lib", quiet=1)
    # A terminal's size in the environment (pytest-xdist's workers get COLUMNS=80 and LINES=24)
    # would make the CLI's consoles wrap at 80 columns in some runs and not in others.
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)
    _SYSTEM_TMP_BEFORE.update(_system_tmp_entries())
    base = Path(tempfile.mkdtemp(prefix="lean-eval-pytest-", dir="/tmp"))
    base.chmod(0o1777)  # like /tmp: probes also run as an unprivileged user
    _SESSION["tmp"] = base
    os.environ["TMPDIR"] = str(base)
    tempfile.tempdir = str(base)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the session's temp base and its outside directory; in the controller, reclaim
    the cgroups of harnesses the tests SIGKILLed (and of workers that have ended): only those
    whose lock is free, never a live harness's beside the suite (``reclaim_ended``)."""
    if not hasattr(config, "workerinput"):
        reclaim_ended()
    for key in ("tmp", "outside"):
        if key in _SESSION:
            shutil.rmtree(_SESSION.pop(key), ignore_errors=True)
    created = _SESSION.pop("outside-created", None)
    if created is not None:
        with contextlib.suppress(OSError):
            created.rmdir()  # only when no other session still uses it


@pytest.fixture
def tmp_path(tmp_path: Path) -> Path:
    """pytest's ``tmp_path``, ``support.passable``."""
    return passable(tmp_path)


@pytest.fixture(scope="session", autouse=True)
def no_litter() -> Iterator[None]:
    """Fail the session when the harness left lean-eval entries in the system temp dir."""
    yield
    base = _SESSION.get("tmp")
    if base is None:
        return
    left = sorted(p.name for p in base.glob("lean-eval-*"))
    if left:
        pytest.fail(f"the run left {len(left)} lean-eval entr(y/ies) in the system temp dir "
                    f"{base}: {', '.join(left[:10])}")


def _outside_base() -> Path:
    """This session's directory outside Lake's masks; skip (fail under CI) when there is none."""
    if "outside" in _SESSION:
        return _SESSION["outside"]
    base = Path(os.environ.get("LEAN_EVAL_TEST_OUTSIDE", OUTSIDE_DEFAULT)).absolute()
    existed = base.exists()
    problem = outside_problem(base)
    if not existed and base.exists():
        _SESSION["outside-created"] = base
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"LEAK TESTS CANNOT RUN: {problem}")
        pytest.skip(f"LEAK TESTS SKIPPED: {problem}")
    session = Path(tempfile.mkdtemp(prefix="session-", dir=base))
    session.chmod(0o755)
    _SESSION["outside"] = session
    return session


def _fresh_outside(prefix: str) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=_outside_base()))
    path.chmod(0o755)
    yield path
    pair_fs.unmount_below(path)  # what a harness a test SIGKILLed left mounted (no next run)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def outside() -> Iterator[Path]:
    """A fresh directory outside /tmp, /home, /root, /run and /var, removed afterwards."""
    yield from _fresh_outside("t-")


@pytest.fixture(scope="module")
def outside_module() -> Iterator[Path]:
    """As ``outside``, for one test module: what several of its tests copy and never change."""
    yield from _fresh_outside("m-")


@pytest.fixture(scope="session")
def bench_copy() -> Iterator[Path]:
    """A copy of the repository's benchmark files as they stand (not a git checkout)."""
    path = Path(tempfile.mkdtemp(prefix="bench-", dir=_outside_base()))
    path.chmod(0o755)
    copy_benchmark(path)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(params=[
    pytest.param("standin", id="standin"),
    pytest.param("lean", id="lean", marks=pytest.mark.lean),
])
def toolchain(request: pytest.FixtureRequest) -> Path:
    """Each end-to-end scenario runs on the stand-in and, where installed, on real Lean."""
    if request.param == "standin":
        return STANDIN
    found = real_toolchain()
    if found is None:
        pytest.skip("real Lean release of lean-toolchain is not installed (elan or "
                    "LEAN_EVAL_TOOLCHAIN); @pytest.mark.lean scenario not run")
    return found


@pytest.fixture
def run_eval(bench_copy: Path, outside: Path, bwrap: str, toolchain: Path) -> RunEval:
    """``run-eval`` against the benchmark copy, outputs under ``outside``."""
    del bwrap
    return RunEval(bench_copy, outside, toolchain)


# --- the probes, run once and replayed ----------------------------------------------------------

_RESULTS: TypeAdapter[tuple[ProbeResult, ...]] = TypeAdapter(tuple[ProbeResult, ...])


@pytest.fixture
def replayed_probes(monkeypatch: pytest.MonkeyPatch,
                    tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, ...]]:
    """The CLI's probe runner, run for real the first time the session (all its xdist workers:
    the record is in their shared temp dir, written under a lock) needs a toolchain and
    bubblewrap probed, and replayed after; the list holds each call's probe names. For tests
    of *when* the probes run and how their results are shown and recorded: the probes
    themselves are tested by tests/e2e/test_probes.py and tests/e2e/test_preflight.py, always
    run."""
    calls: list[tuple[str, ...]] = []
    real = preflight.run_probes
    shared = tmp_path_factory.getbasetemp().parent / "probes-replayed"

    def replay(tools: Tools, env: Mapping[str, str], work_dir: Path | None,
               names: Sequence[str] = (), secrets: Sequence[Path] = ()
               ) -> tuple[ProbeResult, ...]:
        calls.append(tuple(names))
        key = json.dumps([str(tools.toolchain.root), str(tools.bwrap.path), list(names)])
        name = hashlib.sha256(key.encode()).hexdigest()[:16]
        shared.mkdir(exist_ok=True)
        record = shared / f"{name}.json"
        with (shared / f"{name}.lock").open("w") as held:
            fcntl.flock(held, fcntl.LOCK_EX)  # one worker probes, the others wait for it
            if not record.exists():
                results = real(tools, env, work_dir, names, secrets)
                record.write_bytes(_RESULTS.dump_json(results))
                return results
        if work_dir is not None:
            work_dir.mkdir(parents=True, exist_ok=True)  # as the real runner leaves it
        return _RESULTS.validate_json(record.read_bytes())

    monkeypatch.setattr(preflight, "run_probes", replay)
    return calls
