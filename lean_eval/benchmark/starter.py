"""Write one problem's submission layout (``lean-eval start-problem``). Invariants: every byte
comes from the catalog, so the starter a submitter edits is the one scoring starts from;
nothing is overwritten (``DEST/ID`` must not exist, and the files go through a private sibling
renamed into place, so a failure leaves no half-written directory); trusted files are copied
read-only, as references that make ``DEST/ID`` a workspace ``lean-eval test`` can run; the
read-only ``lakefile.toml`` among them (its ``name`` is the problem id) also makes the packed
directory one the public pipeline finds (``intake.layout``: a lakefile named after a problem).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import NamedTuple

from lean_eval.benchmark.catalog import Catalog
from lean_eval.errors import UsageError

_READ_ONLY = 0o444
_EDITABLE = 0o644


class StartedProblem(NamedTuple):
    """What ``start_problem`` wrote."""

    problem: str
    directory: Path
    editable: tuple[Path, ...]
    reference: tuple[Path, ...]


def _write(path: Path, data: bytes, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("xb") as handle:
        handle.write(data)
    path.chmod(mode)


def start_problem(cat: Catalog, problem: str, dest: Path) -> StartedProblem:
    """Write ``dest/problem``: the starters (editable) and the trusted files (read-only)."""
    if problem not in cat.problems:
        known = ", ".join(sorted(cat.problems))
        raise UsageError(f"unknown problem id {problem!r}; known: {known}")
    ws = cat.problems[problem]
    dest = dest.absolute()
    target = dest / problem
    if target.exists() or target.is_symlink():
        raise UsageError(f"{target} already exists; start-problem never overwrites "
                         "(remove it or choose another DEST)")
    if dest.exists() and not dest.is_dir():
        raise UsageError(f"{dest} exists and is not a directory")
    dest.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{problem}.", dir=dest))
    try:
        for rel, data in sorted(ws.starter.items()):
            _write(staging / rel, data, _EDITABLE)
        for rel, data in sorted(ws.trusted.items()):
            _write(staging / rel, data, _READ_ONLY)
        staging.chmod(0o755)
        # rename(2) replaces an empty directory; one created since the check above must win.
        if target.exists() or target.is_symlink():
            raise UsageError(f"{target} appeared while writing; nothing was changed")
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return StartedProblem(
        problem=problem, directory=target,
        editable=tuple(target / rel for rel in sorted(ws.starter)),
        reference=tuple(target / rel for rel in sorted(ws.trusted)))
