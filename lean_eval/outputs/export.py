"""Export the accepted pairs of a run into the leaderboard results store (design §5.5).

Invariants: only pairs whose verdict file says ``accepted`` become results, and, bound to an
intake (``Expected``), only the problem and statement revision it accepted: any other accepted
pair refuses the export naming both; everything (the
metadata, the run, every store file touched) is checked before anything is written, and any
problem refuses the whole export; the store is append-only and sticky; every store file is
read and written under the store's lock (``results_store.StoreLock``), so two exports into one
store both keep every record.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from lean_eval.errors import CatalogError, ExportRefusedError, OutputError
from lean_eval.files.atomic import write_text_atomic
from lean_eval.files.decoding import strict_json
from lean_eval.outputs.export_metadata import (
    Expected,
    MetadataFormat,
    binding,
    problems,
    read_metadata,
    where,
)
from lean_eval.outputs.report import run_report
from lean_eval.outputs.results_store import StoreLock, file_name, result_id
from lean_eval.records import out_layout
from lean_eval.records.documents import ExportReport
from lean_eval.records.results_store import (
    STORE_SCHEMA_VERSION,
    MetadataEntry,
    ProductionMetadata,
    Result,
    UserFile,
)
from lean_eval.records.verdict import PairSummary, Verdict

_COMMIT_LEN = 40
UNCOMMITTED_KEY = "benchmark_uncommitted"  # in production_metadata: see _with_uncommitted


class Added(NamedTuple):
    file: Path
    result_id: str
    submission: str
    problem: str


class Exported(NamedTuple):
    added: tuple[Added, ...]
    kept: tuple[Added, ...]  # accepted pairs whose result id the store already had
    written: tuple[Path, ...]
    waited: bool = False  # another export held the store first


def export_report(results_dir: Path, done: Exported) -> ExportReport:
    """The ``--json`` document of an export."""
    return ExportReport(results_dir=str(results_dir), kept=len(done.kept),
                        added=tuple({k: str(v) for k, v in a._asdict().items()}
                                    for a in done.added),
                        written=tuple(str(p) for p in done.written))


def statement_revision(verdict: Verdict) -> int:
    """The revision as scored (a later revision is a new result)."""
    return verdict.problem.statement_revision


def upstream_commit(verdict: Verdict) -> tuple[str, str | None]:
    """The commit a result names (``benchmark_commit`` in the store): the upstream one the
    benchmark was imported from, or the benchmark's own when it is no import; and why there is
    none, when there is none."""
    ident = verdict.identity
    if ident.imported and ident.upstream_commit is None:
        return "", ("the benchmark was imported from a source with no commit, so the upstream "
                    "commit is unknown: re-import it from a git checkout of the upstream, or "
                    "state the commit (import-catalog --upstream-commit SHA), then score again")
    commit = ident.upstream_commit or ident.benchmark_commit or ""
    if len(commit) != _COMMIT_LEN or commit.strip("0123456789abcdef"):
        return "", (f"benchmark_commit {commit or None!r} is not a 40-hex git commit (score "
                    "from a git checkout of the benchmark)")
    return commit, None


def _with_uncommitted(production: ProductionMetadata, verdict: Verdict) -> ProductionMetadata:
    """``production`` with the source paths the benchmark was imported with uncommitted
    (``Identity.upstream_uncommitted``, import-catalog --allow-dirty) under
    ``UNCOMMITTED_KEY``: benchmark_commit does not hold what was scored there, and the public
    schema lets no other object of a record grow."""
    paths = verdict.identity.upstream_uncommitted
    if not paths:
        return production
    return ProductionMetadata.model_validate(
        {**production.model_dump(mode="json", exclude_none=True), UNCOMMITTED_KEY: list(paths)})


def utc_seconds(stamp: str) -> str:
    """An ISO 8601 time as second-precision UTC, ``YYYY-MM-DDTHH:MM:SSZ``."""
    when = datetime.fromisoformat(stamp)
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _store_errors(path: Path, data: Any) -> list[str]:
    try:
        store = UserFile.model_validate(data)
    except ValidationError as exc:
        errors = []
        for e in exc.errors():
            loc = e["loc"]
            if len(loc) >= 2 and loc[0] == "results" and isinstance(loc[1], int):
                record = data["results"][loc[1]]
                rid = record.get("result_id") if isinstance(record, dict) else None
                errors.append(f"{path}: record {loc[1]} ({rid or 'no result_id'}): field "
                              f"{where(loc[2:])}: {e['msg']}")
            else:
                errors.append(f"{path}: {where(loc)}: {e['msg']}")
        return errors
    errors = []
    if path.name != file_name(store.user):
        errors.append(f"{path}: holds user {store.user!r}, whose file is {file_name(store.user)}")
    seen: dict[str, int] = {}
    for i, r in enumerate(store.results):
        expected = result_id(store.user, r.declared_model, r.problem_id, r.statement_revision)
        if r.result_id != expected:
            errors.append(f"{path}: record {i} ({r.result_id}): result_id does not match "
                          f"user, declared_model, problem_id and statement_revision (they give "
                          f"{expected}); was the record edited?")
        if r.result_id in seen:
            errors.append(f"{path}: record {i} ({r.result_id}): duplicate of record "
                          f"{seen[r.result_id]}")
        seen.setdefault(r.result_id, i)
    return errors


def load_store(path: Path) -> tuple[dict[str, Any] | None, list[str]]:
    """A user's store file as parsed (None: absent), and what is wrong with it."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, []
    except OSError as exc:
        return None, [f"{path}: {exc.strerror or exc}"]
    try:
        raw = strict_json(data, str(path))
    except CatalogError as exc:
        return None, [str(exc)]
    if not isinstance(raw, dict):
        return None, [f"{path}: not a results store file (expected an object)"]
    return raw, _store_errors(path, raw)


def render(document: Mapping[str, Any]) -> str:
    """The bytes of a store file (as text)."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _candidates(run: run_report.Run, metadata: Mapping[str, MetadataEntry],
                invalid: Mapping[str, object], expected: Expected | None
                ) -> tuple[list[tuple[MetadataEntry, Result, PairSummary]], list[str]]:
    errors: list[str] = []
    found: list[tuple[MetadataEntry, Result, PairSummary]] = []
    try:
        accepted_at = utc_seconds(run.written.finished_at)
    except ValueError:
        return [], [(f"{run.out_dir / out_layout.SUMMARY}: finished_at {run.written.finished_at!r} "
                     "is not an ISO 8601 time")]
    missing: dict[str, list[str]] = {}
    for pair, verdict in zip(run.written.every_pair(), run.verdicts, strict=True):
        if pair.verdict != "accepted":
            continue
        where = run.out_dir / out_layout.place_of(pair.submission, pair.problem)
        if verdict is None or verdict.verdict != "accepted":
            errors.append(f"{where}: summary.json says accepted but the verdict file "
                          + ("is unreadable" if verdict is None else f"says {verdict.verdict}"))
            continue
        revision = statement_revision(verdict)
        if expected is not None and (pair.problem, revision) != expected[:2]:
            errors.append(f"{where}: the run accepted problem {pair.problem} at statement "
                          f"revision {revision}, but {expected.said_by} expects problem "
                          f"{expected.problem_id} at statement revision "
                          f"{expected.statement_revision}")
            continue
        entry = metadata.get(pair.submission)
        if entry is None:
            if pair.submission in invalid:
                continue  # its entry's own problems are reported
            missing.setdefault(pair.submission, []).append(pair.problem)
            continue
        commit, problem = upstream_commit(verdict)
        if problem is not None:
            errors.append(f"{where}: {problem}")
            continue
        try:
            result = Result.model_validate({
                "result_id": result_id(entry.user, entry.declared_model, pair.problem, revision),
                "problem_id": pair.problem, "statement_revision": revision,
                "declared_model": entry.declared_model, "accepted_at": accepted_at,
                "benchmark_commit": commit, "intake": entry.intake, "submission": entry.submission,
                "production_metadata": _with_uncommitted(entry.production_metadata, verdict)})
        except ValidationError as exc:
            errors += [f"{where}: {p}" for p in problems(exc)]
            continue
        found.append((entry, result, pair))
    errors += [f"submission {sid!r} has accepted pairs ({', '.join(pids)}) but no entry in "
               "--metadata" for sid, pids in missing.items()]
    return found, errors


def _existing(path: Path, user: str) -> tuple[dict[str, Any], list[str]]:
    raw, problems = load_store(path)
    if raw is None or problems:  # an invalid store is refused: give it nothing to append to
        raw = {"schema_version": STORE_SCHEMA_VERSION, "user": user, "results": []}
    return raw, problems


def check_results_dir(results_dir: Path) -> None:
    """ExportRefusedError when ``results_dir`` is a repository's root (the store is its
    ``results/``) or lies inside a run's output directory (a later run or merge owns it)."""
    where = results_dir.absolute()
    if (where / ".git").exists():
        raise ExportRefusedError(f"--results-dir {results_dir} is the root of a git repository; "
                                 "give the store's directory in it (e.g. its results/); "
                                 "nothing was written")
    for parent in (where, *where.parents):
        if (parent / out_layout.SUMMARY).is_file():
            raise ExportRefusedError(f"--results-dir {results_dir} is inside the output "
                                     f"directory {parent} of a run; give a directory of its "
                                     "own; nothing was written")


def export(out_dir: Path, metadata_path: Path, results_dir: Path,
           on_wait: Callable[[str], None] | None = None, *, expected: Expected | None = None,
           metadata_format: MetadataFormat = "auto") -> Exported:
    """Append the accepted pairs of ``out_dir`` to the store in ``results_dir``, once no other
    export writes it (``on_wait``: told when this one has to wait); with ``expected`` (or a
    server intake's pipeline metadata), only that problem at that revision."""
    check_results_dir(results_dir)
    run = run_report.load_run(out_dir)
    metadata = read_metadata(metadata_path, run, metadata_format)
    invalid = metadata.invalid
    candidates, errors = _candidates(run, metadata.entries, invalid,
                                     binding(expected, metadata.expected))
    errors = [line for lines in invalid.values() for line in lines] + errors
    if not candidates or errors:  # it writes nothing: no lock (and no store directory made)
        return _append(candidates, errors, results_dir, waited=False)
    held = StoreLock(results_dir, on_wait=on_wait)
    try:
        return _append(candidates, errors, results_dir, held.waited)
    finally:
        held.close()


def _append(candidates: list[tuple[MetadataEntry, Result, PairSummary]], errors: list[str],
            results_dir: Path, waited: bool) -> Exported:
    """Read the store files ``candidates`` go to, append, write (under the store's lock)."""
    documents: dict[Path, dict[str, Any]] = {}
    changed: dict[Path, bool] = {}
    ids: dict[Path, set[str]] = {}
    added: list[Added] = []
    kept: list[Added] = []
    for entry, result, pair in candidates:
        path = results_dir / file_name(entry.user)
        if path not in documents:
            documents[path], problems = _existing(path, entry.user)
            errors += problems
            changed[path] = False
            ids[path] = {r["result_id"] for r in documents[path]["results"]}
        if result.result_id in ids[path]:
            kept.append(Added(path, result.result_id, pair.submission, pair.problem))
            continue
        ids[path].add(result.result_id)
        documents[path]["results"].append(result.model_dump(mode="json", exclude_none=True))
        changed[path] = True
        added.append(Added(path, result.result_id, pair.submission, pair.problem))
    if errors:
        raise ExportRefusedError("\n".join([*errors, "nothing was written"]))
    written = tuple(path for path, did in changed.items() if did)
    for i, path in enumerate(written):
        UserFile.model_validate(documents[path])  # what is written always reads back
        try:
            write_text_atomic(path, render(documents[path]))
        except OSError as exc:
            done = ", ".join(str(p) for p in written[:i]) or "none"
            raise OutputError(f"cannot write {path}: {exc.strerror or exc} (files already "
                              f"written: {done})") from exc
    return Exported(tuple(added), tuple(kept), written, waited)
