"""Paths and names: the repository, the stand-in toolchain, the example problems, and the
toolchain and bubblewrap this machine has."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from lean_eval.benchmark.toolchain import resolve_toolchain
from lean_eval.sandbox import bubblewrap
from lean_eval.supervise import process

REPO = Path(__file__).resolve().parent.parent.parent
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


def passable(path: Path) -> Path:
    """``path`` and every directory above it inside the session's temp base (conftest points
    the system temp dir there) made passable, 0711 at least: pytest makes its temp dirs 0700,
    and a root harness runs Lake as the sandbox identity (uid 65534 by default), which must
    reach the scoring directories a test puts there."""
    # the session base holding pytest's dirs: the controller's under xdist, not a worker's own
    base = next((p for p in path.parents if p.name.startswith("lean-eval-pytest-")),
                Path(tempfile.gettempdir()))
    for here in (path, *path.parents):
        if here == base or not here.is_relative_to(base):
            break
        mode = here.stat().st_mode & 0o7777
        if mode & 0o011 != 0o011:
            here.chmod(mode | 0o011)
    return path


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
