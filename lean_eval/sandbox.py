"""The run's mask set, the COMPARATOR_BWRAP wrapper, and what Lake is allowed to see of us.

Invariants (design §5.4, §6.5-§6.8, §6.10-§6.12):
- The wrapper embeds the absolute bwrap path and every path it uses; Lake runs it with an empty
  environment, so it reads nothing from its environment.
- The wrapper passes Lake's arguments through unchanged and in order. Lake's first mount
  argument must be ``--ro-bind / /`` (else it fails closed): the run's masks go right after it,
  so Lake's own later binds (the project read-only, ``.lake`` writable, kernel temp files)
  re-expose exactly the pair's own files with Lake's modes. The shared packages are bound
  read-only right after Lake's last mount argument, so no mask of Lake's can hide them, and
  NO_NESTED_USERNS follows them: nothing in a sandbox can make a user namespace of its own.
- The masks are one constant set per run (:func:`run_masks`): the scoring root, the output
  directory and the private roots, all existing directories before the first sandbox starts;
  nothing in them comes from submission content, and their number does not grow with the batch.
  That one record (:class:`lean_eval.verdict.Mounts`, with the shared packages) is what every
  wrapper of the run inserts and what every verdict of the run records.
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

from lean_eval.verdict import Mounts

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
# Appended after the shared packages: no process in a sandbox may create a user namespace,
# and so none gains the mount rights one brings (a tmpfs of its own, mounted where the memory
# watchdog does not look or detached while a file in it stays open) or reaches the kernel's
# namespace code. bwrap's --disable-userns needs the sandbox's own user namespace asked for
# outright: Lake's --unshare-all only tries one.
NO_NESTED_USERNS = ("--unshare-user", "--disable-userns")
WRAPPER_TAG = "lean-eval-wrapper"
_FIRST = '[ "$first" -gt 0 ] || first=$n;'  # remember where Lake's first mount argument is


# Never a private root: masking these would hide the system the sandbox runs on.
SYSTEM_DIRS = ("/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32",
               "/proc", "/run", "/sbin", "/sys", "/usr", "/var")


class WrapperSpec(NamedTuple):
    """What the wrapper adds to Lake's sandbox; every path absolute and trusted.

    The masks, file masks and re-exposed paths of ``mounts`` go right after Lake's
    ``--ro-bind / /``, ordered parent first; its ``ro_binds`` go after Lake's last mount
    argument.
    """

    bwrap: Path
    mounts: Mounts = Mounts()


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _strictly_under(path: str, root: str) -> bool:
    return path != root and _under(path, (root,))


def default_private_roots(inputs: Iterable[Path], out_dir: Path) -> tuple[Path, ...]:
    """The parent directory of every input and of ``out_dir`` (design §6.11's default)."""
    return tuple(Path(os.path.abspath(p)).parent for p in (*inputs, out_dir))


def run_masks(*, scoring_root: Path, out_dir: Path, inputs: Sequence[Path],
              private: Sequence[Path], keep: Sequence[Path],
              packages: Sequence[Path] = ()) -> Mounts:
    """What every sandbox of this run hides and binds (pure apart from ``lstat``/``realpath``),
    computed once before the first pair.

    Hidden: the scoring root, the output directory, every private root, and any input no
    root above already hides; a private root that is a system directory is replaced by the
    inputs it holds. A path of
    ``keep`` (toolchain, shared packages, benchmark, tools on PATH) that lies inside a mask is
    bound back read-only right after it, so no mask hides what scoring needs. Paths Lake
    masks itself are dropped. Every directory returned exists now. ``packages`` (the shared
    packages) are bound read-only after Lake's own mounts, canonical but never dropped: they
    must be visible under ``/home``, ``/tmp``, ... too (design §6.12).
    """
    dirs: set[str] = set()
    files: set[str] = set()
    notes: list[str] = []
    real_inputs = [os.path.realpath(p) for p in inputs]
    for root in (scoring_root, out_dir, *private):
        real = os.path.realpath(root)
        if real in SYSTEM_DIRS:
            held = [p for p in real_inputs if _strictly_under(p, real)]
            notes.append(f"{real} is a system directory: masking the inputs it holds instead")
            for path in held:
                (dirs if os.path.isdir(path) else files).add(path)
        elif os.path.isdir(real):
            dirs.add(real)
    covered = tuple(dirs)
    for path in real_inputs:  # one mask per input only where no root above already hides it
        if not _under(path, covered):
            (dirs if os.path.isdir(path) else files).add(path)
    dirs = {d for d in dirs if not _under(d, LAKE_MASKED_ROOTS) and os.path.isdir(d)}
    files = {f for f in files if not _under(f, LAKE_MASKED_ROOTS) and os.path.lexists(f)}
    reexposed: set[str] = set()
    for needed in keep:
        real = os.path.realpath(needed)
        if not os.path.exists(real) or _under(real, LAKE_MASKED_ROOTS):
            continue
        hiding = sorted(d for d in dirs if _under(real, (d,)))
        if hiding:
            reexposed.add(real)
            notes.append(f"{real} lies in masked {hiding[0]}: bound back read-only")
    return Mounts(masks=tuple(sorted(dirs)), file_masks=tuple(sorted(files)),
                  reexposed=tuple(sorted(reexposed)),
                  ro_binds=tuple(os.path.realpath(p) for p in packages), notes=tuple(notes))


def _quote(path: str) -> str:
    if "\n" in path or "\0" in path:
        raise ValueError(f"refusing a path with a newline or NUL in the wrapper: {path!r}")
    return shlex.quote(path)


def early_insert(spec: WrapperSpec) -> tuple[str, ...]:
    """The arguments inserted right after Lake's ``--ro-bind / /``: parent paths first, and
    at one path the mask before the re-exposure, so each mount lands where it means to."""
    mounts = spec.mounts
    ops: list[tuple[tuple[str, ...], int, tuple[str, ...]]] = [
        *((Path(p).parts, 0, ("--tmpfs", p)) for p in mounts.masks),
        *((Path(p).parts, 0, ("--ro-bind", "/dev/null", p)) for p in mounts.file_masks),
        *((Path(p).parts, 1, ("--ro-bind", p, p)) for p in mounts.reexposed),
    ]
    return tuple(a for _, _, args in sorted(ops) for a in args)


def late_insert(spec: WrapperSpec) -> tuple[str, ...]:
    """The mounts inserted after Lake's last mount argument: the shared packages."""
    return tuple(a for path in spec.mounts.ro_binds for a in ("--ro-bind", path, path))


def wrapper_insert(spec: WrapperSpec) -> tuple[str, ...]:
    """Everything the wrapper inserts, in order (for counting and display)."""
    return early_insert(spec) + late_insert(spec) + NO_NESTED_USERNS


def wrapper_text(spec: WrapperSpec) -> str:
    """The complete ``COMPARATOR_BWRAP`` script for ``spec`` (POSIX sh, no environment used)."""
    early = " ".join(_quote(a) for a in early_insert(spec))
    late = " ".join(_quote(a) for a in late_insert(spec) + NO_NESTED_USERNS)
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
# of Lake's hides them, and then the options that forbid user namespaces inside the sandbox.
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
    """Entries of a search path Lake may use (design §5.4 step 4), in order, without repeats.

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
