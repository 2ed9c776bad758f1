"""Signed verdicts: the DSSE/in-toto envelope, ``verify`` on outputs built without scoring, and
a bad --sign-key refused before anything is scored. The signed runs (real bubblewrap, the
stand-in toolchain) are in tests/e2e/test_signing.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from securesystemslib.dsse import Envelope
from support import (
    correct,
    keypair,
    make_submission,
    make_verdict,
    write_output,
)

from lean_eval.cli import main
from lean_eval.outputs import signing


def _verify(out: Path, pub: Path, *extra: str) -> Result:
    return CliRunner().invoke(main, ["verify", str(out), "--key", str(pub), *extra],
                              catch_exceptions=False)


def _bad_keys(base: Path) -> dict[str, Path]:
    ec_key = ec.generate_private_key(ec.SECP256R1())
    keys = {"garbage": base / "garbage.pem", "ecdsa": base / "ec.pem",
            "encrypted": base / "enc.pem", "public": base / "only.pub"}
    keys["garbage"].write_text("not a key\n")
    keys["ecdsa"].write_bytes(ec_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    keys["encrypted"].write_bytes(Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret")))
    _, keys["public"] = keypair(base, "only")
    return keys


@pytest.mark.parametrize("kind", ["garbage", "ecdsa", "encrypted", "public", "missing"])
def test_a_bad_sign_key_is_exit_2_before_anything_is_scored(tmp_path: Path, kind: str) -> None:
    keys = _bad_keys(tmp_path)
    key = keys.get(kind, tmp_path / "absent.pem")
    sub = make_submission(tmp_path / "in", "good", {
        "two_plus_two": {"Submission.lean": correct("two_plus_two")}})
    out = tmp_path / "out"
    # via the environment variable; no benchmark, toolchain or bwrap is even looked at
    result = CliRunner().invoke(main, ["run-eval", str(sub), "--out", str(out)],
                                env={"LEAN_EVAL_SIGN_KEY": str(key)}, catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert f"--sign-key {key}" in result.output and "Traceback" not in result.output
    assert not out.exists()


def test_verify_refuses_a_key_that_is_not_an_ed25519_public_key(tmp_path: Path) -> None:
    keys = _bad_keys(tmp_path)
    (tmp_path / "out").mkdir()
    private, _ = keypair(tmp_path)
    for key in (keys["garbage"], private):
        result = _verify(tmp_path / "out", key)
        assert result.exit_code == 2 and f"--key {key}" in result.output, result.output
    assert "give its public half" in _verify(tmp_path / "out", private).output


def _verdict_bytes() -> bytes:
    return make_verdict("alice", "two_plus_two", options={
        "timeout": 60.0, "skip_probes": False}).model_dump_json(indent=2).encode()


def test_envelope_is_dsse_over_an_in_toto_statement_and_deterministic(tmp_path: Path) -> None:
    private, public = keypair(tmp_path)
    key = signing.load_signing_key(private)
    data = _verdict_bytes()
    one = key.envelope("alice/two_plus_two.json", data)
    assert one == key.envelope("alice/two_plus_two.json", data)
    assert one["payloadType"] == "application/vnd.in-toto+json"
    assert [s["keyid"] for s in one["signatures"]] == [key.fingerprint]
    statement = json.loads(base64.b64decode(one["payload"]))
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["predicateType"] == signing.PREDICATE_TYPE
    assert statement["subject"] == [
        {"name": "alice/two_plus_two.json",
         "digest": {"sha256": hashlib.sha256(data).hexdigest()}},
        {"name": "submission:alice", "digest": {"sha256": "d" * 64}}]
    predicate = statement["predicate"]
    assert predicate["verdict"] == "accepted" and predicate["reason_code"] == "accepted"
    assert predicate["bubblewrap"] == {"version": "0.12.0", "sha256": "ab" * 32,
                                       "minimum_version": "0.12.0"}
    assert predicate["harness_version"] == "0.1.0" and predicate["options"]["timeout"] == 60
    # securesystemslib's DSSE verifies it under the public key (PAE and all)
    envelope = Envelope.from_dict(json.loads(json.dumps(one)))
    verified = envelope.verify([signing.load_public_key(public).sslib], 1)
    assert list(verified) == [key.fingerprint]


def test_verify_names_an_orphan_envelope_and_a_verdict_missing_from_disk(
        tmp_path: Path) -> None:
    private, public = keypair(tmp_path)
    key = signing.load_signing_key(private)
    out = write_output(tmp_path / "out", [("alice", "two_plus_two"), ("alice", "double_def")])
    for name in ("two_plus_two", "double_def"):
        assert key.sign(out / "alice" / f"{name}.json", out) is None
    assert key.sign_run(out) is None
    assert _verify(out, public).exit_code == 0
    (out / "alice" / "double_def.json").unlink()
    shutil.copy(out / "alice" / "two_plus_two.intoto.json", out / "alice" / "x.intoto.json")
    result = _verify(out, public)
    assert result.exit_code == 1
    assert ("FAILED alice/double_def.json: run.intoto.json lists it, but it is missing or "
            "unreadable (No such file or directory): a pair of the signed run was dropped"
            in result.output)
    assert "FAILED alice/x.intoto.json: an envelope without its verdict" in result.output
    assert "alice/two_plus_two" not in result.output


def test_verify_json_report_lists_every_failure(tmp_path: Path) -> None:
    private, public = keypair(tmp_path)
    key = signing.load_signing_key(private)
    out = write_output(tmp_path / "out", [("alice", "two_plus_two"), ("bob", "two_plus_two")])
    assert key.sign(out / "alice" / "two_plus_two.json", out) is None
    assert key.sign_run(out) is None
    result = CliRunner().invoke(main, ["verify", str(out), "--key", str(public), "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["schema_version"] == 1 and report["envelopes_verified"] == 1
    assert report["failures"] == [{"path": "bob/two_plus_two.json",
                                   "problem": "has no envelope (bob/two_plus_two.intoto.json "
                                              "is missing)"}]


def test_a_garbled_envelope_is_named_and_the_others_still_checked(tmp_path: Path) -> None:
    private, public = keypair(tmp_path)
    key = signing.load_signing_key(private)
    out = write_output(tmp_path / "out", [("alice", "two_plus_two"), ("bob", "two_plus_two"),
                                          ("carol", "two_plus_two")])
    for sid in ("alice", "bob", "carol"):
        assert key.sign(out / sid / "two_plus_two.json", out) is None
    assert key.sign_run(out) is None
    (out / "alice" / "two_plus_two.intoto.json").write_text('{"payload": "!!", "x": 1}')
    carol = out / "carol" / "two_plus_two.intoto.json"
    carol.write_text(carol.read_text().replace("application/vnd.in-toto+json", "text/plain"))
    result = CliRunner().invoke(main, ["verify", str(out), "--key", str(public), "-v"],
                                catch_exceptions=False)
    assert result.exit_code == 1
    assert "FAILED alice/two_plus_two.intoto.json: not a DSSE envelope" in result.output
    assert "FAILED carol/two_plus_two.intoto.json: payload type 'text/plain'" in result.output
    assert "bob/two_plus_two" not in result.output.replace("checked bob/two_plus_two.json", "")
    assert "checked bob/two_plus_two.json" in result.output
