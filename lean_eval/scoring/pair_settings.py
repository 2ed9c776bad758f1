"""The context every pair of a run shares (``pair.RunContext``), computed once per run.

Masks cover whole directories (the scoring root, ``--out``, every input, the private roots),
never one per pair, so every verdict of a run records the same mask set (design §6.11).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from lean_eval.benchmark.catalog import Catalog
from lean_eval.records.verdict import Identity, Preflight
from lean_eval.sandbox import identity, masks
from lean_eval.scoring import driver, pair, resume
from lean_eval.scoring.options import RunOptions, Tools
from lean_eval.supervise import disk, disk_ledger


def _ledger(root: Path) -> str:
    """The run's disk ledger (``supervise.disk_ledger``), under its scoring root."""
    ledger = root / disk_ledger.LEDGER
    ledger.mkdir(mode=0o700, exist_ok=True)
    return str(ledger)


def run_context(inputs: Sequence[Path], catalog: Catalog, tools: Tools, options: RunOptions,
                caller_env: Mapping[str, str], out_dir: Path, root: Path, ident: Identity,
                preflight: Preflight) -> pair.RunContext:
    shared = catalog.shared_packages
    # --work-dir holds other runs' scoring roots too (live or killed): hide it whole.
    private = (*options.private, *([options.work_dir] if options.work_dir else []),
               *(masks.default_private_roots(inputs, out_dir)
                 if options.private_defaults else ()))
    keep = [tools.toolchain.root, tools.bwrap.path, catalog.root, *([shared] if shared else [])]
    mounts = masks.run_masks(scoring_root=root, out_dir=out_dir, inputs=inputs,
                               private=private, keep=keep,
                               packages=[shared] if shared else [],
                               secrets=options.secret_files)
    mounts = identity.reachable_mounts(mounts, tools.sandbox_user)
    work = [options.work_dir] if options.work_dir else []
    settings = driver.DriverSettings(
        toolchain=tools.toolchain, bwrap=tools.bwrap.path, caller_env=caller_env,
        timeout=options.timeout, writable_roots=(root, out_dir, *work),
        mounts=mounts, max_file_bytes=options.max_written_file_bytes,
        limits=options.pair_limits._replace(disk_ledger=_ledger(root)),
        paranoid=options.paranoid,
        disk_reserve=options.disk_reserve, runner=tools.runner,
        user=tools.sandbox_user.switch_to())
    limits = driver.limits_record(options.pair_limits, options.disk_reserve)
    space = disk.SpaceWatch((str(root), str(out_dir)), options.disk_reserve or 0)
    return pair.RunContext(problems=catalog.problems, settings=settings, ident=ident,
                           scoring_root=root, out_dir=out_dir, shared_packages=shared,
                           mounts=mounts, probes_skipped=preflight.skipped,
                           keep_work=options.keep_work, space=space, limits=limits,
                           options=resume.verdict_options(options, preflight))
