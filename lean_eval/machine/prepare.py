"""Make a machine ready to score (``lean-eval prepare``): elan, Lean, bubblewrap, shared deps.

Invariants: every archive is checked against a pinned SHA-256 before it is read (elan's here,
through ``download.fetch_verified``; bubblewrap's by ``scripts/install_bwrap.sh``); a step whose
result exists is ``present`` and changes nothing, so a second run is a no-op; ``dry_run`` starts
no command and writes nothing; the steps run in order and the first failure stops them
(``StepFailedError`` names it and carries the steps finished before it).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import stat
import tarfile
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal, NamedTuple

from lean_eval.benchmark import catalog
from lean_eval.benchmark.toolchain import elan_dir_name
from lean_eval.errors import PrepareError, SetupError, StepFailedError
from lean_eval.files.decoding import toml_table
from lean_eval.machine import download
from lean_eval.sandbox import bubblewrap
from lean_eval.supervise import process

_STAMP = "lean-eval-prepared.json"
_BASE_PATH = "/usr/local/bin:/usr/bin:/bin"


# elan 4.2.4 for x86_64 Linux; it holds `elan-init`, which installs elan into ELAN_HOME.
ELAN = download.Archive(
    name="elan-x86_64-unknown-linux-gnu.tar.gz",
    url="https://github.com/leanprover/elan/releases/download/v4.2.4/"
        "elan-x86_64-unknown-linux-gnu.tar.gz",
    sha256="42b94d4244e8353142c456ec0e4ca6528fd898a6c604d4059f494e706e431f63",
)
BWRAP_TARBALL = "bubblewrap-0.12.0.tar.xz"  # its SHA-256 is pinned in scripts/install_bwrap.sh
# install_bwrap.sh's DEFAULT_URL (tests/machine/test_prepare.py checks they agree), named in hints.
BWRAP_URL = ("https://github.com/containers/bubblewrap/releases/download/v0.12.0/"
             + BWRAP_TARBALL)


class Step(NamedTuple):
    """One step's outcome: ``done``, ``present`` (nothing to do) or ``planned`` (dry run)."""

    name: str
    status: Literal["done", "present", "planned"]
    detail: str


class Settings(NamedTuple):
    """What to prepare, and where."""

    benchmark: Path
    env: Mapping[str, str]
    offline: Path | None = None
    dry_run: bool = False
    elan_archive: download.Archive = ELAN
    bwrap_installer: Path | None = None  # default: <benchmark>/scripts/install_bwrap.sh
    scratch: Path | None = None  # where archives are fetched and unpacked (default: temp dir)
    toolchain: Path | None = None  # --toolchain: use this Lean, so elan and its install are moot
    bwrap: Path | None = None  # --bwrap: use this bubblewrap, checked, never installed over
    allow_bwrap: str | None = None  # --allow-bwrap-version: an older bwrap down to this is fine
    timeout: float = 4 * 3600.0


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


def offline_hint(settings: Settings) -> str:
    """What a failed download says to pass instead, on a machine without network."""
    return (f"without network, pass --offline DIR holding {settings.elan_archive.name} (from "
            f"{settings.elan_archive.url}) and {BWRAP_TARBALL} (from {BWRAP_URL}), under "
            "exactly these names; the Lean release itself comes only through elan's network "
            "(`elan toolchain install`), so without network also pass --toolchain DIR (a Lean "
            "toolchain directory holding bin/lake and bin/nanoda_bin, e.g. copied from "
            "~/.elan/toolchains of a networked machine; elan is then not needed)")


def plan_details(settings: Settings) -> tuple[str, ...]:
    """What ``prepare -v`` shows first: the pinned archives and the directories it uses."""
    elan = settings.elan_archive
    return (f"benchmark   {settings.benchmark}",
            f"elan        {elan.name} from {settings.offline or elan.url} (SHA-256 {elan.sha256})",
            f"ELAN_HOME   {_elan_home(settings.env)}",
            f"toolchain   {settings.toolchain or 'the elan install of lean-toolchain'}",
            (f"bubblewrap  {settings.bwrap or 'found, else built'} (>= "
             f"{settings.allow_bwrap or bubblewrap.MIN_VERSION}); {BWRAP_TARBALL} from "
             f"{settings.offline or BWRAP_URL} into {bubblewrap.prepared_prefix(settings.env)}"))


def _elan_home(env: Mapping[str, str]) -> Path:
    return Path(env.get("ELAN_HOME") or Path(env.get("HOME", "~")) / ".elan").expanduser()


def _command_env(settings: Settings, *bins: Path) -> dict[str, str]:
    env = {"PATH": ":".join([*map(str, bins), _BASE_PATH]),
           "HOME": settings.env.get("HOME", str(Path.home())),
           "ELAN_HOME": str(_elan_home(settings.env)), "LANG": "C.UTF-8"}
    for name in ("XDG_DATA_HOME", "XDG_CACHE_HOME", "http_proxy", "https_proxy", "no_proxy",
                 "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
        if settings.env.get(name):
            env[name] = settings.env[name]
    return env


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
    elan = _elan_home(settings.env) / "bin" / "elan"
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
         scratch(), _command_env(settings), "elan-init")
    if not elan.is_file():
        raise PrepareError(f"elan-init ran but {elan} does not exist")
    return Step("elan", "done", f"installed {elan} from {source}")


def _toolchain_dir(settings: Settings, name: str) -> Path:
    if settings.toolchain is not None:
        return settings.toolchain
    return _elan_home(settings.env) / "toolchains" / elan_dir_name(name)


def _step_lean(settings: Settings, name: str) -> Step:
    if settings.toolchain is not None:
        if not (settings.toolchain / "bin" / "lake").is_file():
            raise PrepareError(f"--toolchain {settings.toolchain} has no bin/lake")
        return Step("lean", "present", f"--toolchain {settings.toolchain}")
    home = _elan_home(settings.env)
    toolchain = home / "toolchains" / elan_dir_name(name)
    if toolchain.is_dir():
        return Step("lean", "present", f"{name} in {toolchain}")
    argv = (str(home / "bin" / "elan"), "toolchain", "install", name)
    if settings.dry_run:
        return Step("lean", "planned", " ".join(argv))
    try:
        _run(settings, argv, home, _command_env(settings, home / "bin"), "installing Lean")
    except PrepareError as exc:  # most often: elan could not reach its release server
        raise PrepareError(f"{exc}; the Lean release comes through elan's network (--offline "
                           "covers elan and bubblewrap only): run prepare where elan can reach "
                           "it, or pass --toolchain DIR (a Lean toolchain directory holding "
                           "bin/lake and bin/nanoda_bin)") from None
    if not toolchain.is_dir():
        raise PrepareError(f"`{' '.join(argv)}` succeeded but {toolchain} does not exist")
    return Step("lean", "done", f"{' '.join(argv)} -> {toolchain}")


def _usable_bwrap(path: Path | None, env: Mapping[str, str],
                  allow: str | None = None) -> str | None:
    """The bwrap run-eval would pick by default (or ``path``), if it is new enough."""
    try:
        found = bubblewrap.resolve_bwrap(str(path) if path else None, env, (), allow)
    except SetupError:
        return None
    return f"{found.path} {found.version}"


def _step_bwrap(settings: Settings, scratch: _Scratch) -> Step:
    prefix = bubblewrap.prepared_prefix(settings.env)
    prepared = prefix / "bin" / "bwrap"
    floor = settings.allow_bwrap or bubblewrap.MIN_VERSION
    if settings.bwrap is not None:  # --bwrap: this one or nothing; never installed over
        found = bubblewrap.resolve_bwrap(str(settings.bwrap), settings.env, (),
                                         settings.allow_bwrap)
        return Step("bubblewrap", "present", f"--bwrap {found.path} {found.version} "
                                             f"(>= {floor})")
    usable = _usable_bwrap(None, settings.env, settings.allow_bwrap)
    if usable is not None:
        return Step("bubblewrap", "present", f"bubblewrap {usable} (>= {floor})")
    installer = settings.bwrap_installer or settings.benchmark / "scripts" / "install_bwrap.sh"
    argv = ("bash", str(installer), "--prefix", str(prefix))
    env = _command_env(settings)
    if settings.offline is not None:
        env["BWRAP_TARBALL"] = str(settings.offline / BWRAP_TARBALL)
        if not Path(env["BWRAP_TARBALL"]).is_file():
            raise PrepareError(f"--offline: {env['BWRAP_TARBALL']} does not exist (expected "
                               f"{BWRAP_URL}); " + offline_hint(settings))
    if settings.dry_run:
        origin = env.get("BWRAP_TARBALL", "its release URL")
        return Step("bubblewrap", "planned", f"{' '.join(argv)} (tarball from {origin}, SHA-256 "
                                        "checked by the script before unpacking)")
    if not installer.is_file():
        raise PrepareError(f"{installer} does not exist; run prepare from a benchmark checkout "
                           "(--benchmark DIR)")
    try:
        outcome = _run(settings, argv, scratch(), env, "installing bubblewrap")
    except PrepareError as exc:
        if settings.offline is not None:
            raise
        raise PrepareError(f"{exc}; if the download failed: {offline_hint(settings)}; or pass "
                           "--bwrap PATH (or --allow-bwrap-version MIN) to use a bubblewrap "
                           "already installed") from None
    usable = _usable_bwrap(prepared, settings.env)
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
    env = _command_env(settings, toolchain / "bin", _elan_home(settings.env) / "bin")
    for argv in commands:
        _run(settings, argv, root, env, "building the shared dependencies")
    if packages.is_dir():
        _set_writable(packages, writable=False)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps(wanted, indent=2) + "\n", encoding="utf-8")
    return Step("dependencies", "done", "; ".join(" ".join(c) for c in commands)
                + f"; {packages} is read-only")


def prepare(settings: Settings) -> tuple[Step, ...]:
    """Run (or with ``dry_run``, plan) every step in order; stop at the first failure."""
    root = settings.benchmark
    if not (root / "lean-toolchain").is_file() or not (root / "lakefile.toml").is_file():
        raise PrepareError(f"{root} is not a benchmark checkout (no lean-toolchain or "
                           "lakefile.toml); pass --benchmark DIR")
    name = (root / "lean-toolchain").read_text(encoding="utf-8").strip()
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
