"""The ``COMPARATOR_BWRAP`` wrapper: a generated ``/bin/sh`` script around bwrap (design §6.5).

It embeds every path it uses (Lake runs it with an empty environment), passes Lake's arguments
through unchanged and in order, and fails closed on one it does not know. The run's masks go
right after Lake's first mount, which must be ``--ro-bind / /``, so Lake's later binds re-expose
exactly the pair's files; the shared packages, then ``NO_NESTED_USERNS`` and ``NO_CAPABILITIES``,
go right after Lake's last mount, so no mask of Lake's hides them.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import NamedTuple

from lean_eval.records.verdict import Mounts

# bwrap options by the number of arguments they take.
_MOUNT_2 = ("--bind", "--ro-bind", "--dev-bind", "--bind-try", "--ro-bind-try", "--dev-bind-try",
            "--symlink", "--chmod", "--file", "--bind-data", "--ro-bind-data")
_MOUNT_1 = ("--tmpfs", "--dir", "--dev", "--proc", "--mqueue", "--remount-ro")
_OTHER_2 = ("--setenv",)
_OTHER_1 = ("--unsetenv", "--chdir", "--hostname", "--uid", "--gid", "--perms", "--size",
            "--userns", "--userns2", "--pidns", "--cap-drop", "--seccomp",
            "--add-seccomp-fd", "--exec-label", "--file-label", "--lock-file", "--sync-fd",
            "--info-fd", "--json-status-fd", "--block-fd", "--userns-block-fd", "--argv0")
_OTHER_0 = ("--clearenv", "--unshare-all", "--unshare-user", "--unshare-user-try",
            "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
            "--unshare-cgroup", "--unshare-cgroup-try", "--share-net", "--die-with-parent",
            "--new-session", "--as-pid-1", "--disable-userns", "--assert-userns-disabled",
            "--level-prefix")
# (``--cap-add`` is left out of the options above on purpose: the wrapper refuses it.)
# Appended after the shared packages: no process in a sandbox may create a user namespace,
# and so none gains the mount rights a fresh one brings, nor reaches the kernel's namespace
# code. bwrap's --disable-userns needs the sandbox's own user namespace asked for outright:
# Lake's --unshare-all only tries one.
NO_NESTED_USERNS = ("--unshare-user", "--disable-userns")
# Then: every sandboxed process has empty effective, permitted and bounding sets, whoever runs
# the harness. Without it a root harness leaves the build all capabilities in its own user
# namespace (uid 0 there), so `unshare -m` plus a tmpfs of its own works (SECURITY.md, item
# 5); an unprivileged harness's sandbox already has none outside its setup, and loses nothing.
NO_CAPABILITIES = ("--cap-drop", "ALL")
WRAPPER_TAG = "lean-eval-wrapper"
_FIRST = '[ "$first" -gt 0 ] || first=$n;'  # remember where Lake's first mount argument is


class WrapperSpec(NamedTuple):
    """What the wrapper adds to Lake's sandbox; every path absolute and trusted."""

    bwrap: Path
    mounts: Mounts = Mounts()


def _quote(path: str) -> str:
    if "\n" in path or "\0" in path:
        raise ValueError(f"refusing a path with a newline or NUL in the wrapper: {path!r}")
    return shlex.quote(path)


def early_insert(spec: WrapperSpec) -> tuple[str, ...]:
    """The masks and re-exposures, parent paths first and at one path the mask before the
    re-exposure, so each mount lands where it means to."""
    mounts = spec.mounts
    ops: list[tuple[tuple[str, ...], int, tuple[str, ...]]] = [
        *((Path(p).parts, 0, ("--tmpfs", p)) for p in mounts.masks),
        *((Path(p).parts, 0, ("--ro-bind", "/dev/null", p)) for p in mounts.file_masks),
        *((Path(p).parts, 1, ("--ro-bind", p, p)) for p in mounts.reexposed),
    ]
    return tuple(a for _, _, args in sorted(ops) for a in args)


def late_insert(spec: WrapperSpec) -> tuple[str, ...]:
    """The shared packages' read-only binds."""
    return tuple(a for path in spec.mounts.ro_binds for a in ("--ro-bind", path, path))


def wrapper_insert(spec: WrapperSpec) -> tuple[str, ...]:
    """Everything the wrapper inserts, in order (for counting and display)."""
    return early_insert(spec) + late_insert(spec) + NO_NESTED_USERNS + NO_CAPABILITIES


def wrapper_text(spec: WrapperSpec) -> str:
    """The complete ``COMPARATOR_BWRAP`` script for ``spec`` (POSIX sh, no environment used)."""
    early = " ".join(_quote(a) for a in early_insert(spec))
    late = " ".join(_quote(a) for a in late_insert(spec) + NO_NESTED_USERNS + NO_CAPABILITIES)
    cases = "\n".join([
        f"    {'|'.join(_MOUNT_2)}) skip=2; {_FIRST} mount_end=$((n + 2)) ;;",
        f"    {'|'.join(_MOUNT_1)}) skip=1; {_FIRST} mount_end=$((n + 1)) ;;",
        f"    {'|'.join(_OTHER_2)}) skip=2 ;;",
        f"    {'|'.join(_OTHER_1)}) skip=1 ;;",
        f"    {'|'.join(_OTHER_0)}) ;;",
    ])
    early_line = f'set -- "$@" {early}' if early else ":"
    late_line = f'set -- "$@" {late}' if late else ":"
    return f"""#!/bin/sh
# {WRAPPER_TAG}: generated for one scoring pair; do not edit.
# Lake starts this with an empty environment, so every path is absolute and fixed here.
# Lake's arguments pass through unchanged and in order. The run's masks go right after Lake's
# first mount, which must be --ro-bind / /, so that Lake's own later binds re-expose the pair's
# project with Lake's modes; the shared packages go after Lake's last mount, so that no mask
# of Lake's hides them, and then the options that forbid user namespaces and capabilities
# inside the sandbox.
set -eu
fail() {{ echo "{WRAPPER_TAG}: $*" >&2; exit 126; }}
n=0; skip=0; first=0; mount_end=0; ended=0
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
n=0; root_ok=0
for a do
  n=$((n + 1))
  if [ "$n" -eq "$first" ] && [ "$a" = --ro-bind ]; then root_ok=1; fi
  if [ "$n" -eq $((first + 1)) ] || [ "$n" -eq $((first + 2)) ]; then
    [ "$a" = / ] || root_ok=0
  fi
done
[ "$root_ok" -eq 1 ] || fail "Lake's first mount is not --ro-bind / /"
n=0
for a do
  n=$((n + 1))
  if [ "$n" -eq 1 ]; then set --; fi
  set -- "$@" "$a"
  if [ "$n" -eq $((first + 2)) ]; then
    {early_line}
  fi
  if [ "$n" -eq "$mount_end" ]; then
    {late_line}
  fi
done
exec {_quote(str(spec.bwrap))} "$@"
"""


def write_wrapper(path: Path, spec: WrapperSpec) -> Path:
    """Write the wrapper executable at ``path`` and return it: root's (the harness's) and
    read-only to everyone else, who may run it (Lake runs it as the sandbox identity)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o755)
    os.fchmod(fd, 0o755)  # whatever the umask
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(wrapper_text(spec))
    return path
