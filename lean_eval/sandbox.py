"""bubblewrap identity, the COMPARATOR_BWRAP wrapper, and what Lake is allowed to see of us.

Invariants (SPEC §5.4, §6.5-§6.8):
- The wrapper embeds the absolute bwrap path and every path it uses; Lake runs it with an empty
  environment, so it reads nothing from its environment.
- The wrapper passes Lake's arguments through unchanged and in order and inserts its own mounts
  right after Lake's last mount argument; anything it cannot parse makes it fail closed.
- Its mounts are computed from trusted state only (shared packages, inputs, outputs, sibling
  scoring directories), never from submission content.
- Lake's environment is an allowlist; PATH keeps only absolute, existing directories outside
  every writable root, after resolving symlinks.
"""

from __future__ import annotations

import os
import shlex
import stat
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

# Lake masks these in every sandboxed step; paths under them need no mask of ours.
LAKE_MASKED_ROOTS = ("/home", "/root", "/run/user", "/tmp")  # noqa: S108

# bwrap options by the number of arguments they take.
_MOUNT_2 = ("--bind", "--ro-bind", "--dev-bind", "--bind-try", "--ro-bind-try", "--dev-bind-try",
            "--symlink", "--chmod", "--file", "--bind-data", "--ro-bind-data")
_MOUNT_1 = ("--tmpfs", "--dir", "--dev", "--proc", "--mqueue", "--remount-ro")
_OTHER_2 = ("--setenv",)
_OTHER_1 = ("--unsetenv", "--chdir", "--hostname", "--uid", "--gid", "--perms", "--size",
            "--userns", "--userns2", "--pidns", "--cap-add", "--cap-drop", "--seccomp",
            "--add-seccomp-fd", "--exec-label", "--file-label", "--lock-file", "--sync-fd",
            "--info-fd", "--json-status-fd", "--block-fd", "--userns-block-fd", "--argv0")
_OTHER_0 = ("--clearenv", "--unshare-all", "--unshare-user", "--unshare-user-try",
            "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
            "--unshare-cgroup", "--unshare-cgroup-try", "--share-net", "--die-with-parent",
            "--new-session", "--as-pid-1", "--disable-userns", "--assert-userns-disabled",
            "--level-prefix")
WRAPPER_TAG = "lean-eval-wrapper"


class WrapperSpec(NamedTuple):
    """What the wrapper adds to Lake's sandbox; every path absolute and trusted."""

    bwrap: Path
    ro_binds: tuple[str, ...] = ()
    masks: tuple[str, ...] = ()
    file_masks: tuple[str, ...] = ()


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def outside_lake_masks(paths: Iterable[Path]) -> tuple[str, ...]:
    """Canonical forms of ``paths`` that Lake's own masks do not already hide, sorted, unique."""
    kept = {os.path.realpath(p) for p in paths}
    return tuple(sorted(p for p in kept if not _under(p, LAKE_MASKED_ROOTS)))


def _quote(path: str) -> str:
    if "\n" in path or "\0" in path:
        raise ValueError(f"refusing a path with a newline or NUL in the wrapper: {path!r}")
    return shlex.quote(path)


def wrapper_insert(spec: WrapperSpec) -> tuple[str, ...]:
    """The arguments the wrapper inserts after Lake's last mount argument, in order."""
    args: list[str] = []
    for path in spec.ro_binds:
        args += ["--ro-bind", path, path]
    for path in spec.masks:
        args += ["--tmpfs", path]
    for path in spec.file_masks:
        args += ["--ro-bind", "/dev/null", path]
    return tuple(args)


def wrapper_text(spec: WrapperSpec) -> str:
    """The complete ``COMPARATOR_BWRAP`` script for ``spec`` (POSIX sh, no environment used)."""
    insert = " ".join(_quote(a) for a in wrapper_insert(spec))
    cases = "\n".join([
        f"    {'|'.join(_MOUNT_2)}) skip=2; mount_end=$((n + 2)) ;;",
        f"    {'|'.join(_MOUNT_1)}) skip=1; mount_end=$((n + 1)) ;;",
        f"    {'|'.join(_OTHER_2)}) skip=2 ;;",
        f"    {'|'.join(_OTHER_1)}) skip=1 ;;",
        f"    {'|'.join(_OTHER_0)}) ;;",
    ])
    return f"""#!/bin/sh
# {WRAPPER_TAG}: generated for one scoring pair; do not edit.
# Lake starts this with an empty environment, so every path is absolute and fixed here.
# Lake's arguments pass through unchanged and in order; the mounts below go right after
# Lake's last mount argument so that they override Lake's masks and Lake's cannot undo them.
set -eu
fail() {{ echo "{WRAPPER_TAG}: $*" >&2; exit 126; }}
n=0; skip=0; mount_end=0; ended=0
for a do
  n=$((n + 1))
  if [ "$skip" -gt 0 ]; then skip=$((skip - 1)); continue; fi
  if [ "$ended" -eq 1 ]; then continue; fi
  case $a in
    --) ended=1 ;;
{cases}
    *) fail "unexpected bwrap argument before --: $a" ;;
  esac
done
[ "$ended" -eq 1 ] || fail "no -- before the command"
[ "$mount_end" -gt 0 ] || fail "Lake passed no mount arguments"
n=0
for a do
  n=$((n + 1))
  if [ "$n" -eq 1 ]; then set --; fi
  set -- "$@" "$a"
  if [ "$n" -eq "$mount_end" ]; then
    set -- "$@" {insert}
  fi
done
exec {_quote(str(spec.bwrap))} "$@"
"""


def write_wrapper(path: Path, spec: WrapperSpec) -> Path:
    """Write the wrapper executable (0700) at ``path`` and return it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o700)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(wrapper_text(spec))
    return path


def _world_writable_chain(path: str) -> bool:
    current = path
    while True:
        try:
            mode = os.stat(current).st_mode
        except OSError:
            return True
        if mode & stat.S_IWOTH and not mode & stat.S_ISVTX:
            return True
        parent = os.path.dirname(current)
        if parent == current:
            return False
        current = parent


def filter_search_path(value: str, writable_roots: Sequence[Path]) -> tuple[str, ...]:
    """Entries of a search path Lake may use (SPEC §5.4 step 4), in order, without repeats.

    Dropped: empty and relative entries, entries that do not exist, entries inside a writable
    root, symlinks (or entries under a symlinked ancestor) that resolve into one, and entries
    under a world-writable directory without the sticky bit.
    """
    roots = [os.path.realpath(r) for r in writable_roots]
    roots += [os.path.abspath(r) for r in writable_roots]
    kept: list[str] = []
    for entry in value.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        real = os.path.realpath(entry)
        if not os.path.isdir(real) or _under(os.path.normpath(entry), roots) or _under(real, roots):
            continue
        if _world_writable_chain(real) or entry in kept:
            continue
        kept.append(entry)
    return tuple(kept)


ENV_ALLOWLIST = ("PATH", "HOME", "LANG", "TMPDIR", "COMPARATOR_BWRAP")


def lake_environment(caller: Mapping[str, str], *, search_path: Sequence[str], tmpdir: Path,
                     wrapper: Path) -> dict[str, str]:
    """The whole environment Lake gets: the allowlist and nothing else of the caller's."""
    env = {
        "PATH": os.pathsep.join(search_path),
        "TMPDIR": str(tmpdir),
        "COMPARATOR_BWRAP": str(wrapper),
        "HOME": caller.get("HOME", str(tmpdir)),
    }
    if caller.get("LANG"):
        env["LANG"] = caller["LANG"]
    return env
