"""Sandbox and environment probes (lean_eval/probe.py, lean_eval/probes/), stand-in toolchain.

Every probe passes on the proper setup, and each has a negative control: the same probe run
against a deliberately weakened setup must report FAIL (design §8). Scratch space lies under
``outside`` (/srv), not under a path Lake masks, so a hidden marker is hidden by the wrapper's
masks rather than by Lake's own.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess  # noqa: TID251 - the scripts are run as the separate programs they are
import sys
from pathlib import Path

import pytest
from support import BWRAP_FLOOR, REPO, STANDIN

from lean_eval.benchmark.toolchain import resolve_toolchain
from lean_eval.probes import registry
from lean_eval.records.probe_result import ProbeResult
from lean_eval.sandbox import bubblewrap, environment, identity, masks, wrapper
from lean_eval.scoring.options import Tools

PIN = (REPO / "lean-toolchain").read_text(encoding="utf-8").strip()
SCRIPTS = {"sandbox_engaged": REPO / "scripts" / "sandbox_engaged_probe.py",
           **{n: REPO / "scripts" / "security_probes" / f"{n}_probe.py"
              for n in ("env_dump", "tool_path", "artifact_tamper", "comparator")}}
# Negative control: a "bwrap" that isolates nothing. It honours --setenv and --chdir, so every
# step still works and the submitted code really runs, and drops every other option up to --.
UNSANDBOXED_BWRAP = """#!/bin/sh
while [ $# -gt 0 ]; do
  case $1 in
    --) shift; break ;;
    --setenv) export "$2=$3"; shift 3 ;;
    --chdir) cd "$2" || exit 1; shift 2 ;;
    *) shift ;;
  esac
done
exec "$@"
"""
# Negative control: a "lake" that claims acceptance of everything.
ACCEPTING_LAKE = """#!/bin/sh
for line in "Resolving dependencies" "Building Challenge" "Building Solution" \\
    "Running nanoda kernel on solution" "nanoda kernel accepts the solution" \\
    "Running Lean default kernel on solution" "Lean default kernel accepts the solution" \\
    "Your solution is okay!"; do
  echo "$line"
done
exit 0
"""


@pytest.fixture
def tools(bwrap: str) -> Tools:
    """The stand-in toolchain and the real bubblewrap, resolved as the CLI resolves them."""
    del bwrap
    return Tools(toolchain=resolve_toolchain(STANDIN, {}, PIN),
                 bwrap=bubblewrap.resolve_bwrap(None, os.environ,
                                                allow_version=BWRAP_FLOOR))


def _ctx(tools: Tools, outside: Path, name: str = "scratch") -> registry.ProbeContext:
    scratch = outside / name
    scratch.mkdir(mode=0o755)
    return registry.ProbeContext(tools=tools, caller_env=dict(os.environ), scratch=scratch,
                              timeout=60)


def _executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def _unsandboxed(tools: Tools, outside: Path) -> Tools:
    fake = _executable(outside / "fake-bwrap" / "bwrap", UNSANDBOXED_BWRAP)
    return tools._replace(bwrap=bubblewrap.BwrapInfo(path=fake, version="0.12.0"))


def _run(ctx: registry.ProbeContext, name: str) -> ProbeResult:
    (result,) = registry.run_probes(ctx, [name])
    return result


def _failed(result: ProbeResult) -> set[str]:
    return {c.name for c in result.checks if not c.ok}


def _show(result: ProbeResult) -> str:
    return json.dumps(result.model_dump(mode="json"), indent=1)


# --- every probe passes on the proper setup ----------------------------------------------------


@pytest.mark.slow
def test_every_probe_passes_on_the_proper_setup(tools: Tools, outside: Path) -> None:
    results = registry.run_probes(_ctx(tools, outside))
    assert [r.name for r in results] == list(registry.PROBES) == [
        "sandbox_engaged", "env_dump", "tool_path", "artifact_tamper", "comparator"]
    for result in results:
        assert result.status == "pass", _show(result)
        assert result.checks and all(c.ok for c in result.checks)
        assert result.proves
    engaged = {c.name: c.evidence for c in results[0].checks}
    assert "outside Lake's masks" in engaged["host_markers_invisible"]  # /srv: the wrapper hid it


@pytest.mark.lean
def test_every_probe_passes_on_the_real_toolchain(outside: Path, bwrap: str) -> None:
    """The same scenario on the installed Lean release (skipped where it is not installed)."""
    from support import real_toolchain

    found = real_toolchain()
    if found is None:
        pytest.skip("real Lean release of lean-toolchain is not installed")
    tools = Tools(toolchain=resolve_toolchain(found, {}, PIN),
                  bwrap=bubblewrap.resolve_bwrap(None, os.environ,
                                                 allow_version=BWRAP_FLOOR))
    ctx = _ctx(tools, outside)._replace(timeout=900)
    for result in registry.run_probes(ctx):
        assert result.status == "pass", _show(result)


# --- negative controls: each probe reports FAIL against a weakened setup -----------------------


def test_sandbox_engaged_fails_without_a_sandbox(tools: Tools, outside: Path) -> None:
    """Run as the harness: a root harness's sandbox identity alone denies some of these
    writes (tests below), and this control is about the sandbox."""
    weak = _unsandboxed(tools, outside)._replace(user=identity.as_harness())
    result = _run(_ctx(weak, outside), "sandbox_engaged")
    assert result.status == "fail"
    expected = {"project_source_read_only", "host_files_read_only", "symlink_out_of_lake_denied",
                "home_and_tmp_writes_stay_in_sandbox", "host_markers_invisible",
                "host_loopback_unreachable", "own_namespaces"}
    host_routes = Path("/proc/net/route").read_text().splitlines()[1:]
    if any(line.split()[0] != "lo" for line in host_routes if line.strip()):
        expected.add("no_network_route")
    if subprocess.run(("/usr/bin/unshare", "-U", "/bin/true"), env={}, check=False,
                      capture_output=True).returncode == 0:  # the host lets this user make one
        expected.add("no_new_user_namespace")
    assert expected <= _failed(result), _show(result)
    assert "private_lake_writable" not in _failed(result)


def test_sandbox_engaged_fails_when_a_build_may_make_a_user_namespace(
        tools: Tools, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The wrapper without its --unshare-user --disable-userns: only that check fails."""
    monkeypatch.setattr(wrapper, "NO_NESTED_USERNS", ())
    result = _run(_ctx(tools, outside), "sandbox_engaged")
    assert _failed(result) == {"no_new_user_namespace"}, _show(result)


def test_sandbox_engaged_fails_when_a_build_keeps_its_capabilities(
        tools: Tools, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The wrapper without its --cap-drop ALL (issue 23 item 3): under a root harness the build
    holds every capability in its own user namespace, and exactly these two checks fail."""
    if os.geteuid() != 0:
        pytest.skip("an unprivileged harness's sandbox holds no capability with or without it")
    monkeypatch.setattr(wrapper, "NO_CAPABILITIES", ())
    # as the harness: a sandbox run by the (unprivileged) sandbox identity holds none either
    result = _run(_ctx(tools._replace(user=identity.as_harness()), outside), "sandbox_engaged")
    assert _failed(result) == {"no_capabilities", "no_new_mount_namespace"}, _show(result)


def _signing_key(outside: Path) -> Path:
    """A key as a maintainer keeps one: 0600 in a 0700 directory outside Lake's masks."""
    keys = outside / "keys"
    keys.mkdir(mode=0o700)
    key = keys / "sign.pem"
    key.write_text("-----BEGIN PRIVATE KEY-----\nnot-a-real-key-but-secret\n")
    key.chmod(0o600)
    return key


def test_sandbox_engaged_checks_the_signing_key_and_a_planted_secret(
        tools: Tools, outside: Path) -> None:
    key = _signing_key(outside)
    ctx = _ctx(tools, outside)._replace(secrets=(key,))
    result = _run(ctx, "sandbox_engaged")
    assert result.status == "pass", _show(result)
    names = {c.name for c in result.checks}
    assert "signing_key_unreadable" in names
    assert ("harness_secrets_unreadable" in names) == (os.geteuid() == 0)


def test_sandbox_engaged_fails_when_the_identity_is_not_switched(
        tools: Tools, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The switch reverted (Lake runs as root while the run believes it switched): the build
    reads the harness's planted secret, and only that check fails."""
    if os.geteuid() != 0:
        pytest.skip("only a root harness switches identity")
    monkeypatch.setattr(identity.SandboxUser, "switch_to", lambda self: None)
    result = _run(_ctx(tools, outside), "sandbox_engaged")
    assert _failed(result) == {"harness_secrets_unreadable"}, _show(result)


def test_sandbox_engaged_fails_when_the_signing_key_is_not_masked(
        tools: Tools, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key's mask dropped, Lake run as the harness (no identity to keep a 0600 file of
    the harness's unread): the build reads the key."""
    real = masks.run_masks

    def unmasked(**kw: object) -> object:
        return real(**{**kw, "secrets": ()})  # type: ignore[arg-type]

    monkeypatch.setattr(masks, "run_masks", unmasked)
    key = _signing_key(outside)
    weak = tools._replace(user=identity.as_harness())
    result = _run(_ctx(weak, outside)._replace(secrets=(key,)), "sandbox_engaged")
    assert _failed(result) == {"signing_key_unreadable"}, _show(result)


def test_env_dump_fails_when_the_environment_is_passed_through(
        tools: Tools, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = environment.lake_environment

    def leaky(caller: dict[str, str], **kw: object) -> dict[str, str]:
        return {**caller, **real(caller, **kw)}  # type: ignore[arg-type]

    monkeypatch.setattr(environment, "lake_environment", leaky)
    result = _run(_ctx(_unsandboxed(tools, outside), outside), "env_dump")
    assert result.status == "fail"
    assert {"no_decoy_value_visible", "only_allowlisted_names"} <= _failed(result), _show(result)


def test_env_dump_sees_a_leak_into_lake_even_when_the_sandbox_clears_it(
        tools: Tools, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """bwrap --clearenv keeps the decoys out of the sandbox, but Lake itself got them: the
    loader's complaint about the LD_PRELOAD decoy puts its value in the log."""
    real = environment.lake_environment
    monkeypatch.setattr(environment, "lake_environment",
                        lambda caller, **kw: {**caller, **real(caller, **kw)})
    result = _run(_ctx(tools, outside), "env_dump")
    assert _failed(result) == {"no_decoy_value_visible"}, _show(result)
    evidence = next(c.evidence for c in result.checks if c.name == "no_decoy_value_visible")
    assert "environment(s): none; in the log: ['LD_PRELOAD']" in evidence


def test_tool_path_fails_with_an_unfiltered_path(
        tools: Tools, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(environment, "filter_search_path",
                        lambda value, roots: tuple(value.split(os.pathsep)))
    result = _run(_ctx(tools, outside), "tool_path")
    assert result.status == "fail"
    assert {"no_planted_program_ran", "no_planted_marker_in_log"} <= _failed(result), \
        _show(result)


def test_artifact_tamper_fails_without_a_sandbox(tools: Tools, outside: Path) -> None:
    """No PID namespace: the heartbeat runs on into the export and kernels (the harness's
    reaper still kills it when Lake exits, so only the timestamps show it)."""
    result = _run(_ctx(_unsandboxed(tools, outside), outside), "artifact_tamper")
    assert result.status == "fail"
    assert "stopped_before_export" in _failed(result), _show(result)
    assert "heartbeat_started" not in _failed(result)


def test_comparator_fails_with_a_lake_that_accepts_everything(tools: Tools,
                                                              outside: Path) -> None:
    fake = outside / "accepting-toolchain"
    _executable(fake / "bin" / "lake", ACCEPTING_LAKE)
    _executable(fake / "bin" / "nanoda_bin", "#!/bin/sh\nexit 0\n")
    weak = tools._replace(toolchain=resolve_toolchain(fake, {}, PIN))
    result = _run(_ctx(weak, outside), "comparator")
    assert result.status == "fail"
    assert _failed(result) == {
        "statement_mismatch_rejected", "sorry_rejected", "user_axiom_rejected",
        "def_wrong_type_rejected", "missing_nanoda_never_accepted",
        "unusable_sandbox_never_accepted"}, _show(result)


# --- the runner and the payload forms ----------------------------------------------------------


def test_a_probe_that_raises_is_an_error_and_the_others_still_run(
        tools: Tools, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(ctx: registry.ProbeContext) -> ProbeResult:
        raise RuntimeError("deliberately broken probe")

    monkeypatch.setitem(registry.PROBES, "tool_path", broken)
    ctx = _ctx(tools, outside)
    results = registry.run_probes(ctx, ["tool_path", "no_such_probe", "env_dump"])
    assert [r.status for r in results] == ["error", "error", "pass"]
    assert "deliberately broken probe" in results[0].message
    assert "unknown probe" in results[1].message
    assert len(list(ctx.scratch.iterdir())) == 2  # each probe that ran had its own sub-scratch


# --- the scripts --------------------------------------------------------------------------------


def _script(name: str, *args: str, env: dict[str, str] | None = None,
            python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    return subprocess.run([python, str(SCRIPTS[name]), *args], capture_output=True, text=True,
                          env=env or dict(os.environ), cwd="/", timeout=120, check=False)


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_each_script_runs_on_its_own(name: str, outside: Path, bwrap: str) -> None:
    del bwrap
    done = _script(name, "--toolchain", str(STANDIN), "--allow-bwrap-version", BWRAP_FLOOR,
                   "--scratch", str(outside / "scratch"))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1].startswith(f"PASS {name}:")
    assert all(ln.startswith("PASS ") for ln in lines)


def test_script_json_output(outside: Path, bwrap: str) -> None:
    del bwrap
    done = _script("env_dump", "--toolchain", str(STANDIN), "--allow-bwrap-version",
                   BWRAP_FLOOR, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    data = ProbeResult.model_validate_json(done.stdout)
    assert data.name == "env_dump" and data.status == "pass"


# --- unprivileged --------------------------------------------------------------------------------

DEPENDENCIES = ("pydantic", "pydantic_core", "annotated_types", "typing_extensions",
                "typing_inspection", "click", "rich", "markdown_it", "mdurl", "pygments",
                "packaging")
NOBODY = 65534


def _copy_packages(into: Path, with_lean_eval: bool) -> None:
    """World-readable copies of lean_eval's dependencies (and of lean_eval itself)."""
    into.mkdir(parents=True)
    for name in (*DEPENDENCIES, *(("lean_eval",) if with_lean_eval else ())):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        source = Path(str(module.__file__))
        if source.name == "__init__.py":
            shutil.copytree(source.parent, into / name,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, into / source.name)
    _world_readable(into)


def _world_readable(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o444 | (0o111 if path.is_dir() else 0))


def _interpreter(prefix: list[str], site: Path,
                 candidates: tuple[str, ...] = (sys.executable, "/usr/bin/python3"),
                 check: str = ("import pydantic_core, subprocess, sys; "
                               "subprocess.run([sys.executable, '-c', ''], check=True)")
                 ) -> str | None:
    """The first of ``candidates`` that ``prefix`` (e.g. setpriv) can run, that can start
    itself again (the harness's reaper is ``sys.executable``) and that loads the packages
    copied to ``site``."""
    for candidate in candidates:
        if not os.path.isfile(candidate):
            continue
        done = subprocess.run([*prefix, candidate, "-c", check],
                              env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site)},
                              capture_output=True, cwd="/", check=False)
        if done.returncode == 0:
            return candidate
    return None


def test_sandbox_probe_passes_as_an_unprivileged_user(outside: Path, bwrap: str) -> None:
    """As root, drop to nobody (setpriv) with world-readable copies of everything needed;
    otherwise (CI runners) the suite already runs unprivileged: run the script as we are."""
    home = outside / "unprivileged"
    home.mkdir(mode=0o755)
    site = home / "site"
    _copy_packages(site, with_lean_eval=True)
    toolchain = home / "toolchain"
    shutil.copytree(STANDIN, toolchain, ignore=shutil.ignore_patterns("__pycache__"))
    script = home / "sandbox_engaged_probe.py"
    shutil.copy2(SCRIPTS["sandbox_engaged"], script)
    _world_readable(home)
    scratch = home / "scratch"
    scratch.mkdir(mode=0o755)
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            if os.environ.get("CI"):
                pytest.fail("setpriv is needed to test the probe as an unprivileged user")
            pytest.skip("UNPRIVILEGED PROBE TEST SKIPPED: setpriv is missing")
        prefix = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        os.chown(scratch, NOBODY, NOBODY)
    python = _interpreter(prefix, site)
    if python is None:
        if os.environ.get("CI"):
            pytest.fail("no interpreter the unprivileged user can run loads the copied packages")
        pytest.skip("UNPRIVILEGED PROBE TEST SKIPPED: neither this interpreter nor "
                    "/usr/bin/python3 can run the copied packages as an unprivileged user")
    env = {"PATH": f"{Path(bwrap).parent}:/usr/bin:/bin", "PYTHONPATH": str(site),
           "HOME": "/nonexistent" if prefix else os.environ.get("HOME", "/nonexistent")}
    done = subprocess.run([*prefix, python, str(script), "--toolchain", str(toolchain),
                           "--allow-bwrap-version", BWRAP_FLOOR, "--scratch", str(scratch)],
                          env=env, capture_output=True, text=True, cwd="/", timeout=120,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("PASS sandbox_engaged:")
    kept = [p for p in scratch.iterdir() if p.name.startswith("probe-")]
    assert kept and all(p.stat().st_uid == (NOBODY if prefix else os.geteuid()) for p in kept)


def test_script_imports_the_checkout_when_lean_eval_is_not_installed(outside: Path,
                                                                     bwrap: str) -> None:
    """Run by an interpreter that has lean_eval's dependencies but not lean_eval itself."""
    del bwrap
    site = outside / "site"
    _copy_packages(site, with_lean_eval=False)
    python = _interpreter([], site, ("/usr/bin/python3",),
                          "import importlib.util as u, pydantic_core; "
                          "assert u.find_spec('lean_eval') is None")
    if python is None:
        pytest.skip("needs /usr/bin/python3 that loads the copied packages and has no lean_eval")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(site)}
    done = _script("env_dump", "--toolchain", str(STANDIN), "--allow-bwrap-version",
                   BWRAP_FLOOR, env=env, python=python)
    assert done.returncode == 0, done.stdout + done.stderr
