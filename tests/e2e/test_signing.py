"""Signed verdicts: run-eval --sign-key writes DSSE/in-toto envelopes; verify checks them offline.

The end-to-end tests score real submissions (real bubblewrap, the stand-in toolchain) with a
correct submission that must stay ``accepted``, then tamper with copies of the output.
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
    RunEval,
    correct,
    keypair,
    make_submission,
    make_verdict,
    no_survivor,
    write_output,
)

from lean_eval.cli import main
from lean_eval.outputs import signing


def _verify(out: Path, pub: Path, *extra: str) -> Result:
    return CliRunner().invoke(main, ["verify", str(out), "--key", str(pub), *extra],
                              catch_exceptions=False)


def _copy(out: Path, name: str) -> Path:
    target = out.parent / name
    shutil.copytree(out, target)
    return target


def _inputs(base: Path) -> list[Path]:
    return [make_submission(base, "good", {
                "two_plus_two": {"Submission.lean": correct("two_plus_two")},
                "double_def": {"Submission.lean": correct("double_def")}}),
            make_submission(base, "bad", {
                "two_plus_two": {"Submission.lean": "theorem x : 1 = 1 := rfl\n"}})]


def _signed_run(run_eval: RunEval, outside: Path, key: Path) -> tuple[list[Path], Path]:
    subs = _inputs(outside / "in")
    run = run_eval(*subs, out=outside / "out", extra=("--sign-key", str(key)))
    assert run.code == 0, run.result.output
    assert "Traceback" not in run.result.output
    assert run.verdict("good", "two_plus_two")["verdict"] == "accepted"
    assert run.verdict("good", "double_def")["verdict"] == "accepted"
    assert run.verdict("bad", "two_plus_two")["verdict"] == "rejected"
    no_survivor(outside)
    return subs, run.out


def test_signed_run_verifies_and_every_tampering_is_named(run_eval: RunEval,
                                                          outside: Path) -> None:
    private, public = keypair(outside)
    subs, out = _signed_run(run_eval, outside, private)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["signing_key"] == signing.load_public_key(public).fingerprint
    for pair in summary["pairs"]:
        assert (out / pair["submission"] / f"{pair['problem']}.intoto.json").is_file()

    ok = _verify(out, public, "--submission", str(subs[0]), "--submission", str(subs[1]))
    assert ok.exit_code == 0, ok.output
    assert "verified" in ok.output and "3 verdict(s), 3 envelope(s)" in ok.output

    # a verdict's `verdict` field edited by hand
    edited = _copy(out, "edited")
    path = edited / "bad" / "two_plus_two.json"
    path.write_text(path.read_text().replace('"verdict": "rejected"', '"verdict": "accepted"'))
    result = _verify(edited, public)
    assert result.exit_code == 1
    lines = [x for x in result.output.splitlines() if x.startswith("FAILED")]
    assert all("bad/two_plus_two.json" in x for x in lines) and lines
    assert any("changed after signing" in x for x in lines)
    assert any("predicate field verdict: signed 'rejected'" in x for x in lines)
    assert any("summary.json says rejected" in x for x in lines)

    # an envelope deleted
    deleted = _copy(out, "deleted")
    (deleted / "good" / "double_def.intoto.json").unlink()
    result = _verify(deleted, public)
    assert result.exit_code == 1
    assert "FAILED good/double_def.json: has no envelope" in result.output

    # another key
    _, other = keypair(outside, "other")
    result = _verify(out, other)
    assert result.exit_code == 1
    for name in ("good/two_plus_two", "good/double_def", "bad/two_plus_two"):
        assert f"FAILED {name}.intoto.json: no signature verifies under --key" in result.output
    assert "FAILED summary.json: the run recorded signing key" in result.output

    # a submission changed after scoring
    (subs[0] / "two_plus_two" / "Submission.lean").write_text(
        correct("two_plus_two") + "\n-- changed\n")
    result = _verify(out, public, "--submission", str(subs[0]))
    assert result.exit_code == 1
    assert f"FAILED {subs[0]}: digest" in result.output
    assert "this is not the submission that was scored" in result.output


def test_a_re_signed_forgery_fails_under_the_real_key(run_eval: RunEval, outside: Path) -> None:
    """Someone who edits a verdict and signs it again with their own key is caught (and a
    verifier that skipped the signature check would not catch it: the control below)."""
    private, public = keypair(outside)
    _, out = _signed_run(run_eval, outside, private)
    forger_key, _ = keypair(outside, "forger")
    forger = signing.load_signing_key(forger_key)
    path = out / "bad" / "two_plus_two.json"
    path.write_text(path.read_text().replace('"verdict": "rejected"', '"verdict": "accepted"'))
    envelope_file = signing.envelope_path(path)
    old = json.loads(envelope_file.read_text())
    options = json.loads(base64.b64decode(old["payload"]))["predicate"]["options"]
    envelope_file.write_text(json.dumps(
        forger.envelope("bad/two_plus_two.json", path.read_bytes(), options)))
    result = _verify(out, public)
    assert result.exit_code == 1
    assert "FAILED bad/two_plus_two.intoto.json: no signature verifies" in result.output
    # negative control: the forged envelope is self-consistent, so only the signature check
    # (securesystemslib's DSSE verification under --key) stands between it and acceptance
    forged = signing.Statement.model_validate_json(
        base64.b64decode(json.loads(envelope_file.read_text())["payload"]))
    assert forged.predicate.verdict == "accepted"
    assert forged.subject[0].digest["sha256"] == hashlib.sha256(
        path.read_bytes()).hexdigest()


@pytest.mark.slow
def test_merge_of_signed_shards_keeps_envelopes_and_verifies(run_eval: RunEval,
                                                             outside: Path) -> None:
    private, public = keypair(outside)
    subs = _inputs(outside / "in")
    parts = [run_eval(*subs, out=outside / f"s{k}",
                      extra=("--shard", f"{k}/2", "--sign-key", str(private)))
             for k in (1, 2)]
    assert all(p.code == 0 for p in parts), [p.result.output for p in parts]
    merged = CliRunner().invoke(main, ["merge", str(parts[0].out), str(parts[1].out), "--out",
                                       str(outside / "merged")], catch_exceptions=False)
    assert merged.exit_code == 0, merged.output
    summary = json.loads((outside / "merged" / "summary.json").read_text())
    assert len(summary["pairs"]) == 3
    assert summary["signing_key"] == signing.load_public_key(public).fingerprint
    result = _verify(outside / "merged", public, "--submission", str(subs[0]))
    assert result.exit_code == 0, result.output
    assert "3 envelope(s)" in result.output
    # shards signed with different keys cannot be verified with one key: refused
    other, _ = keypair(outside, "other")
    again = run_eval(*subs, out=outside / "s2b",
                     extra=("--shard", "2/2", "--sign-key", str(other)))
    assert again.code == 0, again.result.output
    refused = CliRunner().invoke(main, ["merge", str(parts[0].out), str(again.out), "--out",
                                        str(outside / "merged2")], catch_exceptions=False)
    assert refused.exit_code == 2 and "signing key" in refused.output
    assert not (outside / "merged2").exists()


def test_a_resumed_run_signs_the_verdicts_it_reuses(run_eval: RunEval, outside: Path) -> None:
    private, public = keypair(outside)
    subs = _inputs(outside / "in")
    first = run_eval(*subs, out=outside / "out")
    assert first.code == 0, first.result.output
    assert not list((outside / "out").glob("*/*.intoto.json"))
    again = run_eval(*subs, out=outside / "out", extra=("--sign-key", str(private)))
    assert again.code == 0, again.result.output
    assert again.summary()["reused"] == 3
    result = _verify(outside / "out", public)
    assert result.exit_code == 0, result.output


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
    return make_verdict("alice", "two_plus_two").model_dump_json(indent=2).encode()


def test_envelope_is_dsse_over_an_in_toto_statement_and_deterministic(tmp_path: Path) -> None:
    private, public = keypair(tmp_path)
    key = signing.load_signing_key(private)
    data = _verdict_bytes()
    options = {"timeout": 60.0, "skip_probes": False}
    one = key.envelope("alice/two_plus_two.json", data, options)
    assert one == key.envelope("alice/two_plus_two.json", data, options)
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
        assert key.sign(out / "alice" / f"{name}.json", out, {}) is None
    assert _verify(out, public).exit_code == 0
    (out / "alice" / "double_def.json").unlink()
    shutil.copy(out / "alice" / "two_plus_two.intoto.json", out / "alice" / "x.intoto.json")
    result = _verify(out, public)
    assert result.exit_code == 1
    assert "FAILED alice/double_def.json: listed in summary.json but unreadable" in result.output
    assert "FAILED alice/x.intoto.json: an envelope without its verdict" in result.output
    assert "alice/two_plus_two" not in result.output


def test_verify_json_report_lists_every_failure(tmp_path: Path) -> None:
    private, public = keypair(tmp_path)
    key = signing.load_signing_key(private)
    out = write_output(tmp_path / "out", [("alice", "two_plus_two"), ("bob", "two_plus_two")])
    assert key.sign(out / "alice" / "two_plus_two.json", out, {}) is None
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
        assert key.sign(out / sid / "two_plus_two.json", out, {}) is None
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
