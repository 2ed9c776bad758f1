"""`lean-eval prepare`, offline: fixture archives, a fake elan and a fake bwrap installer.

Nothing here touches the network or the real home directory: every step installs into a
temporary prefix, and the archives are built from tests/fixtures/prepare/.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from support import BWRAP_FLOOR, REPO, RunEval, correct, make_submission

from lean_eval.cli import main
from lean_eval.errors import PrerequisitesError
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


@pytest.mark.sandbox
def test_run_eval_uses_and_records_the_prepared_bwrap(run_eval: RunEval, outside: Path,
                                                     bwrap: str) -> None:
    """A bwrap in the prepare prefix is found without --bwrap, and named in the verdict."""
    prefix = outside / "data" / "lean-eval" / "bwrap" / "bin"
    prefix.mkdir(parents=True)
    shutil.copy2(bwrap, prefix / "bwrap")
    submission = make_submission(outside, "alice",
                                 {"two_plus_two": {"Submission.lean": correct("two_plus_two")}})
    run = run_eval(submission, env={"XDG_DATA_HOME": str(outside / "data")})
    assert run.code == 0, run.result.output
    verdict = run.verdict("alice", "two_plus_two")
    assert verdict["verdict"] == "accepted"
    assert verdict["identity"]["bwrap_path"] == str(prefix / "bwrap")
    assert (run.out / "summary.json").is_file()


# --- what to pass offline (issue 16 item 6) ---------------------------------------------------


def _with_elan(machine: Machine, script: str | None = None) -> None:
    (machine.elan_home / "bin").mkdir(parents=True)
    elan = machine.elan_home / "bin" / "elan"
    elan.write_bytes(script.encode() if script else (FIXTURES / "fake-elan").read_bytes())
    elan.chmod(0o755)


def test_prepare_bwrap_uses_that_bubblewrap_and_builds_none(tmp_path: Path, bwrap: str) -> None:
    machine = Machine(tmp_path)
    _with_elan(machine)
    steps = prepare.prepare(machine.settings(bwrap=Path(bwrap), allow_bwrap=BWRAP_FLOOR))
    assert (steps[2].name, steps[2].status) == ("bubblewrap", "present")
    assert f"--bwrap {bwrap} {BWRAP_FLOOR}" in steps[2].detail
    assert not any("install_bwrap" in c for c in machine.calls())
    if BWRAP_FLOOR != bubblewrap.MIN_VERSION:  # an old bwrap without the allowance is refused
        with pytest.raises(PrerequisitesError, match="lean-eval requires"):
            prepare.prepare(machine.settings(bwrap=Path(bwrap)))


# --- every option a command lists changes what it does ----------------------------------------

def _outcome(result: Any, *volatile: Path) -> tuple[int, str]:
    text = result.output
    for path in volatile:
        text = text.replace(str(path), "<dest>")
    return result.exit_code, text


def _walk(command: str, base: list[str], variants: dict[str, list[str]],
          env: dict[str, str], run: Callable[[list[str]], tuple[int, str]]) -> None:
    """Every option ``command`` lists (its --help) has a variant here, and that variant changes
    the outcome (exit code or output) against ``base``."""
    listed = {p.name for p in main.commands[command].params if isinstance(p, click.Option)}
    unchecked = sorted(listed ^ set(variants))
    assert listed == set(variants), f"{command}: options without a check: {unchecked}"
    reference = run(base)
    for name, args in variants.items():
        assert run(args) != reference, f"{command} {name}: listed but changes nothing"


def test_every_option_prepare_start_problem_and_validate_catalog_list_is_honoured(
        tmp_path: Path, bwrap: str) -> None:
    for command in ("start-problem", "validate-catalog"):
        helped = CliRunner().invoke(main, [command, "--help"], catch_exceptions=False).output
        for gone in ("--toolchain", "--bwrap", "--allow-bwrap-version"):
            assert gone not in helped, f"{command} lists {gone} but runs no Lean or bubblewrap"

    machine = Machine(tmp_path / "m")
    env = {**machine.env, "PATH": str(Path(bwrap).parent)}
    lean = tmp_path / "my-lean" / "bin"
    lean.mkdir(parents=True)
    (lean / "lake").write_text("#!/bin/sh\n")
    (lean / "lake").chmod(0o755)
    empty = tmp_path / "empty"
    empty.mkdir()
    base = ["prepare", "--dry-run", "--offline", str(machine.offline), "--benchmark",
            str(machine.bench)]

    def prepare_run(args: list[str]) -> tuple[int, str]:
        return _outcome(CliRunner().invoke(main, args, env=env, catch_exceptions=False))

    _walk("prepare", base, {
        "toolchain": [*base, "--toolchain", str(lean.parent)],
        "bwrap_path": [*base, "--bwrap", bwrap],
        "allow_bwrap": [*base, "--allow-bwrap-version", "0.1.0"],
        "as_json": [*base, "--json"],
        "verbose": [*base, "-v"],
        "quiet": [*base, "-q"],
        "offline": base[:2] + base[4:],
        "benchmark": [*base[:4], "--benchmark", str(empty)],
        "dry_run": ["prepare", *base[2:]],  # last: this one installs (into the fake machine)
    }, env, prepare_run)

    counter = iter(range(1000))

    def start_run(args: list[str]) -> tuple[int, str]:
        dest = tmp_path / f"dest{next(counter)}"
        result = CliRunner().invoke(main, [args[0], args[1], str(dest), *args[2:]],
                                    catch_exceptions=False)
        return _outcome(result, dest)

    start = ["start-problem", "two_plus_two", "--benchmark", str(REPO)]
    _walk("start-problem", start, {
        "benchmark_rev": [*start, "--benchmark-rev", "no-such-revision"],
        "benchmark": [*start[:2], "--benchmark", str(empty)],
        "as_json": [*start, "--json"],
        "verbose": [*start, "-v"],
        "quiet": [*start, "-q"],
    }, {}, start_run)

    def validate_run(args: list[str]) -> tuple[int, str]:
        return _outcome(CliRunner().invoke(main, args, catch_exceptions=False))

    validate = ["validate-catalog", "--benchmark", str(REPO)]
    _walk("validate-catalog", validate, {
        "benchmark": ["validate-catalog", "--benchmark", str(empty)],
        "as_json": [*validate, "--json"],
        "verbose": [*validate, "-v"],
        "quiet": [*validate, "-q"],
    }, {}, validate_run)
