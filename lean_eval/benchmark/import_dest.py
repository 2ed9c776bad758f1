"""Where an import lands (``import-catalog SRC DEST``, design §4.2): a fresh DEST written
whole through a renamed sibling, or an existing DEST compared with a plan (``--check``).

Invariant: a trusted statement that changed while its ``statement_revision`` did not is a fault
(``benchmark.provenance``), not a mere stale file: ``check_import`` raises naming each problem.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from lean_eval.benchmark import provenance
from lean_eval.benchmark.importer import ImportPlan
from lean_eval.errors import CatalogError, UsageError


def write_import(plan: ImportPlan, dest: Path) -> None:
    """Write ``plan`` as the fresh ``dest`` (UsageError if it exists) via a renamed sibling."""
    dest = dest.absolute()
    if dest.exists() or dest.is_symlink():
        raise UsageError(f"{dest} exists; import-catalog writes a fresh directory (use --check "
                         "to compare an existing one)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        for rel, data in plan.files.items():
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        staging.chmod(0o755)
        os.rename(staging, dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def check_import(plan: ImportPlan, dest: Path) -> list[str]:
    """How ``dest`` differs from what importing would write (empty: up to date); CatalogError
    naming every problem whose statement changed at an unchanged revision."""
    if not dest.is_dir():
        return [f"{dest}: not a directory"]
    faults = statement_changes(plan, dest)
    if faults:
        raise CatalogError(f"{dest}: the source revised statements without a new "
                           "statement_revision:\n  " + "\n  ".join(faults))
    on_disk = {p.relative_to(dest).as_posix(): p for p in sorted(dest.rglob("*"))
               if p.is_file() and not any(part.startswith(".")
                                          for part in p.relative_to(dest).parts)}
    found = [f"{rel}: missing" for rel in plan.files if rel not in on_disk]
    found += [f"{rel}: differs" for rel, data in plan.files.items()
              if rel in on_disk and on_disk[rel].read_bytes() != data]
    found += [f"{rel}: not written by the import" for rel in on_disk if rel not in plan.files]
    return sorted(found)


def statement_changes(plan: ImportPlan, dest: Path) -> list[str]:
    """Each problem whose statement digest in ``plan`` differs from the one ``dest``'s
    provenance records for the same revision."""
    recorded_path = dest / provenance.PROVENANCE
    if provenance.PROVENANCE not in plan.files or not recorded_path.is_file() \
            or recorded_path.is_symlink():
        return []
    recorded = provenance.parse(recorded_path.read_bytes())
    current = provenance.parse(plan.files[provenance.PROVENANCE])
    revisions = {pid: (int(rev), digest) for pid, by_rev in current.statements.items()
                 for rev, digest in by_rev.items()}
    return [f"{path}: {message}" for path, message in provenance.statement_faults(
        recorded, revisions, f"{dest}/{provenance.PROVENANCE}")]
