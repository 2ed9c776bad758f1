"""The run's mask set (design §6.11, §6.12): one ``Mounts`` record, computed once before the
first sandbox, that every wrapper of the run inserts and every verdict of the run records."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from lean_eval.files.paths import inside_any, resolved_inside
from lean_eval.records.verdict import Mounts

# Lake masks these in every sandboxed step; paths under them need no mask of ours.
LAKE_MASKED_ROOTS = ("/home", "/root", "/run/user", "/tmp")  # noqa: S108

# Never a private root: masking these would hide the system the sandbox runs on.
SYSTEM_DIRS = ("/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32",
               "/proc", "/run", "/sbin", "/sys", "/usr", "/var")


def default_private_roots(inputs: Iterable[Path], out_dir: Path) -> tuple[Path, ...]:
    """The parent directory of every input and of ``out_dir`` (design §6.11's default)."""
    return tuple(Path(os.path.abspath(p)).parent for p in (*inputs, out_dir))


def run_masks(*, scoring_root: Path, out_dir: Path, inputs: Sequence[Path],
              private: Sequence[Path], keep: Sequence[Path],
              packages: Sequence[Path] = (), secrets: Sequence[Path] = ()) -> Mounts:
    """What every sandbox of this run hides: the scoring root, ``out_dir``, every private root
    (a system directory is replaced by the inputs it holds) and any input none of those hides;
    all exist now, none lies under Lake's own masks, and their number does not grow with the
    batch. A ``keep`` path inside a mask is bound back read-only right after it; ``packages``
    are bound read-only after Lake's mounts and never dropped (visible under ``/home`` too).
    ``secrets`` (the ``--sign-key`` file) are masked file by file whatever else hides them, so
    no re-exposure of a directory holding one shows it again."""
    dirs: set[str] = set()
    files: set[str] = set()
    notes: list[str] = []
    real_inputs = [os.path.realpath(p) for p in inputs]
    for root in (scoring_root, out_dir, *private):
        real = os.path.realpath(root)
        if real in SYSTEM_DIRS:
            held = [p for p in real_inputs if p != real and resolved_inside(p, real)]
            notes.append(f"{real} is a system directory: masking the inputs it holds instead")
            for path in held:
                (dirs if os.path.isdir(path) else files).add(path)
        elif os.path.isdir(real):
            dirs.add(real)
    covered = tuple(dirs)
    for path in real_inputs:  # one mask per input only where no root above already hides it
        if not inside_any(path, covered):
            (dirs if os.path.isdir(path) else files).add(path)
    dirs = {d for d in dirs if not inside_any(d, LAKE_MASKED_ROOTS) and os.path.isdir(d)}
    files = {f for f in files if not inside_any(f, LAKE_MASKED_ROOTS) and os.path.lexists(f)}
    files |= {real for real in map(os.path.realpath, secrets)
              if not inside_any(real, LAKE_MASKED_ROOTS) and os.path.isfile(real)}
    reexposed: set[str] = set()
    for needed in keep:
        real = os.path.realpath(needed)
        if not os.path.exists(real) or inside_any(real, LAKE_MASKED_ROOTS):
            continue
        hiding = sorted(d for d in dirs if inside_any(real, (d,)))
        if hiding:
            reexposed.add(real)
            notes.append(f"{real} lies in masked {hiding[0]}: bound back read-only")
    return Mounts(masks=tuple(sorted(dirs)), file_masks=tuple(sorted(files)),
                  reexposed=tuple(sorted(reexposed)),
                  ro_binds=tuple(os.path.realpath(p) for p in packages), notes=tuple(notes))
