"""What the batch benchmarks share: a benchmark copy, submissions, and a run-eval child whose
wall time, exit status and peak RSS (the harness process alone) are measured.

Everything lives under ``--base`` (default ``/srv/lean-eval-bench``: outside the paths Lake masks,
like the suite's leak tests) and is removed afterwards. Runs use the stand-in toolchain of
``tests/standin`` through real bubblewrap.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from lean_eval.supervise import process

REPO = Path(__file__).resolve().parent.parent
STANDIN = REPO / "tests" / "standin" / "toolchain"
CORRECT = REPO / "examples" / "submissions" / "correct"
PROBLEM = "two_plus_two"
_FILES = ("problems", "workspaces", "lean-toolchain", "lakefile.toml", "lake-manifest.json",
          "benchmark.toml")
# The harness, run as a child: reports its own peak RSS and pid (for the kill benchmark).
_WRAPPER = (
    "import os, resource, sys\n"
    "pidfile = os.environ.get('BENCH_PIDFILE')\n"
    "if pidfile: open(pidfile, 'w').write(str(os.getpid()))\n"
    "sys.argv = ['lean-eval', *sys.argv[1:]]\n"
    "try:\n"
    "    from lean_eval.cli import main\n"
    "    main()\n"
    "finally:\n"
    "    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
    "    print(f'PEAK_RSS_KB={rss}', file=sys.stderr)\n"
)


class Result(NamedTuple):
    """One run-eval child."""

    wall: float
    returncode: int | None
    signal: int | None
    peak_rss_mb: float | None
    stderr: str


def workdir(base: Path, name: str) -> Path:
    """A fresh directory for one benchmark."""
    base.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=base))
    path.chmod(0o755)
    return path


def bench_copy(where: Path) -> Path:
    """The repository's benchmark files, copied (scoring reads the copy, not the checkout)."""
    root = where / "bench"
    root.mkdir()
    for name in _FILES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=shutil.ignore_patterns(".lake"))
        elif source.exists():
            shutil.copy2(source, root / name)
    return root


def correct(problem: str = PROBLEM) -> str:
    """The example correct proof of ``problem``."""
    return (CORRECT / problem / "Submission.lean").read_text(encoding="utf-8")


def starter(problem: str = PROBLEM) -> str:
    """The unchanged starter of ``problem`` (its pair never starts a sandbox)."""
    return (REPO / "workspaces" / problem / "Submission.lean").read_text(encoding="utf-8")


def submission(parent: Path, name: str, files: Mapping[str, str | bytes],
               problem: str = PROBLEM) -> Path:
    """``parent/name/<problem>/<relpath>`` for each file."""
    root = parent / name
    for rel, content in files.items():
        target = root / problem / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return root


def bwrap_floor() -> str:
    """The installed bubblewrap's version (the stand-in runs accept it explicitly)."""
    found = shutil.which("bwrap") or "/usr/bin/bwrap"
    out = process.run_capture((found, "--version"), env={}, cwd=Path("/"))
    match = re.search(rb"(\d+\.\d+(?:\.\d+)?)", out.stdout)
    return match.group(1).decode() if match else "0.8.0"


def run_eval(bench: Path, subs: list[Path], out: Path, *extra: str, timeout: float = 3600,
             env_extra: Mapping[str, str] | None = None,
             on_start: Any = None) -> Result:
    """run-eval as a child process (``-q``, probes skipped, stand-in toolchain)."""
    args = ["run-eval", *map(str, subs), "--out", str(out), "--benchmark", str(bench),
            "--toolchain", str(STANDIN), "--skip-probes", "-q",
            "--allow-bwrap-version", bwrap_floor(), *extra]
    argv = (sys.executable, "-c", _WRAPPER, *args)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["PYTHONPATH"] = str(REPO)
    env.update(env_extra or {})
    started = time.monotonic()
    if on_start is not None:
        on_start()
    done = process.run(argv, env=env, cwd=REPO, timeout=timeout, output_cap=1 << 20)
    wall = time.monotonic() - started
    stderr = done.stderr.decode(errors="replace")
    found = re.findall(r"PEAK_RSS_KB=(\d+)", stderr)
    return Result(wall, done.returncode, done.signal,
                  int(found[-1]) / 1024 if found else None, stderr)


def startup(bench: Path, where: Path) -> float:
    """Wall time of a run whose one pair is an unchanged starter: the fixed cost of a run
    (interpreter, catalog, bubblewrap identity, planning, summary) with no sandbox started."""
    sub = submission(where / "startup-subs", "starter", {"Submission.lean": starter()})
    result = run_eval(bench, [sub], where / "startup-out", "--work-dir", str(where / "work"))
    if result.returncode != 0:
        raise SystemExit(f"the start-up run failed: {result.stderr[-2000:]}")
    return result.wall


def summary(out: Path) -> dict[str, Any]:
    """The run's summary.json."""
    data: dict[str, Any] = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return data


def survivors(marker: str) -> list[str]:
    """Processes whose command line or working directory mentions ``marker``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ")
            cwd = os.readlink(f"/proc/{name}/cwd")
        except OSError:
            continue
        if marker.encode() in cmdline or cwd.startswith(marker):
            found.append(f"{name}: {cmdline[:160].decode(errors='replace')}")
    return found
