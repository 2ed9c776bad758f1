"""Merge the outputs of ``run-eval --shard K/N`` runs into one output directory (design §5.5).

Invariants (a shard is read through ``outputs.outdir``):
- Shards merge only with the same batch and shard count, identity, options, probe policy and
  signing key, and no pair scored twice; else nothing is written and the refusal names them.
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
from typing import Any, NamedTuple

from pydantic import ValidationError

from lean_eval.errors import MergeRefusedError, OutputError
from lean_eval.files.atomic import file_umask, write_model
from lean_eval.files.paths import overlap
from lean_eval.outputs import outdir
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

# What must be equal across shards for their verdicts to mean the same thing. Paths (benchmark,
# toolchain, bubblewrap) legitimately differ between machines and are not compared.
_IDENTITY_FIELDS = ("harness_version", "benchmark_commit", "toolchain_name", "bwrap_sha256",
                    "bwrap_version", "bwrap_minimum_version")


class ShardOutput(NamedTuple):

    path: Path
    summary: Summary


class MergeResult(NamedTuple):
    summary: Summary
    out_dir: Path
    missing: tuple[Pair, ...]
    missing_shards: tuple[int, ...]  # shard numbers K of N no given output scored
    pair_list_complete: bool  # the shards listed the whole batch, so ``missing`` is exact
    shard_count: int  # N of the merged shards (1 for outputs of unsharded runs)


def load_shard(path: Path) -> ShardOutput:
    """``path/summary.json``, checked; else a refusal naming ``path``."""
    summary_path = path / out_layout.SUMMARY
    try:
        raw = summary_path.read_bytes()
    except OSError as exc:
        raise MergeRefusedError(f"{path}: no readable summary.json ({exc.strerror or exc}); "
                                "is it a run-eval output directory?") from exc
    try:
        summary = Summary.model_validate_json(raw)
    except ValidationError as exc:
        raise MergeRefusedError(f"{summary_path}: not a summary this lean-eval can read "
                                f"({exc.error_count()} problem(s), first: "
                                f"{exc.errors()[0]['msg']})") from exc
    outdir.check_summary(path, summary)
    return ShardOutput(path, summary)


def _shard_key(s: Summary) -> tuple[int, str | None]:
    return (s.shard.n, s.shard.batch_digest) if s.shard else (1, None)


def _describe(group: Sequence[ShardOutput], fields: Sequence[str], source: Any) -> str:
    values = ", ".join(f"{f}={getattr(source, f, None)!r}" for f in fields)
    return f"{', '.join(str(out.path) for out in group)} ({values})"


def _refuse_if_differ(outputs: Sequence[ShardOutput], what: str, fields: Sequence[str],
                      pick: Any) -> None:
    groups: dict[str, list[ShardOutput]] = {}
    for out in outputs:
        source = pick(out.summary)
        key = repr([getattr(source, f, None) for f in fields])
        groups.setdefault(key, []).append(out)
    if len(groups) > 1:
        detail = "; ".join(_describe(group, fields, pick(group[0].summary))
                           for group in groups.values())
        raise MergeRefusedError(f"shards differ in {what}, refusing to merge: {detail}")


def check_compatible(outputs: Sequence[ShardOutput]) -> None:
    """Refuse shards that differ (module invariants) and one directory given twice."""
    seen: dict[str, Path] = {}
    for out in outputs:
        real = os.path.realpath(out.path)
        if real in seen:
            raise MergeRefusedError(f"{seen[real]} and {out.path} are the same directory")
        seen[real] = out.path
    _refuse_if_differ(outputs, "identity", _IDENTITY_FIELDS, lambda s: s.identity)
    plain = [str(out.path) for out in outputs if out.summary.shard is None]
    if plain and len(plain) < len(outputs):
        raise MergeRefusedError(f"{', '.join(plain)}: not a shard (that run was made without "
                                "--shard K/N), refusing to merge it with shards; merge only "
                                "the outputs of one batch's `run-eval --shard K/N` runs")
    _refuse_if_differ(outputs, "options", ("options_digest",), lambda s: s.shard)
    _refuse_if_differ(outputs, "probe policy", ("skipped",), lambda s: s.preflight)
    _refuse_if_differ(outputs, "signing key", ("signing_key",), lambda s: s)
    _refuse_if_differ(outputs, "batch (problem selection)", ("problems",), lambda s: s)
    groups: dict[tuple[int, str | None], list[Path]] = {}
    for out in outputs:
        groups.setdefault(_shard_key(out.summary), []).append(out.path)
    if len(groups) > 1:
        detail = "; ".join(f"{', '.join(map(str, paths))} (shard count {n}, batch digest "
                           f"{digest or 'none: not a --shard run'})"
                           for (n, digest), paths in groups.items())
        raise MergeRefusedError(f"shards come from different batches or shard counts, "
                                f"refusing to merge: {detail}")


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
        n, digest = _shard_key(outputs[0].summary)
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

