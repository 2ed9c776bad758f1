"""What ``lean-eval prepare`` installs and from where: the pinned archives, the settings, the
environment its commands run with, and what it says to pass instead without network."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from lean_eval.benchmark.toolchain import elan_dir_name, standin_hint
from lean_eval.machine import download
from lean_eval.sandbox import bubblewrap

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


def offline_hint(settings: Settings, elan: bool = True) -> str:
    """What a failed download says to pass instead, on a machine without network; ``elan``:
    whether elan and the Lean release are still to come (not with --toolchain)."""
    if settings.toolchain is not None or not elan:
        return (f"without network, pass --offline DIR holding {BWRAP_TARBALL} (from "
                f"{BWRAP_URL}) under exactly this name")
    return (f"without network, pass --offline DIR holding {settings.elan_archive.name} (from "
            f"{settings.elan_archive.url}) and {BWRAP_TARBALL} (from {BWRAP_URL}), under "
            "exactly these names; the Lean release itself comes only through elan's network "
            "(`elan toolchain install`), so without network also pass --toolchain DIR (a Lean "
            "toolchain directory holding bin/lake and bin/nanoda_bin, e.g. copied from "
            "~/.elan/toolchains of a networked machine; elan is then not needed)."
            + standin_hint(settings.benchmark))


def lean_offline(settings: Settings, name: str) -> str | None:
    """With --offline and no --toolchain, what the Lean step still needs when the release
    ``name`` is not installed (None otherwise): elan's network, which --offline cannot replace."""
    if settings.offline is None or settings.toolchain is not None:
        return None
    if (elan_home(settings.env) / "toolchains" / elan_dir_name(name)).is_dir():
        return None
    return (f"{name} is not installed and --offline does not cover it: the Lean release comes "
            "only through elan's network (`elan toolchain install`); without network pass "
            "--toolchain DIR (a Lean toolchain directory holding bin/lake and bin/nanoda_bin; "
            "elan and its archive are then not needed)." + standin_hint(settings.benchmark))


def plan_details(settings: Settings) -> tuple[str, ...]:
    """What ``prepare -v`` shows first: the pinned archives and the directories it uses."""
    elan = settings.elan_archive
    return (f"benchmark   {settings.benchmark}",
            f"elan        {elan.name} from {settings.offline or elan.url} (SHA-256 {elan.sha256})",
            f"ELAN_HOME   {elan_home(settings.env)}",
            f"toolchain   {settings.toolchain or 'the elan install of lean-toolchain'}",
            (f"bubblewrap  {settings.bwrap or 'found, else built'} (>= "
             f"{settings.allow_bwrap or bubblewrap.MIN_VERSION}); {BWRAP_TARBALL} from "
             f"{settings.offline or BWRAP_URL} into {bubblewrap.prepared_prefix(settings.env)}"))


def elan_home(env: Mapping[str, str]) -> Path:
    return Path(env.get("ELAN_HOME") or Path(env.get("HOME", "~")) / ".elan").expanduser()


def command_env(settings: Settings, *bins: Path) -> dict[str, str]:
    env = {"PATH": ":".join([*map(str, bins), _BASE_PATH]),
           "HOME": settings.env.get("HOME", str(Path.home())),
           "ELAN_HOME": str(elan_home(settings.env)), "LANG": "C.UTF-8"}
    for name in ("XDG_DATA_HOME", "XDG_CACHE_HOME", "http_proxy", "https_proxy", "no_proxy",
                 "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
        if settings.env.get(name):
            env[name] = settings.env[name]
    return env
