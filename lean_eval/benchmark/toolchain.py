"""Locate the pinned Lean toolchain and the tools the driver runs from it (design §2, §5.4).

Invariants: ``lake`` and ``nanoda_bin`` are absolute paths inside the toolchain directory, never
looked up on PATH; a toolchain without ``nanoda_bin`` is refused (design §6.4).
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


# The repository's stand-in for a Lean toolchain (tests/standin/README.md), named to a
# newcomer without Lean; it is used only when named with --toolchain, like any toolchain.
STANDIN = Path("tests") / "standin" / "toolchain"


def standin_hint(benchmark: Path | None) -> str:
    """What a machine without the Lean release can still try, when ``benchmark`` is a checkout
    of this project (it ships the stand-in); "" elsewhere."""
    if benchmark is None or not (benchmark / STANDIN / "bin" / "lake").is_file():
        return ""
    where = (benchmark / STANDIN).absolute()
    shown = os.path.relpath(where) if where.is_relative_to(Path.cwd()) else str(where)
    return (f" To try lean-eval without Lean, this checkout ships a stand-in toolchain: "
            f"--toolchain {shown} (the test suite's imitation of `lake comparator`; its "
            "verdicts prove nothing about a proof).")


def resolve_toolchain(explicit: Path | None, env: Mapping[str, str], name: str,
                      hint: str = "") -> Toolchain:
    """``--toolchain``, else the elan install of ``name``; ToolchainError when it is unusable.
    ``hint``: appended when the release is not installed (``standin_hint``)."""
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
                "(or set LEAN_EVAL_TOOLCHAIN) to use a toolchain directory holding bin/lake; "
                "`lean-eval prepare --toolchain DIR` installs no release, so pass that same "
                "--toolchain DIR here too." + hint
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


# The first Lean release bundling `lake comparator` and `bin/nanoda_bin`, which the driver runs
# (design §2, §5.4).
FIRST_DRIVER_RELEASE = "v4.35.0-rc2"


def release_incompatibility(name: str) -> str | None:
    """Why the pinned release ``name`` cannot run the driver; None when it can or its name
    gives no version (a nightly, a custom toolchain)."""
    from packaging.version import InvalidVersion, Version

    tag = name.strip().rpartition(":")[2]
    if not tag.startswith("v"):
        return None
    try:
        pinned = Version(tag[1:])
    except InvalidVersion:
        return None
    if pinned >= Version(FIRST_DRIVER_RELEASE[1:]):
        return None
    return (f"the pinned Lean release {name.strip()} predates `lake comparator` and the bundled "
            f"`nanoda_bin`, which lean-eval drives (both first in {FIRST_DRIVER_RELEASE}); its "
            f"maintainers must bump lean-toolchain (the root's and every workspace's) to "
            f"{FIRST_DRIVER_RELEASE} or later, with a Mathlib revision built for that release in "
            "every [[require]] and lake-manifest.json")


def check_release(explicit: Path | None, name: str) -> None:
    """ToolchainError for a pinned release that cannot run the driver; an explicit toolchain
    is checked by ``resolve_toolchain`` instead."""
    if explicit is None and (problem := release_incompatibility(name)):
        raise ToolchainError(problem)
