"""Check a signed output directory offline: ``lean-eval verify OUT --key PUB``.

Invariants (SECURITY.md invariant 20):
- No payload is believed before its signature verifies under the key; then the signed digest,
  every predicate field, the ``summary.json`` line and each ``--submission``'s intake digest
  must match what is on disk.
- A signed run is one whole: its run envelope (``run.intoto.json``, or one per shard a merge
  carried) must verify, and the verdict files on disk must be exactly those it lists, with the
  digests it lists and the run's identity and options. A pair dropped, added or transplanted
  from another run is named.
- Every failure is named (file and what differs); none stops the others from being checked.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, ValidationError

from lean_eval.errors import LeanEvalError, OutputRefusedError
from lean_eval.intake import reader
from lean_eval.intake.bounds import IntakeLimits
from lean_eval.outputs import outdir, signing
from lean_eval.records import out_layout
from lean_eval.records.documents import Failure, VerifyReport
from lean_eval.records.statement import Predicate, RunPredicate, RunStatement, Statement
from lean_eval.records.verdict import Identity, PairSummary, Summary, Verdict

# What shards of one run share (as merge compares them): paths differ between machines.
SHARED_IDENTITY = ("harness_version", "benchmark_commit", "toolchain_name", "bwrap_sha256",
                   "bwrap_version", "bwrap_minimum_version")


class Listed(NamedTuple):
    """A verdict file as a signed run lists it."""

    sha256: str | None
    predicate: RunPredicate  # the signed run's own (not named `run`: runners alone are)
    envelope: str  # the run envelope that lists it


def _verdict_files(out_dir: Path, pairs: Sequence[PairSummary], listed: Mapping[str, Listed],
                   checker: _Checker) -> dict[str, PairSummary | None]:
    found: dict[str, PairSummary | None] = {}
    for path in sorted(out_dir.glob(f"*/*{out_layout.VERDICT_SUFFIX}")):
        # a link is listed too, to be named by read_file rather than followed or passed over
        if (path.is_file() or path.is_symlink()) and not signing.is_envelope(path):
            found[path.relative_to(out_dir).as_posix()] = None
    for rel in listed:
        found.setdefault(rel, None)
    for pair in pairs:
        rel = str(out_layout.place_of(pair.submission, pair.problem))
        if len(Path(rel).parts) != 2 or ".." in Path(rel).parts or rel.startswith("/"):
            checker.fail(out_layout.SUMMARY, f"lists a pair outside OUT: {rel!r}")
            continue
        found[rel] = pair
    return dict(sorted(found.items()))


def _diff(signed: Any, actual: Any) -> str:
    return f"signed {signed!r}, the verdict file says {actual!r}"


def _plain(value: Any) -> Any:
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


class _Checker:
    def __init__(self, out_dir: Path, key: signing.PublicKey) -> None:
        self.out_dir, self.key = out_dir, key
        self.failures: list[Failure] = []
        self.verified = 0

    def fail(self, path: str, problem: str) -> None:
        self.failures.append(Failure(path=path, problem=problem))

    def envelope(self, rel: str) -> Statement | None:
        """The statement of ``rel``'s envelope, once its signature verified; else None."""
        where = out_layout.envelope_path(Path(rel)).as_posix()
        try:
            data = outdir.read_file(self.out_dir, where)
        except FileNotFoundError:
            self.fail(rel, f"has no envelope ({where} is missing)")
            return None
        except OutputRefusedError as exc:
            self.fail(where, str(exc))
            return None
        except OSError as exc:
            self.fail(where, f"unreadable: {exc.strerror or exc}")
            return None
        try:
            payload = self.key.verified_payload(self.out_dir / where, data)
        except signing.UnverifiedError as exc:
            self.fail(where, str(exc))
            return None
        self.verified += 1
        try:
            return Statement.model_validate_json(payload)
        except ValidationError as exc:
            self.fail(where, f"signed payload is not a lean-eval verdict statement: "
                             f"{exc.errors()[0]['msg']}")
            return None

    def verdict(self, rel: str, pair: PairSummary | None, listed: Listed | None,
                bound: bool) -> Statement | None:
        """Check one verdict file against its envelope, its summary line and the signed run
        (``bound``: a run envelope was read, so ``listed`` None means the run lists it not)."""
        try:
            data = outdir.read_file(self.out_dir, rel)
        except OutputRefusedError as exc:
            self.fail(rel, str(exc))
            return None
        except OSError as exc:
            if listed is not None:
                self.fail(rel, f"{listed.envelope} lists it, but it is missing or unreadable "
                               f"({exc.strerror or exc}): a pair of the signed run was dropped")
            else:
                self.fail(rel, f"listed in summary.json but unreadable: {exc.strerror or exc}")
            return None
        if bound and listed is None:
            self.fail(rel, "is not among the verdicts the signed run lists: added, or "
                           "transplanted from another run")
        if listed is not None and listed.sha256 != hashlib.sha256(data).hexdigest():
            self.fail(rel, f"differs from the verdict {listed.envelope} lists (SHA-256 "
                           f"{listed.sha256}): replaced, or transplanted from another run")
        statement = self.envelope(rel)
        try:
            verdict: Verdict | None = Verdict.model_validate_json(data)
        except ValidationError as exc:
            self.fail(rel, f"not a verdict this lean-eval can read: {exc.errors()[0]['msg']}")
            verdict = None
        if verdict is not None and pair is not None:
            line = (pair.verdict, pair.execution, pair.reason)
            if line != (verdict.verdict, verdict.execution, verdict.reason.code):
                self.fail(rel, f"summary.json says {'/'.join(line)}, the verdict file says "
                               f"{verdict.verdict}/{verdict.execution}/{verdict.reason.code}")
        if verdict is not None and listed is not None:
            self.bound(rel, verdict, listed)
        if statement is None:
            return None
        subject, _ = statement.subject
        if subject.name != rel:
            self.fail(rel, f"its envelope is about {subject.name!r}, not this file")
        actual = hashlib.sha256(data).hexdigest()
        if subject.digest.get("sha256") != actual:
            self.fail(rel, f"SHA-256 {actual} differs from the signed "
                           f"{subject.digest.get('sha256')}: the file changed after signing")
        if verdict is not None:
            expected = signing.predicate_of(verdict)
            for field in Predicate.model_fields:
                signed, own = getattr(statement.predicate, field), getattr(expected, field)
                if signed != own:
                    self.fail(rel, f"predicate field {field}: {_diff(_plain(signed), _plain(own))}")
        return statement

    def bound(self, rel: str, verdict: Verdict, listed: Listed) -> None:
        """The verdict was given under its run's identity and options."""
        run = listed.predicate
        for field in Identity.model_fields:
            mine, theirs = getattr(verdict.identity, field), getattr(run.identity, field)
            if mine != theirs:
                self.fail(rel, f"identity {field} is {mine!r}, the signed run's "
                               f"({listed.envelope}) is {theirs!r}: not scored by this run")
        if verdict.options != run.options:
            self.fail(rel, f"options {verdict.options!r} differ from the signed run's "
                           f"({listed.envelope}) {run.options!r}: not scored by this run")

    def run_statement(self, name: str) -> RunStatement | None:
        """The statement of the run envelope ``name``, once its signature verified."""
        try:
            data = outdir.read_file(self.out_dir, name)
        except FileNotFoundError:
            self.fail(name, "is missing")
            return None
        except (OutputRefusedError, OSError) as exc:
            self.fail(name, str(exc) if isinstance(exc, OutputRefusedError)
                      else f"unreadable: {exc.strerror or exc}")
            return None
        try:
            payload = self.key.verified_payload(self.out_dir / name, data)
            return RunStatement.model_validate_json(payload)
        except signing.UnverifiedError as exc:
            self.fail(name, str(exc))
        except ValidationError as exc:
            self.fail(name, f"signed payload is not a lean-eval run statement: "
                            f"{exc.errors()[0]['msg']}")
        return None


def _runs(checker: _Checker, summary: Summary) -> tuple[dict[str, Listed], bool]:
    """Every verdict file the signed run lists (a merge: each carried shard's run), and
    whether a run envelope was read at all (module invariants)."""
    out_dir = checker.out_dir
    shards = sorted(p.name for p in out_dir.glob(out_layout.SHARD_ENVELOPE_GLOB))
    single = os.path.lexists(out_dir / out_layout.RUN_ENVELOPE)
    if not shards and not single:
        checker.fail(out_layout.RUN_ENVELOPE, "is missing: no signed run binds these verdicts "
                     "together, so a pair dropped, added or transplanted could not be told "
                     "(signed by a lean-eval before run envelopes, re-run unsigned, or removed)")
        return {}, False
    if shards and single:
        checker.fail(out_layout.RUN_ENVELOPE, "is beside the shard run envelopes of a merge ("
                     + ", ".join(shards) + "): one output holds one run")
    listed: dict[str, Listed] = {}
    runs: list[tuple[str, RunPredicate]] = []
    for name in ([out_layout.RUN_ENVELOPE] if single else []) + shards:
        statement = checker.run_statement(name)
        if statement is None:
            continue
        pred = statement.predicate
        summary_subject, *verdicts = statement.subject
        if name == out_layout.RUN_ENVELOPE:
            try:
                data = outdir.read_file(out_dir, out_layout.SUMMARY)
            except (OutputRefusedError, OSError) as exc:
                checker.fail(out_layout.SUMMARY, str(exc))
                data = b""
            if summary_subject.digest.get("sha256") != hashlib.sha256(data).hexdigest():
                checker.fail(out_layout.SUMMARY, f"differs from the summary {name} signs: "
                                                 "changed after the run was signed")
        else:
            k, n = (pred.shard.k, pred.shard.n) if pred.shard else (1, 1)
            if name != out_layout.shard_envelope(k, n):
                checker.fail(name, f"signs shard {k}/{n}, whose envelope is "
                                   f"{out_layout.shard_envelope(k, n)}")
        if pred.signing_key != checker.key.fingerprint:
            checker.fail(name, f"names signing key {pred.signing_key}, not --key "
                               f"{checker.key.fingerprint}")
        runs.append((name, pred))
        for subject in verdicts:
            if subject.name in listed:
                checker.fail(subject.name, f"listed by both {listed[subject.name].envelope} and "
                                           f"{name}: a pair scored twice")
            listed[subject.name] = Listed(subject.digest.get("sha256"), pred, name)
    _one_run(checker, summary, runs)
    return listed, True


def _one_run(checker: _Checker, summary: Summary,
             runs: Sequence[tuple[str, RunPredicate]]) -> None:
    """Every signed run (shard) is of the same batch, identity and options as the summary."""
    def shared(ident: Identity) -> tuple[Any, ...]:
        return tuple(getattr(ident, f) for f in SHARED_IDENTITY)

    for name, pred in runs:
        theirs = pred.shard.batch_digest if pred.shard else None
        ours = summary.shard.batch_digest if summary.shard else theirs
        if shared(pred.identity) != shared(summary.identity):
            checker.fail(name, f"is of another run: identity {shared(pred.identity)!r}, "
                               f"summary.json's {shared(summary.identity)!r}")
        if pred.options != summary.options:
            checker.fail(name, f"is of another run: options {pred.options!r}, summary.json's "
                               f"{summary.options!r}")
        first = runs[0][1]
        if (pred.shard and first.shard and (pred.shard.n, pred.shard.batch_digest)
                != (first.shard.n, first.shard.batch_digest)) or theirs != ours:
            checker.fail(name, f"is of another batch than {runs[0][0]}")


def _limits(statement: Statement) -> IntakeLimits:
    """The intake limits the run read the submission with (they can change its digest)."""
    try:
        return IntakeLimits.model_validate(statement.predicate.options.get("limits"))
    except ValidationError:
        return IntakeLimits()


def _submission(checker: _Checker, path: Path,
                signed: dict[str, list[tuple[str, Statement]]]) -> None:
    shown = str(path)
    try:
        sid = reader.submission_id(path)
    except LeanEvalError as exc:
        checker.fail(shown, str(exc))
        return
    mine = signed.get(sid)
    if not mine:
        checker.fail(shown, f"no signed verdict in {checker.out_dir} is of submission {sid!r}")
        return
    problems = frozenset(s.predicate.problem.id for _, s in mine)
    try:
        digest = reader.read_submission(path, problems, _limits(mine[0][1])).digest
    except LeanEvalError as exc:
        checker.fail(shown, f"cannot be read: {exc}")
        return
    for rel, statement in mine:
        claimed = statement.subject[1].digest.get("sha256")
        if digest != claimed:
            checker.fail(shown, f"digest {digest} differs from {claimed}, which the envelope of "
                                f"{rel} signs: this is not the submission that was scored")


def verify(out_dir: Path, key: signing.PublicKey, submissions: Sequence[Path] = ()
           ) -> VerifyReport:
    """Check ``out_dir`` against ``key``, and each submission given."""
    summary = outdir.read_summary(out_dir)
    checker = _Checker(out_dir, key)
    recorded = summary.signing_key
    if recorded is not None and recorded != key.fingerprint:
        checker.fail(out_layout.SUMMARY, f"the run recorded signing key {recorded}, --key is "
                                     f"{key.fingerprint}")
    listed, bound = _runs(checker, summary)
    files = _verdict_files(out_dir, summary.every_pair(), listed, checker)
    signed: dict[str, list[tuple[str, Statement]]] = {}
    for rel, pair in files.items():
        statement = checker.verdict(rel, pair, listed.get(rel), bound)
        if statement is not None:
            signed.setdefault(statement.predicate.submission.id, []).append((rel, statement))
    for envelope in sorted(out_dir.glob(f"*/*{out_layout.ENVELOPE_SUFFIX}")):
        rel = envelope.relative_to(out_dir).as_posix()
        verdict_rel = rel.removesuffix(out_layout.ENVELOPE_SUFFIX) + out_layout.VERDICT_SUFFIX
        if verdict_rel not in files:
            checker.fail(rel, f"an envelope without its verdict ({verdict_rel} is missing)")
    for path in submissions:
        _submission(checker, path, signed)
    return VerifyReport(out_dir=str(out_dir), key_fingerprint=key.fingerprint,
                        verdict_files=tuple(files), envelopes_verified=checker.verified,
                        submissions=len(submissions), failures=tuple(checker.failures))
