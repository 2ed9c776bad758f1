"""Check a signed output directory offline: ``lean-eval verify OUT --key PUB``.

Invariants:
- Every verdict, listed or on disk, has an envelope whose signature verifies under the key
  before anything in its payload is believed; the signed digest, every predicate field, the
  summary line and each ``--submission``'s intake digest must match what is on disk.
- Every failure is named (file and what differs); none stops the others from being checked.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import FormatError, VerificationError

from lean_eval.errors import CatalogError, LeanEvalError
from lean_eval.files.decoding import strict_json
from lean_eval.intake import reader
from lean_eval.intake.bounds import IntakeLimits
from lean_eval.outputs import signing
from lean_eval.outputs.report import run_report
from lean_eval.records import out_layout
from lean_eval.records.documents import Failure, VerifyReport
from lean_eval.records.statement import Predicate, Statement
from lean_eval.records.verdict import PairSummary, Verdict


def _verdict_files(out_dir: Path, pairs: Sequence[PairSummary], checker: _Checker
                   ) -> dict[str, PairSummary | None]:
    found: dict[str, PairSummary | None] = {}
    for path in sorted(out_dir.glob(f"*/*{out_layout.VERDICT_SUFFIX}")):
        if path.is_file() and not signing.is_envelope(path):
            found[path.relative_to(out_dir).as_posix()] = None
    for pair in pairs:
        rel = str(out_layout.place_of(pair.submission, pair.problem))
        if len(Path(rel).parts) != 2 or ".." in Path(rel).parts or rel.startswith("/"):
            checker.fail(out_layout.SUMMARY, f"lists a pair outside OUT: {rel!r}")
            continue
        found[rel] = pair
    return dict(sorted(found.items()))


ENVELOPE_MAX = 4 << 20  # an envelope is a few KiB; a published OUT may be hostile


def _open(envelope_file: Path) -> Envelope:
    with envelope_file.open("rb") as handle:
        data = handle.read(ENVELOPE_MAX + 1)
    if len(data) > ENVELOPE_MAX:
        raise ValueError(f"larger than {ENVELOPE_MAX} bytes")
    raw = strict_json(data, str(envelope_file))
    if not isinstance(raw, dict):
        raise ValueError("not a JSON object")
    # from_dict rewrites the signatures it is given: hand it copies
    sigs = raw.get("signatures")
    copy = {**raw, "signatures": [dict(s) for s in sigs] if isinstance(sigs, list) else sigs}
    return Envelope.from_dict(copy)


def _diff(signed: Any, actual: Any) -> str:
    return f"signed {signed!r}, the verdict file says {actual!r}"


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
        path = self.out_dir / where
        if not path.is_file():
            self.fail(rel, f"has no envelope ({where} is missing)")
            return None
        try:
            envelope = _open(path)
        except (OSError, CatalogError, ValueError, KeyError, TypeError, FormatError) as exc:
            self.fail(where, f"not a DSSE envelope: {type(exc).__name__}: {exc}")
            return None
        if envelope.payload_type != signing.PAYLOAD_TYPE:
            self.fail(where, f"payload type {envelope.payload_type!r}, not {signing.PAYLOAD_TYPE}")
            return None
        try:
            envelope.verify([self.key.sslib], 1)
        except (VerificationError, ValueError):
            signers = ", ".join(sorted(envelope.signatures)) or "nobody"
            self.fail(where, f"no signature verifies under --key {self.key.fingerprint} "
                             f"(signed by {signers})")
            return None
        self.verified += 1
        try:
            return Statement.model_validate_json(envelope.payload)
        except ValidationError as exc:
            self.fail(where, f"signed payload is not a lean-eval verdict statement: "
                             f"{exc.errors()[0]['msg']}")
            return None

    def verdict(self, rel: str, pair: PairSummary | None) -> Statement | None:
        """Check one verdict file against its envelope and its summary line."""
        path = self.out_dir / rel
        try:
            data = path.read_bytes()
        except OSError as exc:
            self.fail(rel, f"listed in summary.json but unreadable: {exc.strerror or exc}")
            return None
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
            expected = signing.predicate_of(verdict, statement.predicate.options)
            for field in Predicate.model_fields:
                signed, own = getattr(statement.predicate, field), getattr(expected, field)
                if signed != own:
                    self.fail(rel, f"predicate field {field}: {_diff(_plain(signed), _plain(own))}")
        return statement


def _plain(value: Any) -> Any:
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


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
    summary = run_report.load_run(out_dir).summary
    checker = _Checker(out_dir, key)
    recorded = getattr(summary, "signing_key", None)
    if recorded is not None and recorded != key.fingerprint:
        checker.fail(out_layout.SUMMARY, f"the run recorded signing key {recorded}, --key is "
                                     f"{key.fingerprint}")
    files = _verdict_files(out_dir, summary.every_pair(), checker)
    signed: dict[str, list[tuple[str, Statement]]] = {}
    for rel, pair in files.items():
        statement = checker.verdict(rel, pair)
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
