"""Signed runs: a DSSE envelope over an in-toto Statement v1 beside each verdict file, and one
over the whole run (``run.intoto.json``: ``summary.json`` and every verdict file by digest,
the run's identity and options), design §5.5, SECURITY.md invariant 20; checked offline by
``outputs.verify``, and by a resumed run before it keeps a verdict (``SigningKey.check``).

Invariants:
- Nothing cryptographic is written here (``cryptography``, ``securesystemslib``, ``rfc8785``),
  so the same verdict file and key give the same envelope byte for byte.
- Statements are built from the files' bytes on disk, never from a copy in memory, so they
  attest exactly what a reader finds.
- No payload is believed before its signature verifies (``verified_payload``).
- A key's fingerprint (``keyid``, ``summary.json``'s ``signing_key``) is the SHA-256 of its DER
  SubjectPublicKeyInfo, as ``openssl pkey -pubin -outform DER | sha256sum`` prints.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import rfc8785
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import ValidationError
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import FormatError, VerificationError
from securesystemslib.signer import CryptoSigner, SSlibKey

from lean_eval.errors import CatalogError, SigningKeyError
from lean_eval.files.atomic import write_json_atomic
from lean_eval.files.decoding import strict_json
from lean_eval.records import out_layout
from lean_eval.records.statement import (
    BubblewrapClaim,
    Predicate,
    RunPredicate,
    RunStatement,
    ShardClaim,
    Statement,
    Subject,
    SubmissionClaim,
    ToolchainClaim,
)
from lean_eval.records.verdict import Summary, Verdict

PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "urn:lean-eval:predicate:verdict:v1"
RUN_PREDICATE_TYPE = "urn:lean-eval:predicate:run:v1"
ENVELOPE_MAX = 4 << 20  # an envelope is a few KiB (a run's: ~100 B a verdict); OUT may be hostile
SUBMISSION_SUBJECT = "submission:"  # + the submission id
_KEY_BYTES = 64 * 1024


def is_envelope(path: Path) -> bool:
    """Whether ``path`` is named like an envelope (and so is not a verdict)."""
    return path.name.endswith(out_layout.ENVELOPE_SUFFIX)


def predicate_of(verdict: Verdict) -> Predicate:
    """The predicate a verdict's own fields call for."""
    ident = verdict.identity
    return Predicate(
        submission=SubmissionClaim(id=verdict.submission.id, digest=verdict.submission.digest),
        problem=verdict.problem, verdict=verdict.verdict, execution=verdict.execution,
        reason_code=verdict.reason.code, checkers=verdict.checkers,
        benchmark_commit=ident.benchmark_commit, trusted_files=dict(verdict.trusted_files),
        toolchain=ToolchainClaim(name=ident.toolchain_name, path=ident.toolchain_path),
        bubblewrap=BubblewrapClaim(version=ident.bwrap_version, sha256=ident.bwrap_sha256,
                                   minimum_version=ident.bwrap_minimum_version),
        harness_version=ident.harness_version, probes_skipped=verdict.probes_skipped,
        options=dict(verdict.options or {}))


def statement_of(name: str, data: bytes) -> Statement:
    """The statement about verdict file ``name`` holding ``data`` (ValidationError: no verdict)."""
    verdict = Verdict.model_validate_json(data)
    return Statement.model_validate({
        "_type": STATEMENT_TYPE,
        "subject": (Subject(name=name, digest={"sha256": hashlib.sha256(data).hexdigest()}),
                    Subject(name=SUBMISSION_SUBJECT + verdict.submission.id,
                            digest={"sha256": verdict.submission.digest})),
        "predicateType": PREDICATE_TYPE, "predicate": predicate_of(verdict)})


def run_statement(out_dir: Path, key_fingerprint: str) -> RunStatement:
    """The statement about the run in ``out_dir``: its ``summary.json`` and every verdict file
    the summary lists, by digest (OSError, ValueError: a file is missing or unreadable)."""
    data = (out_dir / out_layout.SUMMARY).read_bytes()
    summary = Summary.model_validate_json(data)
    subjects = [_subject(out_layout.SUMMARY, data)]
    for pair in summary.every_pair():
        name = str(out_layout.place_of(pair.submission, pair.problem))
        subjects.append(_subject(name, (out_dir / name).read_bytes()))
    info = summary.shard
    return RunStatement.model_validate({
        "_type": STATEMENT_TYPE, "subject": tuple(subjects),
        "predicateType": RUN_PREDICATE_TYPE, "predicate": RunPredicate(
            identity=summary.identity, options=summary.options,
            shard=None if info is None else ShardClaim(
                k=info.k, n=info.n, batch_digest=info.batch_digest,
                options_digest=info.options_digest),
            started_at=summary.started_at, finished_at=summary.finished_at,
            signing_key=key_fingerprint)})


def _subject(name: str, data: bytes) -> Subject:
    return Subject(name=name, digest={"sha256": hashlib.sha256(data).hexdigest()})


class UnverifiedError(ValueError):
    """An envelope that is absent, unreadable, or not signed by the key: why, in words."""


def open_envelope(envelope_file: Path, data: bytes | None = None) -> Envelope:
    """The DSSE envelope in ``envelope_file`` (read bounded; its payload not yet believed);
    ``data``: its bytes, already read by the caller (``outputs.verify``: without following a
    link)."""
    if data is None:
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


def fingerprint(key: Ed25519PublicKey) -> str:
    der = key.public_bytes(serialization.Encoding.DER,
                           serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


class PublicKey:
    """An Ed25519 public key, as ``securesystemslib`` verifies with it."""

    def __init__(self, key: Ed25519PublicKey) -> None:
        self.fingerprint = fingerprint(key)
        self.sslib = SSlibKey.from_crypto(key, keyid=self.fingerprint)

    def verified_payload(self, envelope_file: Path, data: bytes | None = None) -> bytes:
        """The payload of the envelope at ``envelope_file`` (``data``: its bytes, read by the
        caller) once its signature verified under this key; else ``UnverifiedError``."""
        if data is None and not envelope_file.is_file():
            raise UnverifiedError(f"{envelope_file.name} is missing")
        try:
            envelope = open_envelope(envelope_file, data)
        except (OSError, CatalogError, ValueError, KeyError, TypeError, FormatError) as exc:
            raise UnverifiedError(f"not a DSSE envelope: {type(exc).__name__}: {exc}") from exc
        if envelope.payload_type != PAYLOAD_TYPE:
            raise UnverifiedError(f"payload type {envelope.payload_type!r}, not {PAYLOAD_TYPE}")
        try:
            envelope.verify([self.sslib], 1)
        except (VerificationError, ValueError) as exc:
            signers = ", ".join(sorted(envelope.signatures)) or "nobody"
            raise UnverifiedError(f"no signature verifies under --key {self.fingerprint} "
                             f"(signed by {signers})") from exc
        return bytes(envelope.payload)


class SigningKey:
    """An Ed25519 private key, loaded (and so checked) before anything is scored."""

    def __init__(self, key: Ed25519PrivateKey) -> None:
        self.public = PublicKey(key.public_key())
        self.fingerprint = self.public.fingerprint
        self._signer = CryptoSigner(key, self.public.sslib)

    def _envelope(self, statement: Statement | RunStatement) -> dict[str, Any]:
        payload = rfc8785.dumps(statement.model_dump(mode="json", by_alias=True))
        envelope = Envelope(payload, PAYLOAD_TYPE, {})
        envelope.sign(self._signer)
        return envelope.to_dict()

    def envelope(self, name: str, data: bytes) -> dict[str, Any]:
        """The DSSE envelope (as JSON) over the statement about the verdict file ``name``."""
        return self._envelope(statement_of(name, data))

    def sign(self, verdict_file: Path, out_dir: Path) -> str | None:
        """Write the envelope of ``verdict_file``: None, or why it could not be written."""
        try:
            data = verdict_file.read_bytes()
            name = verdict_file.relative_to(out_dir).as_posix()
            write_json_atomic(out_layout.envelope_path(verdict_file), self.envelope(name, data))
        except (OSError, ValueError, ValidationError) as exc:
            return f"cannot sign {verdict_file}: {type(exc).__name__}: {exc}"
        return None

    def sign_run(self, out_dir: Path) -> str | None:
        """Write ``run.intoto.json`` over the run ``summary.json`` records: None, or why not."""
        try:
            statement = run_statement(out_dir, self.fingerprint)
            write_json_atomic(out_dir / out_layout.RUN_ENVELOPE, self._envelope(statement))
        except (OSError, ValueError, ValidationError) as exc:
            return f"cannot sign the run in {out_dir}: {type(exc).__name__}: {exc}"
        return None

    def check(self, verdict_file: Path, out_dir: Path) -> str | None:
        """Why a resumed run must not keep ``verdict_file`` as signed, or None: its envelope
        verifies under this key and attests exactly these bytes at this place."""
        name = verdict_file.relative_to(out_dir).as_posix()
        try:
            payload = self.public.verified_payload(out_layout.envelope_path(verdict_file))
            statement = Statement.model_validate_json(payload)
            data = verdict_file.read_bytes()
        except (UnverifiedError, OSError, ValidationError) as exc:
            return (f"its envelope: {exc}" if isinstance(exc, UnverifiedError)
                    else f"{type(exc).__name__}: {exc}")
        subject = statement.subject[0]
        if subject.name != name:
            return f"its envelope is about {subject.name!r}, not this file"
        if subject.digest.get("sha256") != hashlib.sha256(data).hexdigest():
            return "the verdict file changed after it was signed"
        return None


def _read_key(path: Path, what: str) -> bytes:
    try:
        with path.open("rb") as handle:
            data = handle.read(_KEY_BYTES + 1)
    except OSError as exc:
        raise SigningKeyError(f"{what} {path}: {exc.strerror or exc}") from exc
    if len(data) > _KEY_BYTES:
        raise SigningKeyError(f"{what} {path}: larger than {_KEY_BYTES} bytes; not a PEM key")
    return data


def load_signing_key(path: Path) -> SigningKey:
    """An unencrypted Ed25519 private key in PEM (``openssl genpkey -algorithm ed25519``)."""
    data = _read_key(path, "--sign-key")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError as exc:  # cryptography: encrypted, and no password given
        raise SigningKeyError(f"--sign-key {path}: the key is encrypted; give an unencrypted "
                              "Ed25519 key (openssl genpkey -algorithm ed25519)") from exc
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise SigningKeyError(f"--sign-key {path}: not a PEM private key ({exc}); make one with "
                              "openssl genpkey -algorithm ed25519 -out FILE") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(f"--sign-key {path}: a {type(key).__name__.removesuffix('_')} "
                              "key, not Ed25519 (openssl genpkey -algorithm ed25519)")
    return SigningKey(key)


def load_public_key(path: Path) -> PublicKey:
    """An Ed25519 public key in PEM (``openssl pkey -in KEY -pubout``)."""
    data = _read_key(path, "--key")
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm) as exc:
        hint = (" (that is a private key: give its public half, openssl pkey -in KEY -pubout)"
                if b"PRIVATE KEY" in data else "")
        raise SigningKeyError(f"--key {path}: not a PEM public key{hint}") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise SigningKeyError(f"--key {path}: a {type(key).__name__} key, not Ed25519")
    return PublicKey(key)
