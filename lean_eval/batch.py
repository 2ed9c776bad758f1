"""Score a batch: intake every input, plan the pairs, run each through the driver, write files.

Invariants:
- Everything that can fail the whole run (duplicate ids, unusable paths) is checked before the
  first pair is scored, so exit 2 always means nothing was scored.
- A rejected entry marks its own pair ``invalid_submission``; other pairs still run.
- The wrapper masks every submission input, the output directory and every sibling scoring
  directory that Lake's own masks do not hide; all of them exist before the first sandbox starts.
- One verdict file per pair, written atomically; the workspace is removed after its verdict
  unless ``keep_work``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

from lean_eval import __version__, driver, intake, pair, workspace
from lean_eval.bubblewrap import BwrapInfo
from lean_eval.catalog import Catalog
from lean_eval.errors import UsageError
from lean_eval.sandbox import outside_lake_masks
from lean_eval.toolchain import Toolchain
from lean_eval.verdict import (
    INFRASTRUCTURE_FAILURES,
    Identity,
    PairSummary,
    Preflight,
    SubmissionSummary,
    Summary,
    Verdict,
    write_model,
)


class RunOptions(NamedTuple):
    """Options of one ``run-eval``."""

    out_dir: Path
    timeout: float
    work_dir: Path | None = None
    limits: intake.IntakeLimits = intake.IntakeLimits()
    keep_work: bool = False
    preflight: Preflight | None = None  # None: probes were not asked for (library callers)
    max_written_file_bytes: int = driver.DEFAULT_MAX_FILE_BYTES


class Tools(NamedTuple):
    """The resolved executables a run uses."""

    toolchain: Toolchain
    bwrap: BwrapInfo


def identity(catalog: Catalog, tools: Tools) -> Identity:
    """What every verdict of this run depends on besides its two inputs."""
    return Identity(harness_version=__version__, benchmark_path=str(catalog.root),
                    benchmark_commit=catalog.commit, toolchain_name=catalog.toolchain_name,
                    toolchain_path=str(tools.toolchain.root),
                    bwrap_path=str(tools.bwrap.path), bwrap_version=tools.bwrap.version,
                    bwrap_owner=tools.bwrap.owner, bwrap_setuid=tools.bwrap.setuid,
                    bwrap_sha256=tools.bwrap.sha256,
                    bwrap_minimum_version=tools.bwrap.minimum)


def _contains(outer: Path, inner: Path) -> bool:
    outer_s, inner_s = os.path.realpath(outer), os.path.realpath(inner)
    return inner_s == outer_s or inner_s.startswith(outer_s.rstrip("/") + "/")


def check_inputs(inputs: Sequence[Path]) -> list[tuple[str, Path]]:
    """Submission ids in input order; two inputs with one id is a setup failure."""
    seen: dict[str, Path] = {}
    for path in inputs:
        sid = intake.submission_id(path)
        if sid in seen:
            raise UsageError(f"submissions {seen[sid]} and {path} have the same id {sid!r}")
        seen[sid] = path
    return list(seen.items())


def _check_paths(inputs: Sequence[Path], options: RunOptions, catalog: Catalog,
                 tools: Tools) -> None:
    must_see = [tools.toolchain.root, tools.bwrap.path, catalog.root]
    if options.work_dir is not None:
        must_see.append(options.work_dir)
    for path in inputs:
        for needed in must_see:
            if _contains(path, needed):
                raise UsageError(f"submission input {path} contains {needed}, which scoring "
                                 "needs; move the submission elsewhere")
        if _contains(path, options.out_dir) or _contains(options.out_dir, path):
            raise UsageError(f"--out {options.out_dir} and submission {path} overlap")
    if options.work_dir is not None and (_contains(options.out_dir, options.work_dir)
                                         or _contains(options.work_dir, options.out_dir)):
        raise UsageError(f"--out {options.out_dir} and --work-dir {options.work_dir} overlap")
    driver.check_toolchain_placement(
        tools.toolchain, (options.out_dir, *([options.work_dir] if options.work_dir else [])))


def _scoring_root(options: RunOptions) -> tuple[Path, bool]:
    """The scoring root and whether the run created it (and so may delete it whole)."""
    if options.work_dir is None:
        return Path(tempfile.mkdtemp(prefix="lean-eval-")).resolve(), True
    options.work_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    return options.work_dir.resolve(), False


def _masks(inputs: Sequence[Path], out_dir: Path, root: Path, sid: str, pid: str,
           planned: Mapping[str, Sequence[str]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    dirs = [p for p in inputs if p.is_dir()] + [out_dir]
    dirs += [root / other for other in planned if other != sid]
    dirs += [root / sid / other for other in planned[sid] if other != pid]
    files = [p for p in inputs if not p.is_dir()]
    return outside_lake_masks(dirs), outside_lake_masks(files)


def run_batch(inputs: Sequence[Path], catalog: Catalog, tools: Tools, options: RunOptions,
              caller_env: Mapping[str, str],
              on_verdict: Callable[[Verdict], None] | None = None) -> Summary:
    """Score every (submission, problem) pair and write verdicts and ``summary.json``."""
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    inputs = [p.absolute() for p in inputs]
    ids = check_inputs(inputs)
    _check_paths(inputs, options, catalog, tools)
    problem_ids = frozenset(catalog.problems)
    intakes = [intake.read_submission(path, problem_ids, options.limits) for _, path in ids]
    planned = {sub.submission_id: [e.problem_id for e in sub.problems] for sub in intakes}
    options.out_dir.mkdir(parents=True, exist_ok=True)
    out_dir = options.out_dir.resolve()
    root, own_root = _scoring_root(options)
    ident = identity(catalog, tools)
    preflight = options.preflight or not_probed(tools)
    verdicts: list[tuple[Verdict, Path]] = []
    workspace.plan_scoring_root(root, [(s, p) for s, ps in planned.items() for p in ps])
    try:
        for sub in intakes:
            for entry in sub.problems:
                dirs = workspace.pair_dirs(root, sub.submission_id, entry.problem_id)
                masks, file_masks = _masks(inputs, out_dir, root, sub.submission_id,
                                           entry.problem_id, planned)
                settings = driver.DriverSettings(
                    toolchain=tools.toolchain, bwrap=tools.bwrap.path, caller_env=caller_env,
                    timeout=options.timeout,
                    writable_roots=(root, out_dir,
                                    *([options.work_dir] if options.work_dir else [])),
                    ro_binds=outside_lake_masks([catalog.shared_packages])
                    if catalog.shared_packages else (),
                    masks=masks, file_masks=file_masks,
                    max_file_bytes=options.max_written_file_bytes)
                sub_out = out_dir / sub.submission_id
                path = sub_out / f"{entry.problem_id}.json"
                verdict = pair.score_pair(sub, entry, catalog.problems[entry.problem_id], settings,
                                     dirs, ident, sub_out / f"{entry.problem_id}.log",
                                     catalog.shared_packages)
                verdict = verdict.model_copy(update={"probes_skipped": preflight.skipped})
                write_model(path, verdict)
                verdicts.append((verdict, path))
                if not options.keep_work:
                    workspace.remove(dirs)
                if on_verdict is not None:
                    on_verdict(verdict)
    finally:
        if not options.keep_work:
            for sid in planned:
                shutil.rmtree(root / sid, ignore_errors=True)
            if own_root:
                shutil.rmtree(root, ignore_errors=True)
    return _summary(started_at, ident, preflight, catalog, intakes, verdicts, out_dir)


def not_probed(tools: Tools) -> Preflight:
    """The preflight record of a run whose probes were skipped."""
    return Preflight(skipped=True, toolchain_path=str(tools.toolchain.root),
                     bwrap_path=str(tools.bwrap.path), bwrap_version=tools.bwrap.version,
                     bwrap_sha256=tools.bwrap.sha256)


def _summary(started_at: str, ident: Identity, preflight: Preflight, catalog: Catalog,
             intakes: Sequence[intake.Intake], verdicts: Sequence[tuple[Verdict, Path]],
             out_dir: Path) -> Summary:
    counts: dict[str, int] = {}
    for v, _ in verdicts:
        counts[v.verdict] = counts.get(v.verdict, 0) + 1
    failed = any(v.verdict == "error" or v.execution in INFRASTRUCTURE_FAILURES
                 for v, _ in verdicts)
    summary = Summary(
        started_at=started_at,
        finished_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        identity=ident, preflight=preflight, problems=tuple(catalog.problems),
        submissions=tuple(SubmissionSummary(id=s.submission_id, source=s.source, digest=s.digest,
                                            problems=tuple(e.problem_id for e in s.problems),
                                            rejection=s.rejection,
                                            rejection_code=s.rejection_code) for s in intakes),
        counts=dict(sorted(counts.items())),
        pairs=tuple(PairSummary(submission=v.submission.id, problem=v.problem.id,
                                verdict=v.verdict, execution=v.execution, reason=v.reason.code,
                                path=str(p)) for v, p in verdicts),
        exit_code=1 if failed else 0,
    )
    write_model(out_dir / "summary.json", summary)
    return summary
