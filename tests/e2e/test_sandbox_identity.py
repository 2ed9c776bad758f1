"""No secret of the harness is readable from a build (issue 30 item 1, SECURITY.md "The sandbox
identity").

Each attack is a whole ``run-eval`` started as a child process under real bubblewrap, at
``-j 2``, with a correct submission beside the attacker that must stay ``accepted``. The
attacker's build knows where the secrets are and also searches for them, printing whatever it
reads into its own log, which run-eval writes into ``--out``. Negative control (run when this
was written): with the reaper's identity switch and the key's mask removed, the key and both
canaries appear in the attacker's log.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess  # noqa: TID251 - the CLI runs as the separate program it is
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from support import (
    BWRAP_FLOOR,
    REPO,
    STANDIN,
    UNPRIVILEGED,
    correct,
    good,
    make_submission,
    no_survivor,
    sh_payload,
    unprivileged_python,
    with_lines,
)
from support import PROBLEM as P

from lean_eval.probes.payloads import python_command

# Reads every path it is given, then walks ``walk`` reading every file: what it read is printed.
THIEF = r'''
import json, os, sys
spec = json.loads(sys.argv[2])
for path in spec["paths"]:
    try:
        with open(path, errors="replace") as f:
            print("READ", path, f.read())
    except OSError as e:
        print("DENIED", path, e.strerror)
for top in spec["walk"]:
    for root, dirs, files in os.walk(top):
        for name in files:
            path = os.path.join(root, name)
            try:
                with open(path, errors="replace") as f:
                    data = f.read(1 << 16)
            except OSError:
                continue
            if "PRIVATE KEY" in data or "canary" in data:
                print("FOUND", path, data)
print("SEARCH-DONE")
'''


def _key(path: Path) -> bytes:
    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption())
    path.write_bytes(pem)
    path.chmod(0o600)
    return pem


def _secrets(base: Path) -> tuple[Path, bytes, dict[Path, str]]:
    """A signing key (0600 in a 0700 directory) and two canaries (0600 and 0644) in another
    0700 directory: as a maintainer keeps them, outside Lake's masked roots."""
    keys = base / "keys"
    keys.mkdir(mode=0o700)
    key = keys / "sign.pem"
    pem = _key(key)
    vault = base / "vault"
    vault.mkdir(mode=0o700)
    canaries = {vault / "token": f"canary-{secrets.token_hex(12)}",
                vault / "shared": f"canary-{secrets.token_hex(12)}"}
    for (path, text), mode in zip(canaries.items(), (0o600, 0o644), strict=True):
        path.write_text(text + "\n")
        path.chmod(mode)
    return key, pem, canaries


def _batch(base: Path, paths: list[Path]) -> Path:
    subs = base / "subs"
    good(subs)
    spec = {"paths": [str(p) for p in paths], "walk": [str(base)]}
    make_submission(subs, "thief", {P: {"Submission.lean": with_lines(
        P, sh_payload(python_command(THIEF, spec)))}})
    return subs


def _leaks(out: Path, needles: list[bytes]) -> list[str]:
    """Every file under ``out`` holding one of ``needles``."""
    return [f"{p}: {n[:40]!r}" for p in sorted(out.rglob("*")) if p.is_file()
            for n in needles if n in p.read_bytes()]


def _argv(subs: Path, out: Path, bench: Path, key: Path, *extra: str) -> list[str]:
    return ["-m", "lean_eval", "run-eval", str(subs / "good"), str(subs / "thief"),
            "--out", str(out), "--benchmark", str(bench), "--toolchain", str(STANDIN),
            "--timeout", "60", "-q", "--skip-probes", "-j", "2", "--sign-key", str(key),
            "--allow-bwrap-version", BWRAP_FLOOR, *extra]


def _judge(out: Path, output: str, needles: list[bytes]) -> dict[str, object]:
    assert "Traceback" not in output, output
    assert (out / "summary.json").is_file(), output
    summary = json.loads((out / "summary.json").read_text())
    assert json.loads((out / "good" / f"{P}.json").read_text())["verdict"] == "accepted", output
    log = (out / "thief" / f"{P}.log").read_text()
    assert "SEARCH-DONE" in log, log  # the attack ran to its end
    assert _leaks(out, needles) == [], log
    return summary


def test_a_root_harness_keeps_its_key_and_files_from_every_build(
        bench_copy: Path, outside: Path, bwrap: str) -> None:
    del bwrap
    if os.geteuid() != 0:
        pytest.skip("the identity switch is a root harness's")
    key, pem, canaries = _secrets(outside)
    run = outside / "run"  # inputs and outputs away from the secrets: no default mask hides them
    subs = _batch(run, [key, *canaries])
    out = run / "out"
    done = subprocess.run([sys.executable, *_argv(subs, out, bench_copy, key)],
                          capture_output=True, text=True, cwd=REPO, timeout=240, check=False)
    needles = [pem.splitlines()[1], *(t.encode() for t in canaries.values())]
    _judge(out, done.stdout + done.stderr, needles)
    verdict = json.loads((out / "thief" / f"{P}.json").read_text())
    assert verdict["identity"]["sandbox_identity"] == {
        "uid": UNPRIVILEGED, "gid": UNPRIVILEGED, "name": "nobody",
        "group": verdict["identity"]["sandbox_identity"]["group"], "switched": True}
    log = (out / "thief" / f"{P}.log").read_text()
    assert log.count("DENIED") == 3, log
    no_survivor(outside)


def test_an_unprivileged_harness_masks_its_signing_key(
        bench_copy: Path, outside: Path, bwrap: str) -> None:
    """The harness as uid 65534: no identity to switch to, its sandbox runs as itself and
    could read its own 0600 key but for the key's mask."""
    del bwrap
    setup = unprivileged_python(outside)
    if isinstance(setup, str):
        pytest.skip(setup)
    prefix, env = setup
    run = outside / "run"
    run.mkdir()
    keys = outside / "keys"
    keys.mkdir(mode=0o700)
    key = keys / "sign.pem"
    pem = _key(key)
    subs = _batch(run, [key])
    out = run / "out"
    if os.geteuid() == 0:
        for path in (outside, *outside.rglob("*")):
            os.chown(path, UNPRIVILEGED, UNPRIVILEGED, follow_symlinks=False)
    done = subprocess.run([*prefix, *_argv(subs, out, bench_copy, key)], capture_output=True,
                          text=True, env=env, cwd=outside, timeout=240, check=False)
    _judge(out, done.stdout + done.stderr, [pem.splitlines()[1]])
    verdict = json.loads((out / "thief" / f"{P}.json").read_text())
    assert verdict["identity"]["sandbox_identity"]["switched"] is False
    assert verdict["identity"]["sandbox_identity"]["uid"] == UNPRIVILEGED
    assert str(key) in verdict["mounts"]["file_masks"]
    no_survivor(outside)


def test_a_toolchain_the_identity_cannot_reach_is_a_setup_failure(
        bench_copy: Path, outside: Path, bwrap: str) -> None:
    """A toolchain under a 0700 directory (as under /root/.elan): exit 2 before anything runs,
    naming the path, the directory that blocks it and the fix."""
    del bwrap
    if os.geteuid() != 0:
        pytest.skip("the identity switch is a root harness's")
    home = outside / "home"
    home.mkdir(mode=0o700)
    toolchain = home / "toolchain"
    shutil.copytree(STANDIN, toolchain, symlinks=True)
    subs = outside / "subs"
    good(subs)
    make_submission(subs, "other", {P: {"Submission.lean": correct(P)}})
    out = outside / "out"
    done = subprocess.run(
        [sys.executable, "-m", "lean_eval", "run-eval", str(subs / "good"), "--out", str(out),
         "--benchmark", str(bench_copy), "--toolchain", str(toolchain), "-q", "--skip-probes",
         "--allow-bwrap-version", BWRAP_FLOOR], capture_output=True, text=True, cwd=REPO,
        timeout=240, check=False)
    assert done.returncode == 2, done.stderr
    message = " ".join(done.stderr.split())
    assert f"the toolchain {toolchain} is not reachable by the sandbox identity nobody" in \
        message, message
    assert f"{home} (mode 0700, owner root) blocks it" in message, message
    assert f"chmod o+x {home}" in message and "--sandbox-user" in message, message
    assert not out.exists()


def test_a_bubblewrap_prepare_put_under_roots_home_names_how_to_install_it_for_everyone(
        bench_copy: Path, outside: Path, bwrap: str) -> None:
    """``lean-eval prepare`` as root installs bubblewrap under $HOME/.local/share, which the
    identity cannot enter: run-eval says exactly what to do instead."""
    if os.geteuid() != 0:
        pytest.skip("the identity switch is a root harness's")
    home = outside / "home"
    home.mkdir(mode=0o700)
    prepared = home / ".local" / "share" / "lean-eval" / "bwrap" / "bin" / "bwrap"
    prepared.parent.mkdir(parents=True)
    shutil.copy2(shutil.which("bwrap") or bwrap, prepared)
    subs = outside / "subs"
    good(subs)
    env = {**os.environ, "HOME": str(home)}
    env.pop("LEAN_EVAL_BWRAP", None)
    env.pop("XDG_DATA_HOME", None)
    done = subprocess.run(
        [sys.executable, "-m", "lean_eval", "run-eval", str(subs / "good"), "--out",
         str(outside / "out"), "--benchmark", str(bench_copy), "--toolchain", str(STANDIN),
         "-q", "--skip-probes", "--allow-bwrap-version", BWRAP_FLOOR], capture_output=True,
        text=True, cwd=REPO, env=env, timeout=240, check=False)
    assert done.returncode == 2, done.stderr
    message = " ".join(done.stderr.split())
    assert f"bubblewrap {prepared} is not reachable by the sandbox identity nobody" in message
    assert "XDG_DATA_HOME=/usr/local/share lean-eval prepare" in message, message


def test_another_sandbox_user_is_used_and_recorded(bench_copy: Path, outside: Path,
                                                   bwrap: str) -> None:
    """``--sandbox-user UID:GID`` (numbers no account has): the pair is scored as them, and
    the verdict says so; the build's own ``id`` agrees."""
    del bwrap
    if os.geteuid() != 0:
        pytest.skip("the identity switch is a root harness's")
    subs = outside / "subs"
    make_submission(subs, "good", {P: {"Submission.lean": with_lines(
        P, sh_payload("echo ID-$(id -u):$(id -g):$(id -G)"))}})
    out = outside / "out"
    done = subprocess.run(
        [sys.executable, "-m", "lean_eval", "run-eval", str(subs / "good"), "--out", str(out),
         "--benchmark", str(bench_copy), "--toolchain", str(STANDIN), "-q", "--skip-probes",
         "--sandbox-user", "4242:4343", "--allow-bwrap-version", BWRAP_FLOOR],
        capture_output=True, text=True, cwd=REPO, timeout=240, check=False)
    assert done.returncode == 0, done.stderr
    verdict = json.loads((out / "good" / f"{P}.json").read_text())
    assert verdict["verdict"] == "accepted"
    assert verdict["identity"]["sandbox_identity"] == {
        "uid": 4242, "gid": 4343, "name": "4242", "group": "4343", "switched": True}
    assert "ID-4242:4343:4343" in (out / "good" / f"{P}.log").read_text()
