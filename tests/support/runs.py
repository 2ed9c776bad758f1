"""Running the CLI in-process: ``run-eval`` against a toolchain, and the validate commands."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from click.testing import CliRunner, Result

from lean_eval.cli import main
from support.places import BWRAP_FLOOR, STANDIN


class Run(NamedTuple):
    """A finished ``run-eval`` and its files."""

    result: Result
    out: Path

    @property
    def code(self) -> int:
        return self.result.exit_code

    def verdict(self, submission: str, problem: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.out / submission / f"{problem}.json").read_text())
        return data

    def log(self, submission: str, problem: str) -> str:
        return (self.out / submission / f"{problem}.log").read_text(encoding="utf-8")

    def summary(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.out / "summary.json").read_text())
        return data


DEFAULT = Path("default-toolchain")  # sentinel: the toolchain this RunEval was made for


class RunEval:
    """Invoke ``lean-eval run-eval`` in-process against one toolchain (the stand-in by default)."""

    def __init__(self, benchmark: Path, base: Path, toolchain: Path = STANDIN) -> None:
        self.benchmark = benchmark
        self.base = base
        self.toolchain = toolchain

    @property
    def is_lean(self) -> bool:
        """Whether this runs the real Lean release rather than the stand-in."""
        return self.toolchain != STANDIN

    def __call__(self, *submissions: Path, extra: tuple[str, ...] = (),
                 toolchain: Path | None = DEFAULT, env: Mapping[str, str] | None = None,
                 out: Path | None = None, timeout: float | None = None) -> Run:
        out = out or self.base / "out"
        if toolchain == DEFAULT:
            toolchain = self.toolchain
        if timeout is None:
            timeout = 600 if self.is_lean else 60
        args = ["run-eval", *map(str, submissions), "--out", str(out), "--benchmark",
                str(self.benchmark), "--timeout", str(timeout), "-q",
                "--allow-bwrap-version", BWRAP_FLOOR, "--skip-probes", *extra]
        if toolchain is not None:
            args += ["--toolchain", str(toolchain)]
        result = CliRunner().invoke(main, args, env=dict(env or {}), catch_exceptions=False)
        return Run(result, out)


def standin_only(run_eval: RunEval, why: str) -> None:
    """Skip a scenario the real toolchain cannot express (e.g. a kernel that rejects)."""
    if run_eval.is_lean:
        pytest.skip(f"stand-in only: {why}")


def validate_catalog(benchmark: Path, *extra: str) -> Result:
    """``lean-eval validate-catalog`` of ``benchmark``."""
    return CliRunner().invoke(main, ["validate-catalog", "--benchmark", str(benchmark), *extra],
                              catch_exceptions=False)


def validate_submission(bench: Path, path: Path, *args: str) -> Result:
    """``lean-eval validate-submission`` of ``path``, with no Lean toolchain to be found."""
    env = {"LEAN_EVAL_TOOLCHAIN": "/nonexistent", "PATH": "/usr/bin:/bin"}  # no Lean needed
    return CliRunner().invoke(main, ["validate-submission", str(path), "--benchmark", str(bench),
                                     *args], env=env, catch_exceptions=False)
