"""Locate the pinned Lean toolchain and the tools the driver needs from it.

Invariants:
- ``lake`` and ``nanoda_bin`` are absolute paths inside the toolchain directory; nothing is
  looked up on PATH.
- A toolchain without ``nanoda_bin`` is refused: acceptance always needs NanoDa (design §6.4).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from lean_eval.errors import ToolchainError


class Toolchain(NamedTuple):
    """A resolved toolchain directory and its absolute tools."""

    name: str
    root: Path
    lake: Path
    nanoda: Path


def elan_dir_name(name: str) -> str:
    """The directory elan installs a toolchain under: ``/`` → ``--`` and ``:`` → ``---``."""
    return name.replace("/", "--").replace(":", "---")


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def resolve_toolchain(explicit: Path | None, env: Mapping[str, str], name: str) -> Toolchain:
    """Resolve ``--toolchain`` (the CLI fills it from ``LEAN_EVAL_TOOLCHAIN``), else the elan
    install of ``name``."""
    if explicit is not None:
        root = explicit.expanduser()
        if not root.is_dir():
            raise ToolchainError(f"toolchain directory {root} does not exist")
    else:
        elan_home = Path(env.get("ELAN_HOME") or Path(env.get("HOME", "~")) / ".elan")
        root = elan_home.expanduser() / "toolchains" / elan_dir_name(name)
        if not root.is_dir():
            raise ToolchainError(
                f"the pinned Lean release {name} is not installed (looked for {root}). "
                f"Install it with `lean-eval prepare` (or `elan toolchain install {name}`), "
                "or pass --toolchain DIR "
                "(or set LEAN_EVAL_TOOLCHAIN) to use a toolchain directory holding bin/lake."
            )
    root = root.resolve()
    lake = root / "bin" / "lake"
    nanoda = root / "bin" / "nanoda_bin"
    if not _executable(lake):
        raise ToolchainError(f"toolchain {root} has no executable bin/lake")
    if not _executable(nanoda):
        raise ToolchainError(
            f"toolchain {root} does not bundle bin/nanoda_bin; lean-eval requires NanoDa, "
            "bundled from Lean 4.35.0-rc2 on"
        )
    return Toolchain(name=name, root=root, lake=lake, nanoda=nanoda)
