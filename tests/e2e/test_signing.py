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
from support import (
    RunEval,
    correct,
    keypair,
    make_submission,
    no_survivor,
)

from lean_eval.cli import main
from lean_eval.outputs import signing
from lean_eval.records import out_layout
from lean_eval.records.statement import Statement


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
    envelope_file = out_layout.envelope_path(path)
    envelope_file.write_text(json.dumps(
        forger.envelope("bad/two_plus_two.json", path.read_bytes())))
    result = _verify(out, public)
    assert result.exit_code == 1
    assert "FAILED bad/two_plus_two.intoto.json: no signature verifies" in result.output
    # negative control: the forged envelope is self-consistent, so only the signature check
    # (securesystemslib's DSSE verification under --key) stands between it and acceptance
    forged = Statement.model_validate_json(
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


def test_a_resumed_signed_run_keeps_only_what_its_key_signed(run_eval: RunEval,
                                                             outside: Path) -> None:
    """Verdicts of an unsigned run are scored again under --sign-key (never signed unscored),
    and the next signed run on the same --out keeps them."""
    private, public = keypair(outside)
    subs = _inputs(outside / "in")
    first = run_eval(*subs, out=outside / "out")
    assert first.code == 0, first.result.output
    assert not list((outside / "out").glob("*/*.intoto.json"))
    again = run_eval(*subs, out=outside / "out", extra=("--sign-key", str(private)))
    assert again.code == 0, again.result.output
    assert again.summary()["reused"] == 0
    assert len(again.summary()["not_reused"]) == 3
    assert ("not kept, scored again: bad/two_plus_two: its envelope: two_plus_two.intoto.json "
            "is missing") in again.result.output
    assert _verify(outside / "out", public).exit_code == 0
    third = run_eval(*subs, out=outside / "out", extra=("--sign-key", str(private)))
    assert third.code == 0, third.result.output
    assert third.summary()["reused"] == 3 and third.summary()["not_reused"] == []
    result = _verify(outside / "out", public)
    assert result.exit_code == 0, result.output
