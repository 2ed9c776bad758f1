"""A run-eval in a child process, watched from outside; and a python that runs the harness
unprivileged."""

from __future__ import annotations

import os
import shutil
import subprocess  # noqa: TID251 - the unprivileged run needs a real child process
import sys
import tempfile
import threading
import time
from pathlib import Path

from lean_eval.supervise import process
from support.places import BWRAP_FLOOR, REPO, STANDIN, UNPRIVILEGED
from support.runs import RunEval


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
    """Run ``argv`` under :func:`lean_eval.supervise.process.run` in a thread; its outcome is
    appended
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
    # TMPDIR: the session's private temp base (conftest), which uid 65534 may write too.
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": str(lib), "LANG": "C.UTF-8",
           "HOME": str(base), "TMPDIR": tempfile.gettempdir()}
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
         "typing_inspection", "rich", "markdown_it", "mdurl", "pygments", "packaging",
         "rfc8785", "cryptography", "cffi", "_cffi_backend", "pycparser",  # these: --sign-key
         "securesystemslib")
