"""Probes without a sandbox (lean_eval/probes/): the payload forms, synthetic problems, and a
probe script whose tools cannot be resolved. Every probe run against real bubblewrap, with its
negative control, is in tests/e2e/test_probes.py.
"""

from __future__ import annotations

import os
import subprocess  # noqa: TID251 - the scripts are run as the separate programs they are
import sys
from pathlib import Path

import pytest
from support import REPO, STANDIN

from lean_eval.probes import payloads, synthetic

PIN = (REPO / "lean-toolchain").read_text(encoding="utf-8").strip()
SCRIPTS = {"sandbox_engaged": REPO / "scripts" / "sandbox_engaged_probe.py",
           **{n: REPO / "scripts" / "security_probes" / f"{n}_probe.py"
              for n in ("env_dump", "tool_path", "artifact_tamper", "comparator")}}


# --- the runner and the payload forms ----------------------------------------------------------


def test_payload_carries_both_forms_of_one_command() -> None:
    command = payloads.python_command("print('x')", {"path": 'a "quoted" \\ path'})
    text = payloads.io_payload(command)
    standin, *lean = text.splitlines()
    assert standin == f"-- standin-io: {command}"
    assert lean[0] == "#eval show IO Unit from do"
    assert payloads.lean_string(command) in lean[1]
    assert payloads.lean_string('a"b\\c\nd') == '"a\\"b\\\\c\\nd"'
    with pytest.raises(ValueError, match="one line"):
        payloads.io_payload("a\nb")


def test_synthetic_problems_need_no_benchmark(tmp_path: Path) -> None:
    problems = [synthetic.probe_true(PIN), synthetic.probe_def(PIN)]
    cat = synthetic.synthetic_catalog(tmp_path / "bench", problems, PIN)
    assert sorted(cat.problems) == ["probe_def", "probe_true"]
    pdef = cat.problems["probe_def"]
    assert pdef.config.definition_names == ("probe_val",)
    assert pdef.config.theorem_names == ("probe_val_eq",)
    assert pdef.trusted["lean-toolchain"].decode().strip() == PIN
    assert (tmp_path / "bench" / "workspaces" / "probe_def" / "Solution.lean").is_file()
    for p in problems:
        assert p.starter["Submission.lean"] != payloads.submission(synthetic.VALID_TRUE).encode()


# --- the scripts --------------------------------------------------------------------------------


def _script(name: str, *args: str, env: dict[str, str] | None = None,
            python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    return subprocess.run([python, str(SCRIPTS[name]), *args], capture_output=True, text=True,
                          env=env or dict(os.environ), cwd="/", timeout=120, check=False)


def test_script_whose_tools_cannot_be_resolved_exits_2(outside: Path) -> None:
    done = _script("sandbox_engaged", "--toolchain", str(outside / "no-such-toolchain"),
                   "--scratch", str(outside / "scratch"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout.startswith("ERROR sandbox_engaged: could not resolve the tools")
    done = _script("env_dump", "--toolchain", str(STANDIN), "--bwrap", str(outside / "nope"))
    assert done.returncode == 2, done.stdout + done.stderr
