"""What several test modules share: paths, submission builders, CLI runners, process checks and
one factory for verdicts and run outputs built from the models.

Fixtures live in conftest.py; everything here is a plain function or constant, imported as
``from support import ...``. No test module imports another test module or conftest
(tests/test_suite_hygiene.py keeps it so).
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import secrets
import shutil
import subprocess  # noqa: TID251 - the unprivileged run needs a real child process
import sys
import tarfile
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import pytest
from click.testing import CliRunner, Result
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from lean_eval import bubblewrap, process, shard
from lean_eval.atomic import write_model
from lean_eval.cli import main
from lean_eval.toolchain import resolve_toolchain
from lean_eval.verdict import (
    Identity,
    LogRef,
    PairSummary,
    Preflight,
    ProblemRef,
    Reason,
    ShardInfo,
    SubmissionRef,
    SubmissionSummary,
    Summary,
    Timings,
    Verdict,
    compact_pairs,
)

# --- paths and names --------------------------------------------------------------------------

REPO = Path(__file__).resolve().parent.parent
STANDIN = REPO / "tests" / "standin" / "toolchain"
CORRECT = REPO / "examples" / "submissions" / "correct"
PROBLEMS = ("add_comm_explicit", "double_def", "multi_hole", "two_plus_two", "widget_instance")
PROBLEM = "two_plus_two"  # the problem most single-pair scenarios score
BENCHMARK_FILES = ("problems", "workspaces", "lean-toolchain", "lakefile.toml",
                   "lake-manifest.json", "benchmark.toml")
# Lake masks these itself; a leak test placed inside them would prove nothing (design §8).
LAKE_MASKED = ("/tmp", "/home", "/root", "/run", "/var")
SOURCE = REPO / "tests" / "fixtures" / "source_catalog"  # a catalog in the source layout
UNPRIVILEGED = 65534


def _installed_bwrap_version() -> str:
    """The version of the bwrap on PATH, which the suite accepts explicitly (distributions ship
    older releases than the scoring floor); the floor itself when there is none."""
    found = shutil.which("bwrap")
    if found is None:
        return bubblewrap.MIN_VERSION
    done = process.run_capture((found, "--version"), env={"PATH": "/usr/bin:/bin"},
                               cwd=Path("/"), timeout=30)
    words = done.stdout.decode(errors="replace").split()
    return words[-1] if done.returncode == 0 and words else bubblewrap.MIN_VERSION


BWRAP_FLOOR = _installed_bwrap_version()


def real_toolchain() -> Path | None:
    """The installed Lean release named in lean-toolchain, if any."""
    name = (REPO / "lean-toolchain").read_text(encoding="utf-8").strip()
    explicit = os.environ.get("LEAN_EVAL_TOOLCHAIN") or None
    try:
        return resolve_toolchain(Path(explicit) if explicit else None, os.environ, name).root
    except Exception:  # noqa: BLE001 - any failure means "not installed here"
        return None


def outside_problem(base: Path) -> str | None:
    """Why ``base`` cannot hold leak tests, or None when it can (``base`` is created if
    missing)."""
    if any(str(base) == m or str(base).startswith(m + "/") for m in LAKE_MASKED):
        return (f"LEAN_EVAL_TEST_OUTSIDE={base} lies under {', '.join(LAKE_MASKED)}, which Lake "
                "masks itself; a leak test there would prove nothing")
    try:
        base.mkdir(parents=True, exist_ok=True)
        Path(tempfile.mkdtemp(prefix="probe-", dir=base)).rmdir()
    except OSError as exc:
        return (f"cannot create or write {base} ({exc.strerror}); set LEAN_EVAL_TEST_OUTSIDE "
                "to a writable directory outside /tmp, /home, /root, /run and /var")
    return None


# --- files: benchmarks, submissions, archives -------------------------------------------------


def copy_benchmark(path: Path) -> None:
    """The benchmark files of this repository (``BENCHMARK_FILES``) copied into ``path``."""
    for name in BENCHMARK_FILES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, path / name, ignore=shutil.ignore_patterns(".lake"))
        else:
            shutil.copy2(source, path / name)


def _update_index() -> ModuleType:
    spec = importlib.util.spec_from_file_location("update_index", REPO / "scripts" /
                                                  "update_index.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


UPDATE_INDEX = _update_index()


def changed_benchmark(outside: Path, change: Callable[[Path], None], *,
                      reindex: bool = True) -> Path:
    """A copy of the benchmark with ``change`` applied and (by default) the index regenerated,
    so that the fault under test is not hidden behind a digest mismatch."""
    root = outside / "bench"
    root.mkdir(parents=True)
    copy_benchmark(root)
    change(root)
    if reindex:
        assert UPDATE_INDEX.main(["--root", str(root)]) == 0
    return root


def rehash_trusted(bench: Path, problem: str, name: str) -> None:
    """Record the current digest of ``problem``'s trusted file ``name`` in the index."""
    index_path = bench / "workspaces" / "index.json"
    index = json.loads(index_path.read_text())
    data = (bench / "workspaces" / problem / name).read_bytes()
    index["problems"][problem]["trusted"][name] = hashlib.sha256(data).hexdigest()
    index_path.write_text(json.dumps(index, indent=2))


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


def starter(problem: str, rel: str = "Submission.lean") -> str:
    """The benchmark's starter file of ``problem``."""
    return (REPO / "workspaces" / problem / rel).read_text(encoding="utf-8")


def with_lines(problem: str, *lines: str) -> str:
    """The correct proof of ``problem`` with extra lines appended (directives, payloads)."""
    return correct(problem) + "\n" + "\n".join(lines) + "\n"


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


def good(subs: Path) -> Path:
    """The submission ``good``: a correct proof of ``PROBLEM``."""
    return make_submission(subs, "good", {PROBLEM: {"Submission.lean": correct(PROBLEM)}})


def sleeper(base: Path, name: str, seconds: float, *extra: str) -> Path:
    """A correct proof of ``PROBLEM`` whose build sleeps ``seconds`` (sleep-bound, not
    CPU-bound)."""
    text = with_lines(PROBLEM, sh_payload(f"sleep {seconds}"), *extra)
    return make_submission(base, name, {PROBLEM: {"Submission.lean": text}})


SOLVED = {  # the imported SOURCE problems solved() solves, and how
    "scaled_norm": ("  sorry\n", "  simp\n"),
    "widget_facts": None,  # several holes: see solved()
    "counter_where": ("count := sorry", "count := fun n => n"),
}


def solved(src: Path, pid: str) -> str:
    """A solved submission of the imported ``SOURCE`` catalog (imported into ``src``): the
    starter with each ``sorry`` replaced by a proof."""
    text = (src / "generated" / pid / "Submission.lean").read_text(encoding="utf-8")
    if pid == "widget_facts":
        for old, new in (("def widget : ℕ := sorry", "def widget : ℕ := 1"),  # noqa: RUF001
                         ("Fact (0 < widget) := sorry", "Fact (0 < widget) := ⟨by decide⟩"),
                         ("Inhabited Carrier := sorry", "Inhabited Carrier := ⟨⟨0, by decide⟩⟩"),
                         ("  sorry\n", "  simp [widget]\n")):
            assert old in text
            text = text.replace(old, new)
    else:
        old, new = SOLVED[pid] or ("", "")
        assert old in text
        text = text.replace(old, new)
    assert "sorry" not in text
    return text


def sparse(path: Path, size: int) -> None:
    """A file of `size` bytes that takes no disk space (reading it would still cost `size`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        handle.truncate(size)


def tgz(path: Path, members: list[tuple[str, bytes | int]]) -> Path:
    """A .tar.gz of regular members; an int stands for that many zero bytes, streamed."""
    compressor = zlib.compressobj(1, zlib.DEFLATED, 31)
    parts: list[bytes] = []
    for name, content in members:
        info = tarfile.TarInfo(name)
        info.size = content if isinstance(content, int) else len(content)
        parts.append(compressor.compress(info.tobuf(tarfile.GNU_FORMAT)))
        if isinstance(content, int):
            chunk = bytes(1 << 20)
            parts.extend(compressor.compress(chunk) for _ in range(content // len(chunk)))
            parts.append(compressor.compress(bytes(content % len(chunk))))
        else:
            parts.append(compressor.compress(content))
        parts.append(compressor.compress(bytes(-info.size % 512)))
    parts.append(compressor.compress(bytes(1024)) + compressor.flush())
    path.write_bytes(b"".join(parts))
    return path


def fork_archive(dest: Path, solved: str, proof: bytes) -> Path:
    """`git archive HEAD` of this repository with `solved`'s Submission.lean replaced."""
    got = process.run_capture(("git", "-C", str(REPO), "archive", "--format=tar", "HEAD"),
                              env={"PATH": "/usr/bin:/bin"}, cwd=REPO)
    if got.returncode != 0 or got.stdout_truncated:
        pytest.skip(f"git archive of the repository failed: {got.stderr[-300:]!r}")
    target = f"workspaces/{solved}/Submission.lean"
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(got.stdout), mode="r:") as source, \
            tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as fork:
        fork.pax_headers = dict(source.pax_headers)
        for member in source.getmembers():
            handle = source.extractfile(member) if member.isreg() else None
            data = handle.read() if handle is not None else None
            if member.name == target:
                data, member.size = proof, len(proof)
            fork.addfile(member, io.BytesIO(data) if data is not None else None)
    dest.write_bytes(out.getvalue())
    return dest


def keypair(base: Path, name: str = "key") -> tuple[Path, Path]:
    """A PKCS#8 PEM Ed25519 private key (what `openssl genpkey -algorithm ed25519` writes)
    and its SubjectPublicKeyInfo PEM (what `openssl pkey -pubout` writes)."""
    key = Ed25519PrivateKey.generate()
    private = base / f"{name}.pem"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    public = base / f"{name}.pub"
    public.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


# --- running the CLI ----------------------------------------------------------------------------


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


def standin_only(run_eval: RunEval, why: str) -> None:
    """Skip a scenario the real toolchain cannot express (e.g. a kernel that rejects)."""
    if run_eval.is_lean:
        pytest.skip(f"stand-in only: {why}")


def validate_catalog(benchmark: Path, *extra: str) -> Result:
    """``lean-eval validate-catalog`` of ``benchmark``."""
    return CliRunner().invoke(main, ["validate-catalog", "--benchmark", str(benchmark), *extra],
                              catch_exceptions=False)


def validate_submission(bench: Path, path: Path, *args: str) -> Result:
    """``lean-eval validate-submission`` of ``path``, with no Lean toolchain to be found."""
    env = {"LEAN_EVAL_TOOLCHAIN": "/nonexistent", "PATH": "/usr/bin:/bin"}  # no Lean needed
    return CliRunner().invoke(main, ["validate-submission", str(path), "--benchmark", str(bench),
                                     *args], env=env, catch_exceptions=False)


# --- a run-eval in a child process, watched from outside -------------------------------------


def run_eval_argv(run_eval: RunEval, subs: list[Path], out: Path, work: Path,
                  *extra: str) -> tuple[str, ...]:
    """``python -m lean_eval run-eval`` of ``subs`` on the stand-in, as a child process."""
    return (sys.executable, "-m", "lean_eval", "run-eval", *map(str, subs), "--out", str(out),
            "--work-dir", str(work), "--benchmark", str(run_eval.benchmark),
            "--toolchain", str(STANDIN), "--timeout", "60", "-q", "--skip-probes",
            "--allow-bwrap-version", BWRAP_FLOOR, *extra)


def harness_env() -> dict[str, str]:
    """This environment for a child harness: pytest's variables dropped, this tree on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["PYTHONPATH"] = str(REPO)
    return env


def in_background(argv: tuple[str, ...], timeout: float,
                  grace: float = 5.0) -> tuple[threading.Thread, list[process.ProcessResult]]:
    """Run ``argv`` under :func:`lean_eval.process.run` in a thread; its outcome is appended
    to the returned list when it ends."""
    outcomes: list[process.ProcessResult] = []

    def target() -> None:
        outcomes.append(process.run(argv, env=harness_env(), cwd=REPO, timeout=timeout,
                                    grace=grace))

    thread = threading.Thread(target=target)
    thread.start()
    return thread, outcomes


def harness_pid(marker: str) -> int | None:
    """The process id of the ``run-eval`` whose argv holds ``marker``, if it is running."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"lean_eval" in argv and marker.encode() in argv and b"run-eval" in argv:
            return int(name)
    return None


def verdict_files(out: Path) -> dict[Path, tuple[bytes, int, int]]:
    """Every verdict file with its bytes, inode and mtime (so "untouched" can be checked)."""
    found = {}
    for path in sorted(out.glob("*/*.json")):
        st = path.stat()
        found[path] = (path.read_bytes(), st.st_ino, st.st_mtime_ns)
    return found


def wait_for_verdicts(out: Path, count: int, thread: threading.Thread,
                      outcomes: list[process.ProcessResult], limit: float = 90) -> None:
    """Wait until the run in ``thread`` has written ``count`` verdicts (failing if it ends
    first or takes longer than a generous ``limit``)."""
    deadline = time.monotonic() + limit
    while len(list(out.glob("*/*.json"))) < count:
        assert thread.is_alive(), f"the run ended early: {outcomes}"
        assert time.monotonic() < deadline, "the run wrote too few verdicts"
        time.sleep(0.05)


def unprivileged_python(base: Path) -> tuple[list[str], dict[str, str]] | str:
    """A command prefix and environment running ``python3 -m lean_eval`` as uid 65534 with a
    readable copy of the harness's libraries (this interpreter may live in root's home), or
    why that is not possible here."""
    if os.geteuid() != 0:
        return [sys.executable], {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
    python = "/usr/bin/python3"
    if not os.access(python, os.X_OK):
        return f"no {python} to run as uid {UNPRIVILEGED}"
    lib = base / "pylib"
    lib.mkdir()
    for name in _LIBS:
        try:
            module = __import__(name)
        except ImportError:
            continue
        source = Path(module.__file__ or "")
        if source.name == "__init__.py":
            shutil.copytree(source.parent, lib / name, ignore=shutil.ignore_patterns("*.pyc"))
        else:
            shutil.copy2(source, lib / source.name)
    shutil.copytree(REPO / "lean_eval", lib / "lean_eval",
                    ignore=shutil.ignore_patterns("__pycache__"))
    prefix = ["setpriv", f"--reuid={UNPRIVILEGED}", f"--regid={UNPRIVILEGED}", "--clear-groups",
              python, "-B"]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": str(lib), "LANG": "C.UTF-8",
           "HOME": str(base)}
    probe = subprocess.run([*prefix, "-c", "import lean_eval.cli"], capture_output=True,
                           text=True, env=env, cwd=base, check=False)
    if probe.returncode != 0:
        return f"the harness does not import as uid {UNPRIVILEGED}: {probe.stderr[-300:]}"
    bwrap = shutil.which("bwrap") or "bwrap"
    sandbox_probe = subprocess.run([*prefix[:-2], bwrap, "--ro-bind", "/", "/", "--unshare-all",
                                    "--", "/bin/true"], capture_output=True, text=True,
                                   check=False)
    if sandbox_probe.returncode != 0:
        return f"bwrap cannot run as uid {UNPRIVILEGED}: {sandbox_probe.stderr.strip()}"
    return prefix, env


_LIBS = ("click", "pydantic", "pydantic_core", "typing_extensions", "annotated_types",
         "typing_inspection", "rich", "markdown_it", "mdurl", "pygments", "packaging")


# --- what a finished run left behind ----------------------------------------------------------


def batch_ok(run: Run, base: Path, good: str = "good") -> None:
    """The correct pair is accepted, the summary exists, no traceback, nothing survives."""
    output = run.result.output
    assert "Traceback" not in output, output
    assert run.result.exception is None or isinstance(run.result.exception, SystemExit), output
    assert run.verdict(good, PROBLEM)["verdict"] == "accepted", output
    assert (run.out / "summary.json").is_file(), output
    no_survivor(base)


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


def unique_marker() -> str:
    """A sleep duration no other process on the machine carries in its command line."""
    return f"9{secrets.randbelow(10**9):09d}.{secrets.randbelow(10**6):06d}"


def processes_with(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line contains marker."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            stat = (entry / "stat").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and stat[stat.rfind(b")") + 2 :][:1] != b"Z":
            found.append(int(entry.name))
    return found


# --- verdicts and run outputs built from the models -------------------------------------------
#
# The one factory of the suite: every verdict, summary and output directory a test writes
# without running the harness is built here, so a model change is made once.

KINDS = ("accepted", "rejected", "invalid_submission", "unchanged", "error")  # summary counts


def make_identity(**changes: Any) -> Identity:
    """A plausible run identity; ``changes`` replace fields."""
    base = {"harness_version": "0.1.0", "benchmark_path": "/bench", "benchmark_commit": "c0ffee",
            "toolchain_name": "leanprover/lean4:v4.22.0", "toolchain_path": "/tc",
            "bwrap_path": "/usr/bin/bwrap", "bwrap_version": "0.12.0", "bwrap_owner": "root",
            "bwrap_setuid": False, "bwrap_sha256": "ab" * 32, "bwrap_minimum_version": "0.12.0"}
    return Identity.model_validate({**base, **changes})


def make_verdict(sid: str, pid: str, outcome: str = "accepted", *, execution: str | None = None,
                 code: str | None = None, message: str = "x", identity: Identity | None = None,
                 source: str | None = None, wall_seconds: float = 0.5,
                 log: LogRef | None = None, **fields: Any) -> Verdict:
    """The verdict of (``sid``, ``pid``); by default an unchanged pair was not run, any other
    completed, and a rejection's reason is ``kernel_rejected``. ``fields`` sets others."""
    if execution is None:
        execution = "not_run" if outcome == "unchanged" else "completed"
    if code is None:
        code = "kernel_rejected" if outcome == "rejected" else outcome
    return Verdict.model_validate({
        "submission": SubmissionRef(id=sid, digest="d" * 64, source=source or f"/in/{sid}"),
        "problem": ProblemRef(id=pid, statement_revision=1), "verdict": outcome,
        "execution": execution, "reason": Reason(code=code, message=message),
        "timings": Timings(wall_seconds=wall_seconds), "identity": identity or make_identity(),
        "log": log or LogRef(path=f"{sid}/{pid}.log", tail=("last line",)), **fields})


def pair_line(verdict: Verdict) -> PairSummary:
    """The summary's line for ``verdict``."""
    return PairSummary(submission=verdict.submission.id, problem=verdict.problem.id,
                       verdict=verdict.verdict, execution=verdict.execution,
                       reason=verdict.reason.code,
                       path=f"{verdict.submission.id}/{verdict.problem.id}.json")


def make_summary(pairs: Sequence[PairSummary], submissions: Sequence[SubmissionSummary], *,
                 problems: Sequence[str], identity: Identity, compact: bool = True,
                 exit_code: int = 0, finished_at: str = "2026-01-01T00:01:00+00:00",
                 shard: ShardInfo | None = None) -> Summary:
    """A run's summary over ``pairs``: counted, and (``compact``, as run-eval writes it) its
    unchanged pairs listed by id in their submission."""
    counts = dict.fromkeys(KINDS, 0)
    for pair in pairs:
        counts[pair.verdict] += 1
    kept, unchanged = compact_pairs(tuple(pairs)) if compact else (tuple(pairs), {})
    return Summary(
        started_at="2026-01-01T00:00:00+00:00", finished_at=finished_at, identity=identity,
        preflight=Preflight(skipped=True, toolchain_path=identity.toolchain_path,
                            bwrap_path=identity.bwrap_path, bwrap_version=identity.bwrap_version,
                            bwrap_sha256=identity.bwrap_sha256),
        problems=tuple(problems),
        submissions=tuple(s.model_copy(update={"unchanged": unchanged[s.id]})
                          if s.id in unchanged else s for s in submissions),
        counts=counts, pairs=kept, exit_code=exit_code, shard=shard)


def write_verdicts(out: Path, verdicts: Sequence[Verdict]) -> None:
    """Each verdict's file under ``out``, and its log where it names one."""
    for v in verdicts:
        write_model(out / v.submission.id / f"{v.problem.id}.json", v)
        if v.log.path is not None:
            (out / v.log.path).write_text(f"log of {v.submission.id}/{v.problem.id}\n",
                                          encoding="utf-8")


# The batch of the merge, export, signing and replay tests: four submissions with one outcome
# each, on three problems.
BATCH_PROBLEMS = ("add_comm_explicit", "double_def", "two_plus_two")
BATCH_SUBMISSIONS = ("alice", "bob", "carol", "dave")
BATCH_OUTCOME = {"alice": "accepted", "bob": "rejected", "carol": "unchanged",
                 "dave": "accepted"}
BATCH = [(s, p) for s in BATCH_SUBMISSIONS for p in BATCH_PROBLEMS]


def write_output(out: Path, pairs: Sequence[tuple[str, str]], *, k: int | None = None,
                 n: int = 2, identity: Identity | None = None,
                 digest: str | None = None, options_digest: str | None = "o" * 64) -> Path:
    """A run-eval output directory holding ``pairs`` of ``BATCH`` (optionally as shard k of
    n)."""
    identity = identity or make_identity()
    verdicts = [make_verdict(sid, pid, BATCH_OUTCOME[sid], identity=identity)
                for sid, pid in pairs]
    write_verdicts(out, verdicts)
    subs = [SubmissionSummary(id=s, source=f"/in/{s}", digest="d" * 64,
                              problems=tuple(p for s2, p in pairs if s2 == s))
            for s in BATCH_SUBMISSIONS]
    info = None if k is None else ShardInfo(
        k=k, n=n, batch_digest=digest or shard.batch_digest(BATCH), options_digest=options_digest,
        batch={} if digest else shard.batch_map(BATCH))
    write_model(out / "summary.json", make_summary(
        [pair_line(v) for v in verdicts], subs, problems=BATCH_PROBLEMS, identity=identity,
        shard=info))
    return out


def shards_of(tmp_path: Path, n: int = 2, **kwargs: Any) -> list[Path]:
    """``BATCH`` as the outputs of its ``n`` shards, ``tmp_path/shard1`` on."""
    return [write_output(tmp_path / f"shard{k}", shard.select(BATCH, k, n), k=k, n=n, **kwargs)
            for k in range(1, n + 1)]


# The report tests' run: every verdict kind, hostile names and control characters.
HOSTILE = ("[bold red]x", "a[/x]", "[link=https://evil]click[/link]", "pipe|star*_[b]")
# (submission, problem, verdict, execution, reason, message)
REPORT_PAIRS = [
    ("good", "two_plus_two", "accepted", "completed", "accepted", "all kernels accepted"),
    ("good", "double_def", "rejected", "completed", "statement_mismatch", "x differs"),
    ("bad", "two_plus_two", "invalid_submission", "not_run", "path_rejected", "a[/x] bad"),
    ("bad", "double_def", "unchanged", "not_run", "unchanged", "starter"),
    ("bad", "multi_hole", "error", "timed_out", "timeout", "deadline \x1b[31m\x00 reached"),
    # ids follow intake's rules (report refuses others); messages and rejections are free text
    ("hostile", "two_plus_two", "rejected", "completed", "kernel_rejected",
     f"{HOSTILE[1]} {HOSTILE[3]}"),
    ("dotted.name_1-x", "two_plus_two", "accepted", "completed", "accepted", "ok"),
]
REJECTION = f"corrupt [blink]archive {HOSTILE[0]} {HOSTILE[3]}"
REPORT_IDENTITY = make_identity(benchmark_path="/b", benchmark_commit=None, toolchain_name="t",
                                toolchain_path="/t", bwrap_sha256="a" * 64)


def report_verdict(sid: str, pid: str, outcome: str, execution: str, code: str,
                   message: str) -> Verdict:
    """One row of ``REPORT_PAIRS`` as a verdict (its log tail carries markup and a bell)."""
    return make_verdict(sid, pid, outcome, execution=execution, code=code, message=message,
                        identity=REPORT_IDENTITY, source="/in", wall_seconds=0.7,
                        log=LogRef(path=None, tail=("tail [red]line[/red]", "\x07bell")))


def report_run(out: Path, pairs: list[tuple[str, str, str, str, str, str]] = REPORT_PAIRS,
               rejected_whole: str | None = "gone") -> Path:
    """An output directory of ``pairs`` (rows as in ``REPORT_PAIRS``), its summary listing each
    pair (unchanged ones too) and ``rejected_whole`` as a submission rejected as a whole."""
    verdicts = [report_verdict(*row) for row in pairs]
    write_verdicts(out, verdicts)
    ids = list(dict.fromkeys(r[0] for r in pairs))
    subs = [SubmissionSummary(id=s, source="/in", digest="d" * 64,
                              problems=tuple(r[1] for r in pairs if r[0] == s)) for s in ids]
    if rejected_whole:
        subs.append(SubmissionSummary(id=rejected_whole, source="/in", digest="d" * 64,
                                      problems=(), rejection=REJECTION))
    write_model(out / "summary.json", make_summary(
        [pair_line(v) for v in verdicts], subs,
        problems=("double_def", "multi_hole", "two_plus_two"), identity=REPORT_IDENTITY,
        compact=False, exit_code=1, finished_at="2026-01-01T00:00:09+00:00"))
    return out
