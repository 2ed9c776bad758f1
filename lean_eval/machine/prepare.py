"""Make a machine ready to score (``lean-eval prepare``): elan, Lean, bubblewrap, shared deps.

Invariants: every archive is checked against a pinned SHA-256 before it is read (elan's here,
through ``download.fetch_verified``; bubblewrap's by ``scripts/install_bwrap.sh``); a step whose
result exists is ``present`` and changes nothing, so a second run is a no-op; ``dry_run`` starts
no command and writes nothing; before any step, every prerequisite of every step still to do is
checked and all missing ones are named in one ``PrerequisitesError`` (nothing downloaded); the
steps then run in order and the first failure stops them (``StepFailedError`` names it and
carries the steps finished before it).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import stat
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Literal, NamedTuple

from lean_eval.benchmark import catalog
from lean_eval.benchmark.toolchain import elan_dir_name
from lean_eval.errors import PrepareError, PrerequisitesError, SetupError, StepFailedError
from lean_eval.files.decoding import toml_table
from lean_eval.machine import download
from lean_eval.machine.prerequisites import (
    found_bwrap,
    installer_env,
    installer_path,
    prerequisites,
    usable_bwrap,
)
from lean_eval.machine.settings import (
    BWRAP_TARBALL,
    BWRAP_URL,
    ELAN,
    Settings,
    command_env,
    elan_home,
    offline_hint,
    plan_details,
)
from lean_eval.sandbox import bubblewrap
from lean_eval.supervise import process

__all__ = ["BWRAP_TARBALL", "BWRAP_URL", "ELAN", "Settings", "Step", "offline_hint",
           "plan_details", "prepare", "prerequisites"]

_STAMP = "lean-eval-prepared.json"
class Step(NamedTuple):
    """One step's outcome: ``done``, ``present`` (nothing to do) or ``planned`` (dry run)."""

    name: str
    status: Literal["done", "present", "planned"]
    detail: str


class _Scratch:
    """A private directory made on first use, so a run with nothing to do writes nothing."""

    def __init__(self, parent: Path | None) -> None:
        self.parent = parent
        self.made: Path | None = None

    def __call__(self) -> Path:
        if self.made is None:
            if self.parent is not None:
                self.parent.mkdir(parents=True, exist_ok=True)
            self.made = Path(tempfile.mkdtemp(prefix="lean-eval-prepare-", dir=self.parent))
        return self.made

    def remove(self) -> None:
        if self.made is not None:
            shutil.rmtree(self.made, ignore_errors=True)


def _run(settings: Settings, argv: tuple[str, ...], cwd: Path, env: dict[str, str],
         what: str) -> process.ProcessResult:
    outcome = process.run(argv, env=env, cwd=cwd, timeout=settings.timeout,
                          output_cap=64 * 1024)
    if outcome.returncode != 0:
        tail = (outcome.stderr or outcome.stdout).decode(errors="replace").strip()
        last = tail.splitlines()[-1] if tail else ""
        how = ("timed out" if outcome.timed_out else f"exited {outcome.returncode}"
               if outcome.returncode is not None else f"was killed by signal {outcome.signal}")
        raise PrepareError(f"{what}: `{' '.join(argv)}` {how}" + (f": {last}" if last else ""))
    return outcome


def _step_elan(settings: Settings, scratch: _Scratch) -> Step:
    if settings.toolchain is not None:
        return Step("elan", "present", f"not needed: --toolchain {settings.toolchain}")
    elan = elan_home(settings.env) / "bin" / "elan"
    if elan.is_file() and os.access(elan, os.X_OK):
        return Step("elan", "present", f"{elan}")
    if settings.offline is None and platform.machine() != "x86_64":
        raise PrepareError(f"no pinned elan release for {platform.machine()}; install elan "
                           f"into {elan.parent.parent} yourself and rerun")
    source = (settings.offline / settings.elan_archive.name if settings.offline
              else settings.elan_archive.url)
    if settings.dry_run:
        return Step("elan", "planned", f"install elan into {elan.parent.parent} from {source} "
                                       f"(SHA-256 {settings.elan_archive.sha256[:12]}...)")
    archive = download.fetch_verified(settings.elan_archive, settings.offline, scratch(),
                                      offline_hint(settings))
    init = download.unpack_member(archive, "elan-init", scratch())
    _run(settings, (str(init), "-y", "--no-modify-path", "--default-toolchain", "none"),
         scratch(), command_env(settings), "elan-init")
    if not elan.is_file():
        raise PrepareError(f"elan-init ran but {elan} does not exist")
    return Step("elan", "done", f"installed {elan} from {source}")


def _toolchain_dir(settings: Settings, name: str) -> Path:
    if settings.toolchain is not None:
        return settings.toolchain
    return elan_home(settings.env) / "toolchains" / elan_dir_name(name)


def _step_lean(settings: Settings, name: str) -> Step:
    if settings.toolchain is not None:
        if not (settings.toolchain / "bin" / "lake").is_file():
            raise PrepareError(f"--toolchain {settings.toolchain} has no bin/lake")
        return Step("lean", "present", f"--toolchain {settings.toolchain}")
    home = elan_home(settings.env)
    toolchain = home / "toolchains" / elan_dir_name(name)
    if toolchain.is_dir():
        return Step("lean", "present", f"{name} in {toolchain}")
    argv = (str(home / "bin" / "elan"), "toolchain", "install", name)
    if settings.dry_run:
        return Step("lean", "planned", " ".join(argv))
    try:
        _run(settings, argv, home, command_env(settings, home / "bin"), "installing Lean")
    except PrepareError as exc:  # most often: elan could not reach its release server
        raise PrepareError(f"{exc}; the Lean release comes through elan's network (--offline "
                           "covers elan and bubblewrap only): run prepare where elan can reach "
                           "it, or pass --toolchain DIR (a Lean toolchain directory holding "
                           "bin/lake and bin/nanoda_bin)") from None
    if not toolchain.is_dir():
        raise PrepareError(f"`{' '.join(argv)}` succeeded but {toolchain} does not exist")
    return Step("lean", "done", f"{' '.join(argv)} -> {toolchain}")


def _step_bwrap(settings: Settings, scratch: _Scratch) -> Step:
    prefix = bubblewrap.prepared_prefix(settings.env)
    prepared = prefix / "bin" / "bwrap"
    floor = settings.allow_bwrap or bubblewrap.MIN_VERSION
    if settings.bwrap is not None:  # --bwrap: this one or nothing; never installed over
        found = bubblewrap.resolve_bwrap(str(settings.bwrap), settings.env, (),
                                         settings.allow_bwrap)
        return Step("bubblewrap", "present", f"--bwrap {found.path} {found.version} "
                                             f"(>= {floor})")
    usable = usable_bwrap(None, settings.env, settings.allow_bwrap)
    if usable is not None:
        return Step("bubblewrap", "present", f"bubblewrap {usable} (>= {floor})")
    installer = installer_path(settings)
    argv = ("bash", str(installer), "--prefix", str(prefix))
    env = installer_env(settings)
    if settings.dry_run:
        origin = env.get("BWRAP_TARBALL", "its release URL")
        return Step("bubblewrap", "planned", f"{' '.join(argv)} (tarball from {origin}, SHA-256 "
                                        "checked by the script before unpacking)")
    try:
        outcome = _run(settings, argv, scratch(), env, "installing bubblewrap")
    except PrepareError as exc:
        seen, version = found_bwrap(settings)
        use = f"--allow-bwrap-version {version}" if version else "--bwrap PATH"
        if settings.offline is not None:
            raise PrepareError(f"{exc} ({seen}; or pass {use} to use it)") from None
        raise PrepareError(f"{exc}; {seen}. If the download failed: "
                           f"{offline_hint(settings, elan=False)}; or pass {use} to use "
                           "a bubblewrap already installed") from None
    usable = usable_bwrap(prepared, settings.env)
    if usable is None:
        raise PrepareError(f"{installer} finished but {prepared} is not a usable bubblewrap "
                           f">= {bubblewrap.MIN_VERSION}")
    line = outcome.stdout.decode(errors="replace").strip()
    return Step("bubblewrap", "done", f"installed {usable}" + (f" ({line})" if line else ""))


def _set_writable(root: Path, writable: bool) -> None:
    for path in (root, *root.rglob("*")):
        if path.is_symlink():
            continue
        mode = path.stat().st_mode
        path.chmod(mode | stat.S_IWUSR if writable else mode & ~0o222)


def _step_dependencies(settings: Settings, name: str) -> Step:
    root = settings.benchmark
    requires = toml_table((root / "lakefile.toml").read_bytes(),
                          "lakefile.toml").get("require", [])
    if not requires:
        return Step("dependencies", "present", "the benchmark has no shared dependencies "
                                               "(no [[require]] in lakefile.toml)")
    stamp = root / ".lake" / _STAMP
    wanted = {"toolchain": name, "manifest_sha256": catalog.sha256(
        (root / "lake-manifest.json").read_bytes())}
    packages = root / ".lake" / "packages"
    if stamp.is_file() and packages.is_dir() and json.loads(stamp.read_text()) == wanted:
        return Step("dependencies", "present", f"{packages} built for {name}, read-only")
    toolchain = _toolchain_dir(settings, name)
    lake = str(toolchain / "bin" / "lake")
    commands: list[tuple[str, ...]] = [(lake, "exe", "cache", "get")] if any(
        isinstance(r, dict) and r.get("name") == "mathlib" for r in requires) else []
    commands.append((lake, "build"))
    if settings.dry_run:
        return Step("dependencies", "planned",
                    "; ".join(" ".join(c) for c in commands)
                    + f" in {root}; then make {packages} read-only")
    if packages.is_dir():
        _set_writable(packages, writable=True)  # pins changed: Lake must update them
    env = command_env(settings, toolchain / "bin", elan_home(settings.env) / "bin")
    for argv in commands:
        _run(settings, argv, root, env, "building the shared dependencies")
    if packages.is_dir():
        _set_writable(packages, writable=False)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps(wanted, indent=2) + "\n", encoding="utf-8")
    return Step("dependencies", "done", "; ".join(" ".join(c) for c in commands)
                + f"; {packages} is read-only")


def prepare(settings: Settings) -> tuple[Step, ...]:
    """Check every step's prerequisites (``PrerequisitesError`` naming each missing one), then
    run (or with ``dry_run``, plan) every step in order; stop at the first failure."""
    root = settings.benchmark
    if not (root / "lean-toolchain").is_file() or not (root / "lakefile.toml").is_file():
        raise PrepareError(f"{root} is not a benchmark checkout (no lean-toolchain or "
                           "lakefile.toml); pass --benchmark DIR")
    name = (root / "lean-toolchain").read_text(encoding="utf-8").strip()
    missing = prerequisites(settings, name)
    if missing:
        raise PrerequisitesError(missing)
    scratch = _Scratch(settings.scratch)  # never made in a dry run: nothing is fetched or run
    steps: tuple[tuple[str, Callable[[], Step]], ...] = (
        ("elan", lambda: _step_elan(settings, scratch)),
        ("lean", lambda: _step_lean(settings, name)),
        ("bubblewrap", lambda: _step_bwrap(settings, scratch)),
        ("dependencies", lambda: _step_dependencies(settings, name)))
    done: list[Step] = []
    try:
        for step, run in steps:
            done.append(_attempt(step, run, tuple(done)))
        return tuple(done)
    finally:
        scratch.remove()


def _attempt(step: str, run: Callable[[], Step], done: tuple[Step, ...]) -> Step:
    try:
        return run()
    except (SetupError, OSError, tarfile.TarError) as exc:
        raise StepFailedError(step, str(exc), done) from exc
