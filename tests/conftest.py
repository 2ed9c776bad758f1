"""Shared fixtures: the stand-in toolchain, real bubblewrap, a benchmark copy and a CLI runner."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from click.testing import CliRunner, Result

from lean_eval.cli import main

REPO = Path(__file__).resolve().parent.parent
STANDIN = REPO / "tests" / "standin" / "toolchain"
CORRECT = REPO / "examples" / "submissions" / "correct"
PROBLEMS = ("add_comm_explicit", "double_def", "multi_hole", "two_plus_two", "widget_instance")
BENCHMARK_FILES = ("problems", "workspaces", "lean-toolchain", "lakefile.toml",
                   "lake-manifest.json", "benchmark.toml")
# Lake masks these itself; a leak test placed inside them would prove nothing (design §8).
LAKE_MASKED = ("/tmp", "/home", "/root", "/run", "/var")


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


# --- where tests may write: a private temp base, and a place outside Lake's masks ----------
#
# The whole session writes its temporary files (pytest's tmp_path and everything the harness
# puts in the system temp dir) under one private directory in /tmp, removed at the end; a
# harness that left `lean-eval-*` entries there, or (under CI) anything new in /tmp itself,
# fails the session. Leak tests need a place
# *outside* Lake's masks: LEAN_EVAL_TEST_OUTSIDE (default /srv/lean-eval-tests), under which the
# session uses its own subdirectory, also removed at the end.

OUTSIDE_DEFAULT = "/srv/lean-eval-tests"
_SESSION: dict[str, Path] = {}


_SYSTEM_TMP_BEFORE: set[str] = set()


def _lean_eval_entries() -> set[str]:
    """Entries directly in /tmp, other test sessions' private bases aside: all of them under
    CI (where the suite runs alone), only lean-eval ones on a developer's busy machine."""
    return {p.name for p in Path("/tmp").iterdir() if not p.name.startswith("lean-eval-pytest-")
            and (os.environ.get("CI") or p.name.startswith("lean-eval-"))}


def pytest_configure(config: pytest.Config) -> None:
    """Point the system temp dir (TMPDIR and :mod:`tempfile`) at a private session base."""
    del config
    _SYSTEM_TMP_BEFORE.update(_lean_eval_entries())
    base = Path(tempfile.mkdtemp(prefix="lean-eval-pytest-", dir="/tmp"))
    base.chmod(0o1777)  # like /tmp: probes also run as an unprivileged user
    _SESSION["tmp"] = base
    os.environ["TMPDIR"] = str(base)
    tempfile.tempdir = str(base)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the session's temp base and its outside directory."""
    del config
    for key in ("tmp", "outside"):
        if key in _SESSION:
            shutil.rmtree(_SESSION.pop(key), ignore_errors=True)
    created = _SESSION.pop("outside-created", None)
    if created is not None:
        with contextlib.suppress(OSError):
            created.rmdir()  # only when no other session still uses it


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
    # A test or child that ignored TMPDIR would write to /tmp itself.
    stray = sorted(_lean_eval_entries() - _SYSTEM_TMP_BEFORE)
    if stray:
        pytest.fail(f"/tmp gained entries during the run: {', '.join(stray[:10])}")


def outside_problem(base: Path) -> str | None:
    """Why ``base`` cannot hold leak tests, or None when it can."""
    if any(str(base) == m or str(base).startswith(m + "/") for m in LAKE_MASKED):
        return (f"LEAN_EVAL_TEST_OUTSIDE={base} lies under {', '.join(LAKE_MASKED)}, which Lake "
                "masks itself; a leak test there would prove nothing")
    try:
        if not base.exists():
            base.mkdir(parents=True)
            _SESSION["outside-created"] = base
        Path(tempfile.mkdtemp(prefix="probe-", dir=base)).rmdir()
    except OSError as exc:
        return (f"cannot create or write {base} ({exc.strerror}); set LEAN_EVAL_TEST_OUTSIDE "
                "to a writable directory outside /tmp, /home, /root, /run and /var")
    return None


def _outside_base() -> Path:
    """This session's directory outside Lake's masks; skip (fail under CI) when there is none."""
    if "outside" in _SESSION:
        return _SESSION["outside"]
    base = Path(os.environ.get("LEAN_EVAL_TEST_OUTSIDE", OUTSIDE_DEFAULT)).absolute()
    problem = outside_problem(base)
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"LEAK TESTS CANNOT RUN: {problem}")
        pytest.skip(f"LEAK TESTS SKIPPED: {problem}")
    session = Path(tempfile.mkdtemp(prefix="session-", dir=base))
    session.chmod(0o755)
    _SESSION["outside"] = session
    return session


@pytest.fixture
def outside() -> Iterator[Path]:
    """A fresh directory outside /tmp, /home, /root, /run and /var, removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="t-", dir=_outside_base()))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def bench_copy() -> Iterator[Path]:
    """A copy of the repository's benchmark files as they stand (not a git checkout)."""
    path = Path(tempfile.mkdtemp(prefix="bench-", dir=_outside_base()))
    path.chmod(0o755)
    copy_benchmark(path)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def copy_benchmark(path: Path) -> None:
    """The benchmark files of this repository (``BENCHMARK_FILES``) copied into ``path``."""
    for name in BENCHMARK_FILES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, path / name, ignore=shutil.ignore_patterns(".lake"))
        else:
            shutil.copy2(source, path / name)


def write_tree(base: Path, files: Mapping[str, str | bytes]) -> Path:
    """Create files under ``base`` from a relpath -> content mapping."""
    for rel, content in files.items():
        target = base / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return base


def correct(problem: str, rel: str = "Submission.lean") -> str:
    """The example correct submission file of ``problem``."""
    return (CORRECT / problem / rel).read_text(encoding="utf-8")


def with_lines(problem: str, *lines: str) -> str:
    """The correct proof of ``problem`` with extra lines appended (directives, payloads)."""
    return correct(problem) + "\n" + "\n".join(lines) + "\n"


class Run(NamedTuple):
    """A finished ``run-eval`` and its files."""

    result: Result
    out: Path

    @property
    def code(self) -> int:
        return self.result.exit_code

    def verdict(self, submission: str, problem: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.out / submission / f"{problem}.json").read_text())
        return data

    def log(self, submission: str, problem: str) -> str:
        return (self.out / submission / f"{problem}.log").read_text(encoding="utf-8")

    def summary(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.out / "summary.json").read_text())
        return data


def _installed_bwrap_version() -> str:
    """The version of the bwrap on PATH, which the suite accepts explicitly (distributions ship
    older releases than the scoring floor); the floor itself when there is none."""
    from lean_eval import bubblewrap, process

    found = shutil.which("bwrap")
    if found is None:
        return bubblewrap.MIN_VERSION
    done = process.run_capture((found, "--version"), env={"PATH": "/usr/bin:/bin"},
                               cwd=Path("/"), timeout=30)
    words = done.stdout.decode(errors="replace").split()
    return words[-1] if done.returncode == 0 and words else bubblewrap.MIN_VERSION


BWRAP_FLOOR = _installed_bwrap_version()
DEFAULT = Path("default-toolchain")  # sentinel: the toolchain this RunEval was made for


class RunEval:
    """Invoke ``lean-eval run-eval`` in-process against one toolchain (the stand-in by default)."""

    def __init__(self, benchmark: Path, base: Path, toolchain: Path = STANDIN) -> None:
        self.benchmark = benchmark
        self.base = base
        self.toolchain = toolchain

    @property
    def is_lean(self) -> bool:
        """Whether this runs the real Lean release rather than the stand-in."""
        return self.toolchain != STANDIN

    def __call__(self, *submissions: Path, extra: tuple[str, ...] = (),
                 toolchain: Path | None = DEFAULT, env: Mapping[str, str] | None = None,
                 out: Path | None = None, timeout: float | None = None) -> Run:
        out = out or self.base / "out"
        if toolchain == DEFAULT:
            toolchain = self.toolchain
        if timeout is None:
            timeout = 600 if self.is_lean else 60
        args = ["run-eval", *map(str, submissions), "--out", str(out), "--benchmark",
                str(self.benchmark), "--timeout", str(timeout), "-q",
                "--allow-bwrap-version", BWRAP_FLOOR, "--skip-probes", *extra]
        if toolchain is not None:
            args += ["--toolchain", str(toolchain)]
        result = CliRunner().invoke(main, args, env=dict(env or {}), catch_exceptions=False)
        return Run(result, out)


def real_toolchain() -> Path | None:
    """The installed Lean release named in lean-toolchain, if any."""
    from lean_eval.toolchain import resolve_toolchain

    name = (REPO / "lean-toolchain").read_text(encoding="utf-8").strip()
    explicit = os.environ.get("LEAN_EVAL_TOOLCHAIN") or None
    try:
        return resolve_toolchain(Path(explicit) if explicit else None, os.environ, name).root
    except Exception:  # noqa: BLE001 - any failure means "not installed here"
        return None


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


def standin_only(run_eval: RunEval, why: str) -> None:
    """Skip a scenario the real toolchain cannot express (e.g. a kernel that rejects)."""
    if run_eval.is_lean:
        pytest.skip(f"stand-in only: {why}")


def sh_payload(command: str) -> str:
    """Run ``command`` during the Solution build, in both forms (design §7): a real Lean
    ``#eval`` for a real toolchain and a ``-- standin-io:`` line for the stand-in."""
    quoted = command.replace("\\", "\\\\").replace('"', '\\"')
    return (f"-- standin-io: {command}\n"
            f'#eval show IO Unit from do\n'
            f'  let out ← IO.Process.output {{ cmd := "/bin/sh", args := #["-c", "{quoted}"] }}\n'
            f"  IO.println out.stdout")


def make_submission(base: Path, name: str, problems: Mapping[str, Mapping[str, str | bytes]]
                    ) -> Path:
    """A submission directory ``base/name`` with one problem directory per entry."""
    root = base / name
    root.mkdir(parents=True)
    for problem, files in problems.items():
        write_tree(root / problem, files)
    return root


def survivors(marker: str) -> list[str]:
    """Processes (other than this one) whose command line or working directory mentions
    ``marker``: what a run left behind under its inputs, outputs or work dir."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                "utf-8", "replace")
            cwd = os.readlink(f"/proc/{name}/cwd")
        except OSError:
            continue
        if marker in cmdline or marker in cwd:
            found.append(f"{name}: {cmdline.strip()[:200]} (cwd {cwd})")
    return found


def no_survivor(marker: Path) -> None:
    """Nothing of a finished run is alive (waiting, up to a generous bound, for the kernel to
    reap: a loaded machine may take a while, a survivor never goes)."""
    deadline = time.monotonic() + 30
    while survivors(str(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert survivors(str(marker)) == []
