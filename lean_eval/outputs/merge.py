"""Merge the outputs of ``run-eval --shard K/N`` runs into one output directory (design §5.5).

Invariants (a shard is read through ``outputs.outdir``):
- Shards merge only when ``shard_input.check_compatible`` finds them of one batch, and no pair
  is scored twice; else nothing is written and the refusal names them.
- A pair's verdict is its verdict file's: a summary line that says otherwise is refused.
- A signed shard's run envelope is carried as ``run.K-of-N.intoto.json``, so ``verify`` checks
  the merge as the one signed whole its shards make (SECURITY.md invariant 20).
- The output appears whole or not at all (assembled in a hidden sibling, renamed into place);
  an existing non-empty ``--out`` is never touched.
- Pairs no shard scored are listed, not guessed (``missing_shards``, ``not_scored_pairs``), and
  the merged exit code is then 1.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from lean_eval.errors import MergeRefusedError, OutputError
from lean_eval.files.atomic import file_umask, write_model
from lean_eval.files.paths import overlap
from lean_eval.outputs import outdir
from lean_eval.outputs.shard_input import ShardOutput, check_compatible, load_shard, shard_key
from lean_eval.records import out_layout
from lean_eval.records.verdict import (
    INFRASTRUCTURE_FAILURES,
    SUMMARY_SCHEMA_VERSION,
    TALLY,
    PairRef,
    PairSummary,
    SubmissionSummary,
    Summary,
    Verdict,
    compact_pairs,
)
from lean_eval.scoring import shard as shards

Pair = tuple[str, str]

class MergeResult(NamedTuple):
    summary: Summary
    out_dir: Path
    missing: tuple[Pair, ...]
    missing_shards: tuple[int, ...]  # shard numbers K of N no given output scored
    pair_list_complete: bool  # the shards listed the whole batch, so ``missing`` is exact
    shard_count: int  # N of the merged shards (1 for outputs of unsharded runs)


def _hard_link(fd: int, dir_fd: int, name: str) -> None:
    # linkat(2) of /proc/self/fd/N with AT_SYMLINK_FOLLOW (dst_dir_fd makes Python use linkat):
    # the inode that was opened and checked, not whatever the shard's name holds by now
    os.link(f"/proc/self/fd/{fd}", name, dst_dir_fd=dir_fd, follow_symlinks=True)


def _place(fd: int, dir_fd: int, name: str) -> None:
    """Give ``name`` (new, in ``dir_fd``) the content of the open, checked file ``fd``."""
    try:  # same filesystem: no copy; later atomic rewrites of the shard replace its inode, so
        _hard_link(fd, dir_fd, name)  # the merged file never changes under us
        return
    except OSError as exc:
        if exc.errno == errno.EEXIST:  # never replace a file, by link or by copy
            raise
    # another filesystem, hard links not allowed here, or no /proc: copy from the open file
    target = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o666, dir_fd=dir_fd)
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        while chunk := os.read(fd, 1 << 20):
            view = memoryview(chunk)
            while view:
                view = view[os.write(target, view):]
    finally:
        os.close(target)


def _carry(out: ShardOutput, root_fd: int, entry: PairSummary, staging: Path) -> Verdict:
    """Carry one pair's verdict and the files beside it into ``staging``."""
    sid, pid = entry.submission, entry.problem
    (staging / sid).mkdir(exist_ok=True)  # sid passed intake's id rule: one plain name
    target = os.open(staging / sid, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        with outdir.submission_dir(out.path, root_fd, sid) as dir_fd:
            fd = outdir.open_regular(out.path, dir_fd, sid, out_layout.place_of(sid, pid).name)
            if fd is None:
                raise MergeRefusedError(f"{out.path}: the verdict of {sid}/{pid} is missing "
                                        f"({out_layout.place_of(sid, pid)})")
            try:
                verdict = outdir.read_verdict(out.path, fd, (sid, pid))
                if (why := outdir.disagreement(entry, verdict)) is not None:
                    raise MergeRefusedError(f"{out.path}: {sid}/{pid}: {why}; refusing to "
                                            "merge (nothing was written)")
                _place(fd, target, out_layout.place_of(sid, pid).name)
            finally:
                os.close(fd)
            for suffix in out_layout.BESIDE_VERDICT:
                fd = outdir.open_regular(out.path, dir_fd, sid, f"{pid}{suffix}")
                if fd is not None:
                    try:
                        _place(fd, target, f"{pid}{suffix}")
                    finally:
                        os.close(fd)
    finally:
        os.close(target)
    return verdict


def _assemble(outputs: Sequence[ShardOutput], staging: Path
              ) -> tuple[list[PairSummary], list[Verdict]]:
    owner: dict[Pair, Path] = {}
    pairs: list[PairSummary] = []
    verdicts: list[Verdict] = []
    for out in outputs:
        with outdir.directory(out.path) as root_fd:
            for entry in out.summary.every_pair():
                key = (entry.submission, entry.problem)
                if key in owner:
                    raise MergeRefusedError(f"pair {entry.submission}/{entry.problem} was "
                                            f"scored by both {owner[key]} and {out.path}; "
                                            "refusing to merge")
                owner[key] = out.path
                verdicts.append(_carry(out, root_fd, entry, staging))
                pairs.append(entry.model_copy(update={
                    "path": str(out_layout.place_of(entry.submission, entry.problem))}))
            _carry_run(out, root_fd, staging)
    return pairs, verdicts


def _carry_run(out: ShardOutput, root_fd: int, staging: Path) -> None:
    """Carry ``out``'s run envelope(s) under the shard's name (module invariants)."""
    k, n = (out.summary.shard.k, out.summary.shard.n) if out.summary.shard else (1, 1)
    with outdir.directory(staging) as target:
        for name in outdir.run_envelopes(out.path):
            new = out_layout.shard_envelope(k, n) if name == out_layout.RUN_ENVELOPE else name
            if (fd := outdir.open_regular(out.path, root_fd, ".", name)) is None:
                continue
            try:
                _place(fd, target, new)
            except FileExistsError as exc:
                raise MergeRefusedError(f"{out.path}: {name} would be {new}, which another "
                                        "shard already gave; refusing to merge") from exc
            finally:
                os.close(fd)


def _expected(submissions: Sequence[SubmissionSummary]) -> list[Pair]:
    return [(s.id, p) for s in submissions for p in s.problems]


def _summary(outputs: Sequence[ShardOutput], submissions: list[SubmissionSummary],
             pairs: list[PairSummary], missing: Sequence[Pair], absent: Sequence[str], *,
             incomplete: bool) -> Summary:
    order = {key: i for i, key in enumerate(_expected(submissions))}
    pairs.sort(key=lambda p: order.get((p.submission, p.problem), len(order)))
    counts = {name: 0 for out in outputs for name in out.summary.counts}
    tallies: dict[str, dict[str, int]] = {s.id: {} for s in submissions}
    for p in pairs:
        counts[p.verdict] = counts.get(p.verdict, 0) + 1
        tally = tallies.setdefault(p.submission, {})
        tally[TALLY[p.verdict]] = tally.get(TALLY[p.verdict], 0) + 1
    first = outputs[0].summary
    failed = any(p.verdict == "error" or p.execution in INFRASTRUCTURE_FAILURES for p in pairs)
    started = min((o.summary.started_at for o in outputs), key=_instant)
    finished = max((o.summary.finished_at for o in outputs), key=_instant)
    data = first.model_dump()
    # every shard's unchanged pairs, listed by id again under their submission
    kept, unchanged = compact_pairs(tuple(pairs))
    data.update({
        "schema_version": SUMMARY_SCHEMA_VERSION, "started_at": started, "finished_at": finished,
        "submissions": [{**s.model_dump(), "tally": tallies[s.id],
                         "unchanged": unchanged.get(s.id, ())}
                        for s in submissions],
        "counts": counts,
        "pairs": [p.model_dump() for p in kept],
        "exit_code": 1 if failed or missing or incomplete else 0,
        "shard": None,
        # the merged batch's totals, not the first shard's
        "interrupted": any(o.summary.interrupted for o in outputs),
        "not_scored": len(missing),
        "reused": sum(o.summary.reused for o in outputs),
        "limits_best_effort": any(o.summary.limits_best_effort for o in outputs),
        "not_reused": tuple(line for o in outputs for line in o.summary.not_reused),
        "missing_shards": tuple(absent),
        "not_scored_pairs": tuple(PairRef(submission=s, problem=p) for s, p in missing),
    })
    return Summary.model_validate(data)


def _instant(stamp: str) -> tuple[float, str]:
    try:
        return datetime.fromisoformat(stamp).timestamp(), stamp
    except ValueError:  # not ours to judge: order unreadable stamps last, by text
        return float("inf"), stamp


def _batch(outputs: Sequence[ShardOutput]) -> dict[str, tuple[str, ...]] | None:
    """The whole batch as a shard recorded it (all agree: same digest), if one did."""
    return next((o.summary.shard.batch for o in outputs
                 if o.summary.shard is not None and o.summary.shard.batch), None)


def _submissions(outputs: Sequence[ShardOutput]) -> list[SubmissionSummary]:
    """Every submission once, in input order, with its problems in the batch a shard recorded
    (so a missing shard's pairs are listed), else in every given shard."""
    found: dict[str, SubmissionSummary] = {}
    problems: dict[str, list[str]] = {}
    for out in outputs:
        for sub in out.summary.submissions:
            found.setdefault(sub.id, sub)
            seen = problems.setdefault(sub.id, [])
            seen.extend(p for p in sub.problems if p not in seen)
    for sid, pids in (_batch(outputs) or {}).items():
        if sid not in found:
            raise MergeRefusedError(f"the batch the shards record names submission {sid}, "
                                    "which no shard lists; refusing to merge")
        seen = problems[sid]
        seen.extend(p for p in pids if p not in seen)
    catalog = {pid: i for i, pid in enumerate(outputs[0].summary.problems)}
    return [sub.model_copy(update={"problems": tuple(sorted(
        problems[sid], key=lambda p: (catalog.get(p, len(catalog)), p)))})
        for sid, sub in found.items()]


def merge(shard_dirs: Sequence[Path], out_dir: Path) -> MergeResult:
    """Merge shard outputs into ``out_dir`` (absent or empty)."""
    if not shard_dirs:
        raise MergeRefusedError("no shard output directories given")
    outputs = [load_shard(Path(d)) for d in shard_dirs]
    check_compatible(outputs)
    target = out_dir.absolute()
    for out in outputs:
        if overlap(out.path, target):
            raise MergeRefusedError(f"--out {out_dir} and shard {out.path} overlap")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise MergeRefusedError(f"--out {out_dir} exists and is not an empty directory; "
                                "merge writes a new output directory")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.merge-", dir=target.parent))
    except OSError as exc:
        raise OutputError(f"cannot create the merged output {target}: "
                          f"{exc.strerror or exc}") from exc
    try:
        pairs, _ = _assemble(outputs, staging)
        submissions = _submissions(outputs)
        scored = {(p.submission, p.problem) for p in pairs}
        missing = tuple(key for key in _expected(submissions) if key not in scored)
        n, digest = shard_key(outputs[0].summary)
        given = {o.summary.shard.k for o in outputs if o.summary.shard}
        absent = tuple(k for k in range(1, n + 1) if k not in given) if given else ()
        # Shards that recorded no batch (older runs) list their own pairs only: when the given
        # shards do not add up to the batch (the digest says so), the absent shards are named
        # though their pairs cannot be.
        complete = digest is None or shards.batch_digest(_expected(submissions)) == digest
        summary = _summary(outputs, submissions, pairs, missing,
                           tuple(f"{k}/{n}" for k in absent),
                           incomplete=bool(absent) or not complete)
        write_model(staging / out_layout.SUMMARY, summary)
        staging.chmod(0o777 & ~file_umask())  # what mkdir would give, not mkdtemp's 0700
        os.replace(staging, target)  # rename(2) replaces an empty directory atomically
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, OSError):
            raise OutputError(f"cannot write the merged output next to {target}: "
                              f"{exc.strerror or exc}; nothing was written") from exc
        raise
    return MergeResult(summary, target, missing, absent, complete, n)

