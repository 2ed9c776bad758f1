"""Everything a ``prepare`` step still to do needs, checked before any step runs (so one try
names it all and nothing is downloaded first), and what bubblewrap the machine already has."""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from pathlib import Path

from lean_eval.errors import SetupError
from lean_eval.machine.settings import (
    BWRAP_TARBALL,
    BWRAP_URL,
    Settings,
    command_env,
    elan_home,
    lean_offline,
)
from lean_eval.sandbox import bubblewrap
from lean_eval.supervise import process


def usable_bwrap(path: Path | None, env: Mapping[str, str],
                 allow: str | None = None) -> str | None:
    """The bwrap run-eval would pick by default (or ``path``), if it is new enough."""
    try:
        found = bubblewrap.resolve_bwrap(str(path) if path else None, env, (), allow)
    except SetupError:
        return None
    return f"{found.path} {found.version}"


def found_bwrap(settings: Settings) -> tuple[str, str | None]:
    """What the default lookup finds, when it is too old to score with: a phrase, and the
    version ``--allow-bwrap-version`` would have to name to use it (None: nothing usable)."""
    try:
        old = bubblewrap.resolve_bwrap(None, settings.env, (), bubblewrap.USERNS_LOCK_VERSION)
    except SetupError:
        return "no usable bubblewrap was found", None
    return (f"the bubblewrap found, {old.path} {old.version}, is older than "
            f"{settings.allow_bwrap or bubblewrap.MIN_VERSION}"), old.version


def installer_path(settings: Settings) -> Path:
    return settings.bwrap_installer or settings.benchmark / "scripts" / "install_bwrap.sh"


def installer_env(settings: Settings) -> dict[str, str]:
    env = command_env(settings)
    if settings.offline is not None:
        env["BWRAP_TARBALL"] = str(settings.offline / BWRAP_TARBALL)
    return env


def prerequisites(settings: Settings, name: str = "") -> tuple[tuple[str, str], ...]:
    """(step, what is missing) for every step still to do, checked before any of them runs;
    the installer's own tool check is a command, so a dry run leaves it out. ``name``: the
    pinned Lean release."""
    missing: list[tuple[str, str]] = []
    elan = elan_home(settings.env) / "bin" / "elan"
    if settings.toolchain is None and not (elan.is_file() and os.access(elan, os.X_OK)):
        if settings.offline is not None:
            archive = settings.offline / settings.elan_archive.name
            if not archive.is_file():
                missing.append(("elan", (f"--offline: {archive} does not exist (expected "
                                        f"{settings.elan_archive.url})")))
        elif platform.machine() != "x86_64":
            missing.append(("elan", (f"no pinned elan release for {platform.machine()}; install "
                                    f"elan into {elan.parent.parent} yourself")))
    if settings.toolchain is not None and not (settings.toolchain / "bin" / "lake").is_file():
        missing.append(("lean", f"--toolchain {settings.toolchain} has no bin/lake"))
    if settings.bwrap is not None:
        try:
            bubblewrap.resolve_bwrap(str(settings.bwrap), settings.env, (), settings.allow_bwrap)
        except SetupError as exc:
            missing.append(("bubblewrap", str(exc)))
    elif usable_bwrap(None, settings.env, settings.allow_bwrap) is None:
        missing += [("bubblewrap", text) for text in _build_prerequisites(settings)]
    # prepare stops here anyway: on a machine without elan yet (a newcomer's), say now what
    # --offline cannot bring either, not only once elan is installed
    fresh = settings.toolchain is None and not (elan.is_file() and os.access(elan, os.X_OK))
    lean = lean_offline(settings, name) if missing and name and fresh else None
    if lean is not None:
        missing.insert(sum(step == "elan" for step, _ in missing), ("lean", lean))
    return tuple(missing)


def _build_prerequisites(settings: Settings) -> list[str]:
    """What building bubblewrap lacks, each said with what was found and the option that
    would use it instead."""
    found, version = found_bwrap(settings)
    use = (f"or pass --allow-bwrap-version {version} to use it" if version
           else "or pass --bwrap PATH")
    installer, env = installer_path(settings), installer_env(settings)
    if settings.offline is not None and not Path(env["BWRAP_TARBALL"]).is_file():
        return [(f"{found}, and --offline: {env['BWRAP_TARBALL']} does not exist (expected "
                f"{BWRAP_URL}); put it there, {use}")]
    if settings.dry_run:
        return []  # the plan says what would run; nothing is started
    if not installer.is_file():
        return [(f"{found}, and {installer} does not exist to build one; run prepare from a "
                f"benchmark checkout (--benchmark DIR), {use}")]
    check = process.run(("bash", str(installer), "--check"), env=env, cwd=installer.parent,
                        timeout=60, output_cap=16 * 1024)
    if check.returncode == 0:
        return []
    said = (check.stderr or check.stdout).decode(errors="replace").strip().splitlines()
    return [(f"{found}, and building {BWRAP_TARBALL}: {said[-1] if said else 'check failed'}; "
            f"install them, {use}")]
