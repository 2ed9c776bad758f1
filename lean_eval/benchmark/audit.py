"""``lean-eval audit-results``: each record of a results store (``<user>.json`` files of
schema version 2) against its benchmark's source, a git repository in the lean-eval source
layout (docs/auditing.md).

A record names a problem, a ``statement_revision`` and the ``benchmark_commit`` it was scored
at. Its status:
- ``unknown_commit``: the source holds no such commit;
- ``unknown_problem``: the commit has no such problem at that revision, or the source has the
  problem no more, or now at a lower revision;
- ``stale``: the source carries the problem at the record's revision now, and its trusted
  statement (``provenance.statement_digest``, the digest ``import-catalog --check`` compares)
  differs from the one at ``benchmark_commit``: the statement changed without a new revision;
- ``ok``: the same statement, or a statement revised since under a new revision (the record
  stands for its own revision).

Invariants: the store is read whole and validated as the public store's validator would
(``records.results_store.UserFile``) before git runs, and any unreadable file is a
``CatalogError`` naming it; the source is read only from git objects at one commit (its work
tree never), in a fixed number of git processes however many records and commits there are
(``gitread``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import NamedTuple

from pydantic import ValidationError

from lean_eval.benchmark import gitread, revision_history, statements
from lean_eval.errors import CatalogError, UsageError
from lean_eval.files.decoding import strict_json
from lean_eval.records.audit import STATUSES, AuditedRecord, AuditReport, AuditStatus
from lean_eval.records.results_store import Result, UserFile


class StoreRecord(NamedTuple):
    user: str
    result: Result


def read_store(results_dir: Path) -> list[StoreRecord]:
    """Every record of the store in ``results_dir`` (files by name, records in file order)."""
    if not results_dir.is_dir():
        raise UsageError(f"--results-dir {results_dir}: not a directory")
    files = sorted(p for p in results_dir.glob("*.json") if p.is_file())
    if not files:
        hint = (f" (the store is its results/: --results-dir {results_dir / 'results'})"
                if (results_dir / "results").is_dir() else "")
        raise UsageError(f"--results-dir {results_dir}: no <user>.json file{hint}")
    found: list[StoreRecord] = []
    for path in files:
        try:
            store = UserFile.model_validate(strict_json(path.read_bytes(), str(path)))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise CatalogError(f"{path}: not a results store file of schema version 2 "
                               f"({exc.error_count()} problem(s), first at {where}: "
                               f"{first['msg']})") from exc
        except OSError as exc:
            raise CatalogError(f"{path}: {exc.strerror or exc}") from exc
        found.extend(StoreRecord(store.user, r) for r in store.results)
    return found


def _judge(record: Result, at: statements.Statement | None, now: statements.Statement | None,
           changed_in: tuple[str, ...]) -> tuple[AuditStatus, str]:
    pid, revision, commit = record.problem_id, record.statement_revision, record.benchmark_commit
    if at is None:
        return "unknown_problem", (f"{commit[:12]} has no problem {pid!r} (no manifest or no "
                                   f"generated/{pid}/Challenge.lean)")
    if at.revision != revision:
        return "unknown_problem", (f"{commit[:12]} holds {pid!r} at statement_revision "
                                   f"{at.revision}, not {revision}")
    if now is None:
        return "unknown_problem", f"the source has no problem {pid!r} now"
    if now.revision != revision:
        if now.revision is not None and now.revision > revision:
            return "ok", (f"revised since, to statement_revision {now.revision}: the record "
                          f"stands for revision {revision}")
        return "unknown_problem", (f"the source has {pid!r} at statement_revision "
                                   f"{now.revision} now, not {revision}")
    if at.digest == now.digest:
        return "ok", "the statement scored is the one the source carries under this revision"
    named = f" (changed in {', '.join(c[:12] for c in changed_in)})" if changed_in else ""
    return "stale", (f"the trusted statement changed after {commit[:12]} while "
                     f"statement_revision stayed {revision}{named}")


class _Source(NamedTuple):
    """The source as the audit reads it: its history, the states of the commits the store
    names (and of ``head``), and their statements' reader."""

    head: str
    commits: dict[str, gitread.Commit]
    states: dict[str, dict[str, str]]
    reader: statements.Reader

    def changes(self, pids: set[str]) -> dict[str, tuple[str, ...]]:
        """Each problem of ``pids`` -> the commits of head's first-parent chain that changed
        its statement under its current revision, oldest first (one history walk, one batch
        of blobs, however many problems)."""
        if not pids:
            return {}
        found = revision_history.origins(self.reader, self.commits, self.head, pids)
        self.reader.load(b for o in found.values() for _, x, y in o.edits
                         for b in (*x.files, *y.files))
        return {pid: revision_history.changed_in(self.reader, o) for pid, o in found.items()}


def _read_source(upstream: Path, revision: str, records: list[StoreRecord]) -> _Source:
    git = gitread.repository(upstream)
    head = gitread.resolve(git, revision)
    if head is None:
        raise CatalogError(f"--upstream {upstream}: not a git repository with a commit "
                           f"{revision!r}")
    sizes = gitread.objects(git)
    named = sorted({r.result.benchmark_commit for r in records})
    known = [c for c in named if sizes.get(c, ("", 0))[0] == "commit"]
    commits = gitread.history(git, [head, *known], statements.PATHSPECS)
    states = {c: gitread.state_at(commits, c) for c in {head, *known}}
    reader = statements.Reader(git, sizes)
    wanted: dict[str, set[str]] = {head: {r.result.problem_id for r in records}}
    for _, record in records:
        wanted.setdefault(record.benchmark_commit, set()).add(record.problem_id)
    reader.load(b for c, state in states.items() for b in reader.needed(state, wanted[c]))
    return _Source(head, commits, states, reader)


def audit(results_dir: Path, upstream: Path, revision: str = "HEAD") -> AuditReport:
    """Every record of the store in ``results_dir`` against ``upstream`` at ``revision``."""
    records = read_store(results_dir)
    source = _read_source(upstream, revision, records)
    head_state = source.states[source.head]
    now = {r.result.problem_id: source.reader.statement(head_state, r.result.problem_id)
           for r in records}
    at = {(r.result.benchmark_commit, r.result.problem_id): source.reader.statement(
        source.states[r.result.benchmark_commit], r.result.problem_id)
        for r in records if r.result.benchmark_commit in source.states}
    moved = set()
    for (_, pid), then in at.items():
        current = now[pid]
        if then is not None and current is not None and then.digest != current.digest:
            moved.add(pid)
    changes = source.changes(moved)
    line = gitread.chain(source.commits, source.head)
    position = {c: i for i, c in enumerate(line)}  # 0: head
    audited: list[AuditedRecord] = []
    for user, record in records:
        commit, pid, current = record.benchmark_commit, record.problem_id, now[record.problem_id]
        then = at.get((commit, pid))
        if commit not in source.states:
            status: AuditStatus = "unknown_commit"
            detail = f"the source has no commit {commit}"
        else:
            since = position.get(commit)  # only the changes after the record's commit
            changed = tuple(c for c in changes.get(pid, ())
                            if since is None or position[c] < since)
            status, detail = _judge(record, then, current, changed)
        audited.append(AuditedRecord(
            result_id=record.result_id, user=user, problem_id=pid,
            statement_revision=record.statement_revision, benchmark_commit=commit,
            status=status, revision_now=current.revision if current else None,
            digest_at_commit=then.digest if then else None,
            digest_now=current.digest if current else None, detail=detail))
    counts = Counter(r.status for r in audited)
    return AuditReport(results_dir=str(results_dir), upstream=str(upstream),
                       upstream_commit=source.head,
                       counts={s: counts.get(s, 0) for s in STATUSES},
                       stale_problems=tuple(sorted({r.problem_id for r in audited
                                                    if r.status == "stale"})),
                       records=tuple(audited))
