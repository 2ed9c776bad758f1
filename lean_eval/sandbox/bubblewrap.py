"""The one bubblewrap executable a run uses, found once per run (design §3) and vetted
(design §6.6): refused when setuid, and when older than ``MIN_VERSION`` unless the caller lowers
the floor (recorded), never below ``USERNS_LOCK_VERSION``. The identity every verdict records is
read from the file itself; only the version is the executable's word (kept in ``_SAID``), and
type, mode and owner are looked at on every resolution.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from packaging.version import Version

from lean_eval.errors import SandboxUnavailableError, UsageError
from lean_eval.sandbox import environment
from lean_eval.supervise import process

MIN_VERSION = "0.12.0"
# The wrapper's --disable-userns (sandbox.NO_NESTED_USERNS) is in bubblewrap from 0.8.0 on: no
# --allow-bwrap-version goes below it, as an older one could not start any sandbox.
USERNS_LOCK_VERSION = "0.8.0"
_VERSION = re.compile(r"^\d+(\.\d+){1,3}$")
# What `--version` printed, by path and SHA-256 of the bytes that printed it: a caller resolving
# bubblewrap run after run (the Python API, the test suite) runs one `--version` per binary,
# not one per run. Only a version that was accepted is kept; anything else is asked again.
_SAID: dict[tuple[Path, str], str] = {}


class BwrapInfo(NamedTuple):
    """The resolved bubblewrap and its identity."""

    path: Path
    version: str
    owner: str = ""
    setuid: bool = False
    sha256: str = ""
    minimum: str = MIN_VERSION


def parse_version(text: str) -> Version:
    """A comparable version (``0.12`` equals ``0.12.0``); UsageError unless dotted numbers."""
    if not _VERSION.match(text):
        raise UsageError(f"not a bubblewrap version: {text!r} (expected e.g. 0.12.0)")
    return Version(text)


def prepared_prefix(env: Mapping[str, str]) -> Path:
    """Where ``lean-eval prepare`` installs bubblewrap."""
    data = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME", "~")) / ".local" / "share")
    return Path(data).expanduser() / "lean-eval" / "bwrap"


def _find(explicit: str | None, env: Mapping[str, str],
          writable_roots: Sequence[Path]) -> Path:
    chosen = explicit
    if chosen:
        path = Path(chosen).expanduser()
        return path if path.is_absolute() else Path.cwd() / path
    # prepare installs there only when the system bwrap is too old, so it comes first
    prepared = str(prepared_prefix(env) / "bin")
    for entry in environment.filter_search_path(f"{prepared}:{env.get('PATH', '')}",
                                            writable_roots):
        candidate = Path(entry) / "bwrap"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise SandboxUnavailableError(
        f"bubblewrap (bwrap) was found neither in {prepared} (where `lean-eval prepare` "
        "installs it) nor on the filtered PATH; install it (`lean-eval prepare`, or "
        "apt-get install bubblewrap) or pass --bwrap PATH. lean-eval has no unsandboxed mode."
    )


def _owner(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def resolve_bwrap(explicit: str | None, env: Mapping[str, str],
                  writable_roots: Sequence[Path] = (),
                  allow_version: str | None = None) -> BwrapInfo:
    """Find, identify and vet bubblewrap by the module's rules: SandboxUnavailableError when it
    fails them, UsageError for a malformed ``allow_version``."""
    minimum = allow_version or MIN_VERSION
    parse_version(minimum)
    path = _find(explicit, env, writable_roots).absolute()
    try:
        info = path.stat()
    except OSError as exc:
        raise SandboxUnavailableError(f"bubblewrap {path} cannot be used: {exc}") from exc
    if not stat.S_ISREG(info.st_mode) or not os.access(path, os.X_OK):
        raise SandboxUnavailableError(f"bubblewrap {path} is not an executable file")
    if info.st_mode & stat.S_ISUID:
        raise SandboxUnavailableError(
            f"bubblewrap {path} is setuid; lean-eval refuses setuid bwrap (0.12.0 removed "
            "setuid support). Install an unprivileged build with scripts/install_bwrap.sh")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    version = _SAID.get((path, digest)) or _version(path)
    if parse_version(version) < parse_version(USERNS_LOCK_VERSION):
        raise SandboxUnavailableError(
            f"bubblewrap {path} is version {version}; lean-eval's sandbox needs "
            f"{USERNS_LOCK_VERSION} or newer for --disable-userns whatever "
            f"--allow-bwrap-version says ({MIN_VERSION} or newer for CVE-2026-87766). "
            "Install it with `lean-eval prepare`")
    if parse_version(version) < parse_version(minimum):
        raise SandboxUnavailableError(
            f"bubblewrap {path} is version {version}; lean-eval requires {MIN_VERSION} or newer "
            "(CVE-2026-87766). Install it with `lean-eval prepare`, or accept an older "
            "one explicitly with --allow-bwrap-version MIN (LEAN_EVAL_ALLOW_BWRAP_VERSION)")
    _SAID[path, digest] = version
    return BwrapInfo(path=path, version=version, owner=_owner(info.st_uid), setuid=False,
                     sha256=digest, minimum=minimum)


def _version(path: Path) -> str:
    """The version ``path --version`` prints; SandboxUnavailableError when it prints none."""
    outcome = process.run_capture((str(path), "--version"), env={"PATH": "/usr/bin:/bin"},
                                  cwd=Path("/"), timeout=30)
    words = outcome.stdout.decode(errors="replace").split()
    if outcome.returncode != 0 or not words:
        raise SandboxUnavailableError(f"bubblewrap {path} does not run: `{path} --version` "
                                      f"exited {outcome.returncode}")
    if not _VERSION.match(words[-1]):
        raise SandboxUnavailableError(f"bubblewrap {path} reports no version ({words[-1]!r})")
    return words[-1]
