"""design §6 invariants, each with a negative control that breaks the protection on purpose.

Inputs, outputs and work directories live outside /tmp, /home, /root, /run and /var: Lake masks
those by itself, so a leak test placed inside them would pass whatever the harness did.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pytest
from support import (
    STANDIN,
    RunEval,
    batch_ok,
    correct,
    make_submission,
    rehash_trusted,
    sh_payload,
    standin_only,
    with_lines,
)

from lean_eval.records.verdict import Mounts
from lean_eval.sandbox import environment, identity, masks, wrapper


def _pair_dir(work: Path, sub: str, problem: str) -> Path:
    """A kept pair's directory under ``--work-dir`` (inside this run's scoring root)."""
    found = [work / sub / problem, *sorted(work.glob(f"*/{sub}/{problem}"))]
    return next(p for p in found if p.exists())


def _trace(work: Path, sub: str, problem: str) -> dict[str, object]:
    ws = _pair_dir(work, sub, problem) / "workspace"
    lines = (ws / ".lake" / "standin-trace.jsonl").read_text()
    data: dict[str, object] = json.loads(lines.splitlines()[-1])
    return data


# --- 6.7: no other submission's source or verdict, no sibling workspace ------------------------


def _leak_run(run_eval: RunEval, outside: Path) -> tuple[str, str]:
    subs, work = outside / "subs", outside / "work"
    secret = f"SECRET-ALICE-{outside.name}"
    make_submission(subs, "alice", {"two_plus_two": {
        "Submission.lean": with_lines("two_plus_two", f"-- {secret}")}})
    targets = [subs / "alice" / "two_plus_two" / "Submission.lean",
               run_eval.base / "out" / "alice" / "two_plus_two.json",
               work / "*" / "alice" / "two_plus_two" / "workspace" / "Submission.lean"]
    io = [sh_payload(f"cat {t} || echo DENIED-{i}") for i, t in enumerate(targets)]
    make_submission(subs, "mallory", {"two_plus_two": {
        "Submission.lean": with_lines("two_plus_two", *io)}})
    run = run_eval(subs / "alice", subs / "mallory",
                   extra=("--work-dir", str(work), "--keep-work", "--jobs", "1"))
    assert run.verdict("alice", "two_plus_two")["verdict"] == "accepted"
    return run.log("mallory", "two_plus_two"), secret


def test_a_build_cannot_read_other_submissions_or_verdicts(run_eval: RunEval,
                                                           outside: Path) -> None:
    log, secret = _leak_run(run_eval, outside)
    assert secret not in log
    assert '"schema_version"' not in log
    assert all(f"DENIED-{i}" in log for i in range(3)), log


def test_negative_control_without_wrapper_masks_the_leak_is_seen(
        run_eval: RunEval, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(masks, "run_masks", lambda **k: Mounts())
    # As the harness: a root harness's sandbox identity cannot list or enter what the masks
    # also hide (SECURITY.md "The sandbox identity"), a second layer this control is not about.
    monkeypatch.setattr(identity, "resolve", lambda *_, **__: identity.as_harness())
    log, secret = _leak_run(run_eval, outside)
    assert log.count(secret) >= 2  # the input and the sibling workspace
    assert '"schema_version"' in log  # alice's verdict


# --- no user namespace inside a sandbox (sandbox.NO_NESTED_USERNS) -----------------------------

# With a user namespace of its own a build could mount a tmpfs where the memory watchdog does not
# look (or detach it while holding a file open), and reach the kernel's namespace code.
NESTED = ("/usr/bin/unshare -Urm /bin/sh -c 'mount -t tmpfs t /mnt && echo NESTED-MOUNT-MADE' "
          "|| echo NESTED-USERNS-REFUSED")


def _nested_run(run_eval: RunEval, outside: Path) -> str:
    """A build that tries a user namespace of its own and a tmpfs in it, beside a correct one."""
    assert os.path.exists("/usr/bin/unshare"), "util-linux's unshare is part of every Debian"
    subs = outside / "subs"
    make_submission(subs, "good", {"two_plus_two": {"Submission.lean": correct("two_plus_two")}})
    make_submission(subs, "nester", {"two_plus_two": {
        "Submission.lean": with_lines("two_plus_two", sh_payload(NESTED))}})
    run = run_eval(subs / "good", subs / "nester")
    assert run.code == 0, run.result.output
    batch_ok(run, outside)  # good accepted, summary.json written, nothing of the run survives
    return run.log("nester", "two_plus_two")


def test_nothing_in_a_sandbox_can_make_a_user_namespace(run_eval: RunEval,
                                                        outside: Path) -> None:
    log = _nested_run(run_eval, outside)
    assert "NESTED-USERNS-REFUSED" in log and "NESTED-MOUNT-MADE" not in log, log


def test_negative_control_without_the_lock_a_build_mounts_a_tmpfs_of_its_own(
        run_eval: RunEval, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both layers off: with NO_CAPABILITIES still in place, a root harness's build cannot
    even write its new namespace's uid_map (the lock alone: the sandbox_engaged control)."""
    monkeypatch.setattr(wrapper, "NO_NESTED_USERNS", ())
    monkeypatch.setattr(wrapper, "NO_CAPABILITIES", ())
    assert "NESTED-MOUNT-MADE" in _nested_run(run_eval, outside)


# --- 6.8: planted git / env / bwrap are never executed ----------------------------------------


def _planted(directory: Path, evidence: Path, tools: Sequence[str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for tool in tools:
        script = directory / tool
        script.write_text(f"#!/bin/sh\necho PLANTED-{tool}-RAN\necho {tool} >> {evidence}\n"
                          f"exec /usr/bin/{tool} \"$@\"\n")
        script.chmod(0o755)


def _planted_run(run_eval: RunEval, outside: Path) -> tuple[Path, str, str]:
    """git, env and bwrap planted in a cache directory and, by the build, in .lake/build/bin."""
    work, evidence = outside / "work", outside / "evidence"
    cache = work / "cache" / "bin"
    _planted(cache, evidence, ("git", "env", "bwrap"))
    link = outside / "innocent-bin"
    link.symlink_to(cache)
    build_bin = work / "p" / "two_plus_two" / "workspace" / ".lake" / "build" / "bin"
    build_link = outside / "build-bin-link"
    build_link.symlink_to(build_bin)
    plant = " && ".join([
        "mkdir -p .lake/build/bin",
        *(f"printf '#!/bin/sh\\necho PLANTED-{t}-RAN\\necho {t} >> {evidence}\\n"
          f"exec /usr/bin/{t} \"$@\"\\n' > .lake/build/bin/{t} && chmod +x .lake/build/bin/{t}"
          for t in ("env", "bwrap", "git")),
    ])
    make_submission(outside / "subs", "p", {"two_plus_two": {
        "Submission.lean": with_lines("two_plus_two", sh_payload(plant))}})
    path = ":".join([str(cache), str(link), str(build_bin), ".lake/build/bin", str(build_link),
                     "/usr/local/bin", "/usr/bin", "/bin"])
    run = run_eval(outside / "subs" / "p", extra=("--work-dir", str(work), "--keep-work"),
                   env={"PATH": path, "LEAN_EVAL_BWRAP": ""})
    log = run.log("p", "two_plus_two")
    ran = evidence.read_text() if evidence.exists() else ""
    return work, run.verdict("p", "two_plus_two")["verdict"], ran + log


def test_planted_tools_are_never_executed(run_eval: RunEval, outside: Path) -> None:
    work, verdict, seen = _planted_run(run_eval, outside)
    assert verdict == "accepted", seen
    assert "PLANTED" not in seen and "env" not in seen.split(), seen
    if run_eval.is_lean:
        return
    trace = _trace(work, "p", "two_plus_two")
    resolved = trace["resolved"]
    assert isinstance(resolved, dict)
    assert resolved["env"] == "/usr/bin/env" and resolved["git"] == "/usr/bin/git"
    wrapper = _pair_dir(work, "p", "two_plus_two") / "state" / "bwrap-wrapper"
    assert resolved["sandbox"] == str(wrapper)


def test_negative_control_unfiltered_path_executes_planted_tools(
        run_eval: RunEval, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    standin_only(run_eval, "whether real Lake runs git outside the sandbox is not modelled")
    monkeypatch.setattr(environment, "filter_search_path",
                        lambda value, roots: tuple(value.split(":")))
    _, _, seen = _planted_run(run_eval, outside)
    assert "PLANTED-env-RAN" in seen or "env" in seen.split()
    # Lake chose the planted git; it runs, or fails only because the run's masks hide it.
    assert "PLANTED-git-RAN" in seen or "work/cache/bin/git" in seen
    assert "bwrap" in seen.split()  # the harness itself chose the planted bwrap


# --- 6.7: no secret from the caller's environment ---------------------------------------------

DECOYS = {"LEAN_EVAL_DECOY_TOKEN": "decoy-token-5f1e", "AWS_SECRET_ACCESS_KEY": "decoy-aws-77c2",
          "SSH_AUTH_SOCK": "/decoy/agent.sock", "LD_PRELOAD": "/decoy/preload.so"}


def _env_run(run_eval: RunEval, outside: Path) -> tuple[dict[str, str], str]:
    work = outside / "work"
    sub = make_submission(outside / "subs", "e", {"two_plus_two": {
        "Submission.lean": with_lines("two_plus_two", sh_payload("env"))}})
    run = run_eval(sub, extra=("--work-dir", str(work), "--keep-work"), env=DECOYS)
    if run_eval.is_lean:
        return {}, run.log("e", "two_plus_two")
    lake_env = _trace(work, "e", "two_plus_two")["env"]
    assert isinstance(lake_env, dict)
    return lake_env, run.log("e", "two_plus_two")


def test_caller_secrets_reach_neither_lake_nor_the_sandbox(run_eval: RunEval,
                                                           outside: Path) -> None:
    lake_env, log = _env_run(run_eval, outside)
    assert set(lake_env) <= set(environment.ENV_ALLOWLIST)
    assert run_eval.is_lean or {"PATH", "HOME", "TMPDIR", "COMPARATOR_BWRAP"} <= set(lake_env)
    for value in DECOYS.values():
        assert value not in json.dumps(lake_env) and value not in log
    assert "LEAN_ABORT_ON_PANIC=1" in log  # the sandbox's env was really printed


def test_negative_control_passed_through_environment_is_seen(
        run_eval: RunEval, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = environment.lake_environment

    def leaky(caller: dict[str, str], **kw: object) -> dict[str, str]:
        return {**caller, **real(caller, **kw)}  # type: ignore[arg-type]

    standin_only(run_eval, "reads Lake's environment from the stand-in's trace")
    monkeypatch.setattr(environment, "lake_environment", leaky)
    lake_env, _ = _env_run(run_eval, outside)
    assert lake_env["LEAN_EVAL_DECOY_TOKEN"] == DECOYS["LEAN_EVAL_DECOY_TOKEN"]


# --- 6.1: the workspace is the trusted revision plus the overlay ------------------------------


def _differences(workspace: Path, trusted: Path, overlay: set[str]) -> list[str]:
    found = []
    for path in sorted(workspace.rglob("*")):
        rel = path.relative_to(workspace).as_posix()
        if rel == ".lake" or rel.startswith(".lake/") or path.is_dir() or rel in overlay:
            continue
        source = trusted / rel
        if not source.is_file() or source.read_bytes() != path.read_bytes():
            found.append(rel)
    return found


def test_scoring_workspace_is_trusted_bytes_plus_overlay(
        run_eval: RunEval, outside: Path, bench_copy: Path) -> None:
    work = outside / "work"
    helper = "namespace Submission\ntheorem helper_fact : True := trivial\nend Submission\n"
    sub = make_submission(outside / "subs", "w", {"two_plus_two": {
        "Submission.lean": correct("two_plus_two"), "Submission/Extra/Helper.lean": helper,
        "config.json": "{}", "Challenge.lean": "theorem two_plus_two : True := trivial",
        "lakefile.toml": "evil = true", "Submission/notes.txt": "ignored"}})
    run = run_eval(sub, extra=("--work-dir", str(work), "--keep-work"))
    v = run.verdict("w", "two_plus_two")
    assert v["verdict"] == "accepted"
    assert sorted(v["submission_files"]) == ["Submission.lean", "Submission/Extra/Helper.lean"]
    ws = _pair_dir(work, "w", "two_plus_two") / "workspace"
    trusted = bench_copy / "workspaces" / "two_plus_two"
    overlay = {"Submission.lean", "Submission/Extra/Helper.lean"}
    assert _differences(ws, trusted, overlay) == []
    assert (ws / "Submission" / "Extra" / "Helper.lean").read_text() == helper
    assert not (ws / "Submission" / "notes.txt").exists()
    # Negative control: the same check sees a file the trusted revision does not have.
    (ws / "config.json").write_text("{}")
    assert _differences(ws, trusted, overlay) == ["config.json"]


# --- 6.4: NanoDa is forced whatever the trusted config says ------------------------------------


@pytest.mark.parametrize("setting", [
    '"enable_nanoda": true',
    '"enable_nanoda": false, "external_kernels": {"nanoda": ["/bin/true"]}',
], ids=["enable_nanoda", "other-nanoda-argv"])
def test_nanoda_is_forced(outside: Path, bench_copy: Path, bwrap: str, setting: str) -> None:
    """Reads what Lake was given from the stand-in's trace (the real Lake keeps no trace)."""
    import shutil


    bench = outside / "bench"
    shutil.copytree(bench_copy, bench)
    config = bench / "workspaces" / "two_plus_two" / "config.json"
    config.write_text(config.read_text().replace('"enable_nanoda": false', setting))
    rehash_trusted(bench, "two_plus_two", "config.json")
    work = outside / "work"
    sub = make_submission(outside / "subs", "n", {"two_plus_two": {
        "Submission.lean": correct("two_plus_two")}})
    run = RunEval(bench, outside)(sub, extra=("--work-dir", str(work), "--keep-work"))
    assert run.verdict("n", "two_plus_two")["verdict"] == "accepted", run.result.output
    trace = _trace(work, "n", "two_plus_two")
    given = json.loads(str(trace["config_text"]))
    assert "enable_nanoda" not in given
    assert given["external_kernels"] == {"nanoda": [str(STANDIN.resolve() / "bin" / "nanoda_bin")]}
    argv = trace["argv"]
    assert isinstance(argv, list) and "--paranoid" not in argv
    assert "--inadvisably-no-sandbox" not in argv
    assert os.path.isabs(argv[0])


# --- resource limits reach everything Lake starts, the sandbox included -------------------------


def test_no_core_files_and_no_file_past_the_write_limit(run_eval: RunEval, outside: Path) -> None:
    work = outside / "work"
    limit = 1 << 20
    sub = make_submission(outside / "subs", "big", {"two_plus_two": {
        "Submission.lean": with_lines(
            "two_plus_two",
            sh_payload("echo CORE=$(ulimit -c)"),
            sh_payload(f"head -c {3 * limit} /dev/zero > .lake/huge; echo WROTE=$?"))}})
    run = run_eval(sub, extra=("--work-dir", str(work), "--keep-work",
                               "--max-written-file-bytes", str(limit)))
    log = run.log("big", "two_plus_two")
    assert "CORE=0" in log
    huge = _pair_dir(work, "big", "two_plus_two") / "workspace" / ".lake" / "huge"
    assert huge.stat().st_size <= limit
    assert "WROTE=0" not in log  # the writer was stopped (SIGXFSZ), not allowed to finish
