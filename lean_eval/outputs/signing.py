"""Signed verdicts: a DSSE envelope over an in-toto Statement v1 beside each verdict file
(design §5.5, SECURITY.md invariant 20; checked offline by ``outputs.verify``).

Invariants:
- Nothing cryptographic is written here (``cryptography``, ``securesystemslib``, ``rfc8785``),
  so the same verdict file and key give the same envelope byte for byte.
- The statement is built from the verdict file's bytes on disk, never from a copy in memory,
  so it attests exactly what a reader finds.
- A key's fingerprint (``keyid``, ``summary.json``'s ``signing_key``) is the SHA-256 of its DER
  SubjectPublicKeyInfo, as ``openssl pkey -pubin -outform DER | sha256sum`` prints.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import rfc8785
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import ValidationError
from securesystemslib.dsse import Envelope
from securesystemslib.signer import CryptoSigner, SSlibKey

from lean_eval.errors import SigningKeyError
from lean_eval.files.atomic import write_json_atomic
from lean_eval.records import out_layout
from lean_eval.records.statement import (
    BubblewrapClaim,
    Predicate,
    Statement,
    Subject,
    SubmissionClaim,
    ToolchainClaim,
)
from lean_eval.records.verdict import Verdict

PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "urn:lean-eval:predicate:verdict:v1"
SUBMISSION_SUBJECT = "submission:"  # + the submission id
_KEY_BYTES = 64 * 1024


def is_envelope(path: Path) -> bool:
    """Whether ``path`` is named like an envelope (and so is not a verdict)."""
    return path.name.endswith(out_layout.ENVELOPE_SUFFIX)


def predicate_of(verdict: Verdict, options: Mapping[str, Any]) -> Predicate:
    """The predicate a verdict's own fields call for (``options``: the run's)."""
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
        options=dict(options))


def statement_of(name: str, data: bytes, options: Mapping[str, Any]) -> Statement:
    """The statement about verdict file ``name`` holding ``data`` (ValidationError: no verdict)."""
    verdict = Verdict.model_validate_json(data)
    return Statement.model_validate({
        "_type": STATEMENT_TYPE,
        "subject": (Subject(name=name, digest={"sha256": hashlib.sha256(data).hexdigest()}),
                    Subject(name=SUBMISSION_SUBJECT + verdict.submission.id,
                            digest={"sha256": verdict.submission.digest})),
        "predicateType": PREDICATE_TYPE, "predicate": predicate_of(verdict, options)})


def fingerprint(key: Ed25519PublicKey) -> str:
    der = key.public_bytes(serialization.Encoding.DER,
                           serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


class PublicKey:
    """An Ed25519 public key, as ``securesystemslib`` verifies with it."""

    def __init__(self, key: Ed25519PublicKey) -> None:
        self.fingerprint = fingerprint(key)
        self.sslib = SSlibKey.from_crypto(key, keyid=self.fingerprint)


class SigningKey:
    """An Ed25519 private key, loaded (and so checked) before anything is scored."""

    def __init__(self, key: Ed25519PrivateKey) -> None:
        self.public = PublicKey(key.public_key())
        self.fingerprint = self.public.fingerprint
        self._signer = CryptoSigner(key, self.public.sslib)

    def envelope(self, name: str, data: bytes, options: Mapping[str, Any]) -> dict[str, Any]:
        """The DSSE envelope (as JSON) over the statement about the verdict file ``name``."""
        statement = statement_of(name, data, options)
        payload = rfc8785.dumps(statement.model_dump(mode="json", by_alias=True))
        envelope = Envelope(payload, PAYLOAD_TYPE, {})
        envelope.sign(self._signer)
        return envelope.to_dict()

    def sign(self, verdict_file: Path, out_dir: Path, options: Mapping[str, Any]) -> str | None:
        """Write the envelope of ``verdict_file``: None, or why it could not be written."""
        try:
            data = verdict_file.read_bytes()
            name = verdict_file.relative_to(out_dir).as_posix()
            write_json_atomic(out_layout.envelope_path(verdict_file),
                              self.envelope(name, data, options))
        except (OSError, ValueError, ValidationError) as exc:
            return f"cannot sign {verdict_file}: {type(exc).__name__}: {exc}"
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
