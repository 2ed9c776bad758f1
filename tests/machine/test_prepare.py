"""`lean-eval prepare`, offline: fixture archives, a fake elan and a fake bwrap installer.

Nothing here touches the network or the real home directory: every step installs into a
temporary prefix, and the archives are built from tests/fixtures/prepare/.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from support import REPO

from lean_eval.cli import main
from lean_eval.errors import PrepareError, PrerequisitesError, StepFailedError
from lean_eval.machine import download, prepare
from lean_eval.sandbox import bubblewrap

FIXTURES = REPO / "tests" / "fixtures" / "prepare"
TOOLCHAIN = (REPO / "lean-toolchain").read_text().strip()


def elan_archive(path: Path) -> download.Archive:
    """A tar.gz holding the fake elan as `elan-init`, and the pin that matches it."""
    data = (FIXTURES / "fake-elan").read_bytes()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        member = tarfile.TarInfo("elan-init")
        member.size, member.mode = len(data), 0o755
        tar.addfile(member, io.BytesIO(data))
    path.write_bytes(buffer.getvalue())
    return download.Archive(name=path.name, url="https://example.invalid/never-fetched",
                           sha256=hashlib.sha256(buffer.getvalue()).hexdigest())


class Machine:
    """A fresh 'machine' under ``base``: empty home, no elan, no bwrap on PATH."""

    def __init__(self, base: Path, requires: str = "") -> None:
        self.base = base
        self.home = base / "home"
        self.elan_home = base / "elan"
        self.data = base / "data"
        self.scratch = base / "scratch"
        self.offline = base / "offline"
        self.bench = base / "bench"
        for path in (self.home, self.offline, self.bench, base / "emptybin"):
            path.mkdir(parents=True)
        (self.bench / "lean-toolchain").write_text(TOOLCHAIN + "\n")
        (self.bench / "lakefile.toml").write_text('name = "bench"\n' + requires)
        (self.bench / "lake-manifest.json").write_text('{"version": "1.1.0", "packages": []}\n')
        self.archive = elan_archive(self.offline / prepare.ELAN.name)
        (self.offline / prepare.BWRAP_TARBALL).write_bytes(b"fake bubblewrap tarball\n")
        self.env = {"HOME": str(self.home), "ELAN_HOME": str(self.elan_home),
                    "XDG_DATA_HOME": str(self.data), "PATH": str(base / "emptybin")}

    def settings(self, **changes: object) -> prepare.Settings:
        settings = prepare.Settings(
            benchmark=self.bench, env=self.env, offline=self.offline,
            elan_archive=self.archive, bwrap_installer=FIXTURES / "fake_install_bwrap.sh",
            scratch=self.scratch)
        return settings._replace(**changes)  # type: ignore[arg-type]

    def calls(self) -> list[str]:
        lines: list[str] = []
        for log in (self.elan_home / "calls.log", self.home / "calls.log"):
            if log.is_file():
                lines += log.read_text().splitlines()
        return lines

    def snapshot(self) -> dict[str, tuple[int, int, bytes]]:
        state: dict[str, tuple[int, int, bytes]] = {}
        for path in sorted(self.base.rglob("*")):
            info = path.lstat()
            body = path.read_bytes() if path.is_file() else b""
            state[str(path.relative_to(self.base))] = (info.st_mode, info.st_mtime_ns, body)
        return state


REQUIRE_MATHLIB = ('\n[[require]]\nname = "mathlib"\n'
                   'git = "https://github.com/leanprover-community/mathlib4"\n'
                   f'rev = "{"a" * 40}"\n')


def test_offline_install_into_a_prefix_then_a_second_run_changes_nothing(tmp_path: Path) -> None:
    machine = Machine(tmp_path, requires=REQUIRE_MATHLIB)
    steps = prepare.prepare(machine.settings())
    assert [(s.name, s.status) for s in steps] == [
        ("elan", "done"), ("lean", "done"), ("bubblewrap", "done"), ("dependencies", "done")]
    prefix = machine.data / "lean-eval" / "bwrap"
    dirname = TOOLCHAIN.replace("/", "--").replace(":", "---")
    lake = f"{machine.elan_home}/toolchains/{dirname}/bin/lake"
    assert machine.calls() == [
        "elan-init -y --no-modify-path --default-toolchain none",
        f"elan toolchain install {TOOLCHAIN}",
        "lake exe cache get",
        "lake build",
        f"install_bwrap --prefix {prefix} "
        f"BWRAP_TARBALL={machine.offline / prepare.BWRAP_TARBALL}",
    ]
    assert lake in steps[3].detail
    olean = machine.bench / ".lake" / "packages" / "dep" / "Dep.olean"
    assert not olean.stat().st_mode & 0o222, "shared packages must be read-only afterwards"
    assert not any(machine.scratch.iterdir()), "the scratch directory is left empty"

    # run-eval's default lookup now finds the prepared bwrap ahead of PATH, and records it
    found = bubblewrap.resolve_bwrap(None, machine.env)
    assert found.path == prefix / "bin" / "bwrap"
    assert found.version == "0.12.0"

    before = machine.snapshot()
    again = prepare.prepare(machine.settings())
    assert [s.status for s in again] == ["present"] * 4
    assert machine.snapshot() == before
    assert len(machine.calls()) == 5


def test_a_checksum_mismatch_is_refused_before_unpacking(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    machine = Machine(tmp_path)
    opened: list[object] = []
    real_open = tarfile.open

    def spy(*args: object, **kwargs: object) -> tarfile.TarFile:
        opened.append(args)
        return real_open(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tarfile, "open", spy)
    wrong = machine.archive._replace(sha256="0" * 64)
    with pytest.raises(PrepareError, match="refused before unpacking"):
        prepare.prepare(machine.settings(elan_archive=wrong))
    assert opened == []
    assert not machine.elan_home.exists()
    assert machine.calls() == []
    assert not any(machine.scratch.iterdir())


def test_downloads_are_verified_too(tmp_path: Path) -> None:
    machine = Machine(tmp_path)
    served = machine.offline / prepare.ELAN.name
    url = served.as_uri()
    with pytest.raises(PrepareError, match="refused before unpacking"):
        prepare.prepare(machine.settings(offline=None, elan_archive=machine.archive._replace(
            url=url, sha256="f" * 64)))
    assert not machine.elan_home.exists()
    steps = prepare.prepare(machine.settings(offline=None,
                                             elan_archive=machine.archive._replace(url=url)))
    assert steps[0].status == "done"
    assert url in steps[0].detail
    assert f"install_bwrap --prefix {machine.data / 'lean-eval' / 'bwrap'} BWRAP_TARBALL=" \
        in machine.calls()


def test_a_new_enough_system_bwrap_is_left_alone(tmp_path: Path) -> None:
    machine = Machine(tmp_path)
    system = tmp_path / "system-bin"
    system.mkdir()
    (system / "bwrap").write_text('#!/bin/sh\necho "bubblewrap 0.13.1"\n')
    (system / "bwrap").chmod(0o755)
    machine.env["PATH"] = str(system)
    steps = prepare.prepare(machine.settings())
    assert steps[2].status == "present"
    assert "0.13.1" in steps[2].detail
    assert not any(call.startswith("install_bwrap") for call in machine.calls())
    assert steps[3] == prepare.Step("dependencies", "present", steps[3].detail)
    assert "no shared dependencies" in steps[3].detail


def test_cli_dry_run_prints_the_plan_and_changes_nothing(tmp_path: Path) -> None:
    machine = Machine(tmp_path, requires=REQUIRE_MATHLIB)
    before = machine.snapshot()
    result = CliRunner().invoke(
        main, ["prepare", "--dry-run", "--offline", str(machine.offline), "--benchmark",
               str(machine.bench)], env=machine.env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split()[:2] for line in lines[:4]] == [
        ["elan", "planned"], ["lean", "planned"], ["bubblewrap", "planned"],
        ["dependencies", "planned"]]
    assert str(machine.offline / prepare.ELAN.name) in lines[0]
    assert "lake exe cache get" in lines[3]
    assert lines[-1] == "dry run: nothing was changed"
    assert machine.snapshot() == before


def test_cli_offline_without_the_archive_is_a_setup_failure(tmp_path: Path) -> None:
    machine = Machine(tmp_path)
    _installer(machine, (FIXTURES / "fake_install_bwrap.sh").read_text())
    (machine.offline / prepare.ELAN.name).unlink()
    result = CliRunner().invoke(
        main, ["prepare", "--offline", str(machine.offline), "--benchmark", str(machine.bench),
               "--json"], env=machine.env, catch_exceptions=False)
    assert result.exit_code == 2
    assert f"elan: --offline: {machine.offline / prepare.ELAN.name} does not exist" \
        in result.stderr
    assert "prerequisite(s) missing, nothing was downloaded or changed" in result.stderr
    report = json.loads(result.stdout)
    assert (report["ok"], report["failed_step"], report["steps"]) == (
        False, "prerequisites", [])
    assert not machine.elan_home.exists()
    assert "Traceback" not in result.output


def test_json_reports_every_step(tmp_path: Path) -> None:
    machine = Machine(tmp_path)
    result = CliRunner().invoke(
        main, ["prepare", "--dry-run", "--json", "--benchmark", str(machine.bench)],
        env={**machine.env, "PATH": os.environ.get("PATH", "")}, catch_exceptions=False)
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["dry_run"] is True
    assert [s["name"] for s in data["steps"]] == ["elan", "lean", "bubblewrap", "dependencies"]


def test_cli_prepare_twice_offline(tmp_path: Path) -> None:
    """The command as a user runs it: elan already there, the rest installed, then nothing."""
    machine = Machine(tmp_path, requires=REQUIRE_MATHLIB)
    (machine.elan_home / "bin").mkdir(parents=True)
    (machine.elan_home / "bin" / "elan").write_bytes((FIXTURES / "fake-elan").read_bytes())
    (machine.elan_home / "bin" / "elan").chmod(0o755)
    (machine.bench / "scripts").mkdir()
    (machine.bench / "scripts" / "install_bwrap.sh").write_bytes(
        (FIXTURES / "fake_install_bwrap.sh").read_bytes())
    args = ["prepare", "--offline", str(machine.offline), "--benchmark", str(machine.bench)]
    first = CliRunner().invoke(main, args, env=machine.env, catch_exceptions=False)
    assert first.exit_code == 0, first.output
    assert [line.split()[:2] for line in first.stdout.splitlines()] == [
        ["elan", "present"], ["lean", "done"], ["bubblewrap", "done"], ["dependencies", "done"]]
    before = machine.snapshot()
    second = CliRunner().invoke(main, args, env=machine.env, catch_exceptions=False)
    assert second.exit_code == 0, second.output
    assert [line.split()[1] for line in second.stdout.splitlines()] == ["present"] * 4
    assert machine.snapshot() == before


def test_an_explicit_toolchain_makes_elan_moot_and_builds_with_its_lake(tmp_path: Path) -> None:
    machine = Machine(tmp_path, requires=REQUIRE_MATHLIB)
    toolchain = tmp_path / "my-lean"
    (toolchain / "bin").mkdir(parents=True)
    lake = toolchain / "bin" / "lake"
    lake.write_text('#!/bin/sh\necho "lake $*" >> "$HOME/calls.log"\n')
    lake.chmod(0o755)
    steps = prepare.prepare(machine.settings(toolchain=toolchain))
    assert [(s.name, s.status) for s in steps] == [
        ("elan", "present"), ("lean", "present"), ("bubblewrap", "done"), ("dependencies", "done")]
    assert f"{lake} build" in steps[3].detail
    assert not machine.elan_home.exists()
    assert machine.calls()[1:] == ["lake exe cache get", "lake build"]


MISSING_MESON = ('#!/bin/bash\necho "install_bwrap.sh: missing required tools: meson; on '
                 'Debian/Ubuntu: apt-get install meson" >&2\nexit 1\n')
# Passes the tool check, then fails building: a failure only a step can meet.
FAILS_BUILDING = ('#!/bin/bash\n[[ "$1" != --check ]] || exit 0\n'
                  'echo "install_bwrap.sh: ninja failed" >&2\nexit 1\n')


def _installer(machine: Machine, text: str) -> None:
    (machine.bench / "scripts").mkdir()
    (machine.bench / "scripts" / "install_bwrap.sh").write_text(text)


def test_every_missing_prerequisite_is_named_before_any_download(tmp_path: Path) -> None:
    """No elan archive offline, a --toolchain without lake, no build tools for bubblewrap: all
    three in one error, and nothing fetched, installed or run but the installer's check."""
    machine = Machine(tmp_path)
    (machine.offline / prepare.ELAN.name).unlink()
    failing = tmp_path / "install_bwrap.sh"
    failing.write_text(MISSING_MESON)
    with pytest.raises(PrerequisitesError) as caught:
        prepare.prepare(machine.settings(bwrap_installer=failing))
    # offline, the Lean release is named too: --offline cannot bring it (issue 32)
    assert [step for step, _ in caught.value.missing] == ["elan", "lean", "bubblewrap"]
    assert "--offline does not cover it" in caught.value.missing[1][1]
    bwrap = caught.value.missing[2][1]
    assert "no usable bubblewrap was found" in bwrap and "apt-get install meson" in bwrap
    assert bwrap.endswith("or pass --bwrap PATH")
    assert not machine.elan_home.exists() and not machine.scratch.exists()
    assert machine.calls() == []
    toolchain = tmp_path / "no-lake"
    toolchain.mkdir()
    with pytest.raises(PrerequisitesError) as caught:
        prepare.prepare(machine.settings(bwrap_installer=failing, toolchain=toolchain))
    assert [step for step, _ in caught.value.missing] == ["lean", "bubblewrap"]


def test_a_too_old_bwrap_is_named_with_the_one_option_that_uses_it(tmp_path: Path) -> None:
    machine = Machine(tmp_path)
    system = tmp_path / "system-bin"
    system.mkdir()
    (system / "bwrap").write_text('#!/bin/sh\necho "bubblewrap 0.8.0"\n')
    (system / "bwrap").chmod(0o755)
    machine.env["PATH"] = str(system)
    failing = tmp_path / "install_bwrap.sh"
    failing.write_text(MISSING_MESON)
    (tmp_path / "lean" / "bin").mkdir(parents=True)
    (tmp_path / "lean" / "bin" / "lake").write_text("")
    with pytest.raises(PrerequisitesError) as caught:
        prepare.prepare(machine.settings(bwrap_installer=failing, toolchain=tmp_path / "lean"))
    text = str(caught.value)
    assert f"the bubblewrap found, {system / 'bwrap'} 0.8.0, is older than 0.12.0" in text
    assert text.endswith("or pass --allow-bwrap-version 0.8.0 to use it")
    assert "elan" not in text and "--toolchain" not in text and "--offline" not in text


def test_a_failing_step_stops_prepare_naming_it(tmp_path: Path) -> None:
    machine = Machine(tmp_path)
    failing = tmp_path / "install_bwrap.sh"
    failing.write_text(FAILS_BUILDING)
    with pytest.raises(PrepareError, match=r"installing bubblewrap: .* exited 1: "
                                           r"install_bwrap.sh: ninja failed"):
        prepare.prepare(machine.settings(bwrap_installer=failing))
    assert not (machine.data / "lean-eval").exists()


@pytest.mark.parametrize("mode", ["text", "json", "quiet"])
def test_a_failure_is_said_once_naming_its_step_and_the_steps_already_done(
        tmp_path: Path, mode: str) -> None:
    """elan is there, Lean gets installed, then the bubblewrap build fails: its cause appears
    once (the console's FAILED line, else the error line), the error names `bubblewrap` and
    lists elan and lean; --json has the same in its report."""
    machine = Machine(tmp_path)
    _with_elan(machine)
    _installer(machine, FAILS_BUILDING)
    flags = {"text": [], "json": ["--json"], "quiet": ["-q"]}[mode]
    result = CliRunner().invoke(
        main, ["prepare", "--offline", str(machine.offline), "--benchmark", str(machine.bench),
               *flags], env=machine.env, catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert result.output.count("ninja failed") == (1 if mode != "json" else 2)
    assert "steps already finished: elan (present), lean (done)" in result.stderr
    if mode == "json":
        report = json.loads(result.stdout)
        assert report["ok"] is False and report["failed_step"] == "bubblewrap"
        assert [(s["name"], s["status"]) for s in report["steps"]] == [
            ("elan", "present"), ("lean", "done")]
        assert "ninja failed" in report["error"]
    elif mode == "text":
        assert [line.split()[:2] for line in result.stdout.splitlines()] == [
            ["elan", "present"], ["lean", "done"], ["bubblewrap", "FAILED"]]
        assert result.stderr.startswith("lean-eval: error: prepare: step bubblewrap failed "
                                        "(above)")
    else:
        assert result.stdout == ""
        assert "step bubblewrap failed: installing bubblewrap" in result.stderr
    assert "Traceback" not in result.output


def test_missing_prerequisites_are_listed_once_on_the_console(tmp_path: Path) -> None:
    machine = Machine(tmp_path)
    _with_elan(machine)
    _installer(machine, MISSING_MESON)
    result = CliRunner().invoke(
        main, ["prepare", "--offline", str(machine.offline), "--benchmark", str(machine.bench)],
        env=machine.env, catch_exceptions=False)
    assert result.exit_code == 2
    assert [line.split()[:2] for line in result.stdout.splitlines()] == [
        ["bubblewrap", "MISSING"]]
    assert result.output.count("apt-get install meson") == 1
    assert result.stderr == ("lean-eval: error: prepare: 1 prerequisite(s) missing (listed "
                             "above); nothing was downloaded or changed\n")
    assert machine.calls() == []


# --- what to pass offline (issue 16 item 6) ---------------------------------------------------

def _says_what_to_pass_offline(message: str) -> None:
    """The hint names --offline DIR with the exact file names, elan's network for the Lean
    release, and --toolchain DIR."""
    assert f"--offline DIR holding {prepare.ELAN.name}" in message
    assert prepare.BWRAP_TARBALL in message and "under exactly these names" in message
    assert "the Lean release itself comes only through elan's network" in message
    assert "--toolchain DIR" in message


def _with_elan(machine: Machine, script: str | None = None) -> None:
    (machine.elan_home / "bin").mkdir(parents=True)
    elan = machine.elan_home / "bin" / "elan"
    elan.write_bytes(script.encode() if script else (FIXTURES / "fake-elan").read_bytes())
    elan.chmod(0o755)


def test_an_elan_download_failure_says_what_to_pass_offline(tmp_path: Path) -> None:
    machine = Machine(tmp_path)
    unreachable = download.Archive(name=prepare.ELAN.name,
                                  url=f"file://{tmp_path}/nowhere/{prepare.ELAN.name}",
                                  sha256=prepare.ELAN.sha256)
    with pytest.raises(StepFailedError) as caught:
        prepare.prepare(machine.settings(offline=None, elan_archive=unreachable))
    assert caught.value.step == "elan"
    assert f"cannot download {unreachable.url}" in str(caught.value)
    _says_what_to_pass_offline(str(caught.value))


def test_a_missing_offline_file_names_every_file_expected(tmp_path: Path) -> None:
    machine = Machine(tmp_path)
    _with_elan(machine)
    (machine.offline / prepare.BWRAP_TARBALL).unlink()
    with pytest.raises(PrerequisitesError) as caught:
        prepare.prepare(machine.settings())
    assert [step for step, _ in caught.value.missing] == ["bubblewrap"]
    missing = machine.offline / prepare.BWRAP_TARBALL
    assert f"{missing} does not exist (expected {prepare.BWRAP_URL})" in str(caught.value)


def test_a_bubblewrap_download_failure_says_what_to_pass_offline(tmp_path: Path) -> None:
    """The installer's download fails (no --offline): the error says which tarball to put in
    --offline DIR, and that --bwrap or --allow-bwrap-version can use one already installed."""
    machine = Machine(tmp_path)
    _with_elan(machine)
    failing = tmp_path / "install_bwrap.sh"
    failing.write_text(f'#!/bin/bash\n[[ "$1" != --check ]] || exit 0\n'
                       f'echo "install_bwrap.sh: download of {prepare.BWRAP_URL} failed" >&2\n'
                       'exit 1\n')
    with pytest.raises(StepFailedError) as caught:
        prepare.prepare(machine.settings(offline=None, bwrap_installer=failing))
    message = str(caught.value)
    assert caught.value.step == "bubblewrap" and "download of" in message
    # elan and Lean are done: only the bubblewrap tarball is named, and one option to use
    assert f"--offline DIR holding {prepare.BWRAP_TARBALL} (from {prepare.BWRAP_URL})" in message
    assert prepare.ELAN.name not in message and "--toolchain" not in message
    assert "no usable bubblewrap was found" in message
    assert "or pass --bwrap PATH to use a bubblewrap already installed" in message
    assert [s.name for s in caught.value.done] == ["elan", "lean"]


def test_a_lean_install_failure_says_it_needs_elans_network_or_toolchain(tmp_path: Path) -> None:
    machine = Machine(tmp_path)
    _with_elan(machine, '#!/bin/bash\necho "error: could not download the release" >&2\nexit 1\n')
    _installer(machine, (FIXTURES / "fake_install_bwrap.sh").read_text())
    result = CliRunner().invoke(
        main, ["prepare", "--offline", str(machine.offline), "--benchmark", str(machine.bench),
               "--json"], env=machine.env, catch_exceptions=False)
    assert result.exit_code == 2
    assert "step lean failed: installing Lean" in result.stderr
    assert "could not download the release" in result.stderr
    assert ("the Lean release comes through elan's network (--offline covers elan and "
            "bubblewrap only)") in result.stderr
    assert "--toolchain DIR" in result.stderr
    report = json.loads(result.stdout)
    assert report["failed_step"] == "lean" and "--toolchain DIR" in report["error"]
    assert [s["name"] for s in report["steps"]] == ["elan"]


def test_the_bwrap_url_is_the_installers(tmp_path: Path) -> None:
    """The hints name the URL install_bwrap.sh downloads from."""
    script = (REPO / "scripts" / "install_bwrap.sh").read_text()
    version = prepare.BWRAP_TARBALL.removeprefix("bubblewrap-").removesuffix(".tar.xz")
    assert f"readonly BWRAP_VERSION={version}\n" in script
    assert 'readonly TARBALL_NAME="bubblewrap-${BWRAP_VERSION}.tar.xz"' in script
    default = ("https://github.com/containers/bubblewrap/releases/download/v${BWRAP_VERSION}/"
               "${TARBALL_NAME}")
    assert f'readonly DEFAULT_URL="{default}"' in script
    expanded = default.replace("${BWRAP_VERSION}", version)
    assert expanded.replace("${TARBALL_NAME}", prepare.BWRAP_TARBALL) == prepare.BWRAP_URL
