"""``check-comparator-installation`` and ``check-eval-workflow`` against the stand-in, and
against deliberately broken installations, which they must report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from support import BWRAP_FLOOR, STANDIN

from lean_eval.cli import main

COMMANDS = ("check-comparator-installation", "check-eval-workflow")
ACCEPT_ALL = """#!/bin/sh
echo 'Running nanoda kernel on solution'
echo 'nanoda kernel accepts the solution'
echo 'Running Lean default kernel on solution'
echo 'Lean default kernel accepts the solution'
echo 'Your solution is okay!'
exit 0
"""


def _invoke(command: str, bench_copy: Path, outside: Path, toolchain: Path = STANDIN,
            *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, [
        command, "--benchmark", str(bench_copy), "--toolchain", str(toolchain),
        "--allow-bwrap-version", BWRAP_FLOOR, "--work-dir", str(outside / "w"), *extra],
                                catch_exceptions=False)
    return result.exit_code, result.output


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_passes_on_a_sound_installation(command: str, bench_copy: Path, outside: Path,
                                        bwrap: str, toolchain: Path) -> None:
    code, output = _invoke(command, bench_copy, outside, toolchain, "--json")
    assert code == 0, output
    data = json.loads(output)
    assert data["ok"] is True and all(f["ok"] for f in data["findings"])
    assert data["counts"] == data["expected_counts"]


def _accept_all_toolchain(outside: Path) -> Path:
    root = outside / "accept-all"
    (root / "bin").mkdir(parents=True)
    for tool, text in (("lake", ACCEPT_ALL), ("nanoda_bin", "#!/bin/sh\nexit 0\n")):
        (root / "bin" / tool).write_text(text)
        (root / "bin" / tool).chmod(0o755)
    return root


@pytest.mark.parametrize("command", COMMANDS)
def test_negative_control_a_toolchain_that_accepts_everything_is_reported(
        command: str, bench_copy: Path, outside: Path, bwrap: str) -> None:
    code, output = _invoke(command, bench_copy, outside, _accept_all_toolchain(outside))
    assert code == 1, output
    assert "FAILED" in output and "does not score as expected" in output
    assert "counts differ" in output


def test_negative_control_an_unusable_sandbox_is_an_installation_problem(
        bench_copy: Path, outside: Path, bwrap: str) -> None:
    broken = outside / "bwrap"
    broken.write_text("#!/bin/sh\n[ \"$1\" = --version ] && { echo 'bubblewrap 0.12.0'; exit 0; }"
                      "\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    broken.chmod(0o755)
    code, output = _invoke("check-comparator-installation", bench_copy, outside, STANDIN,
                           "--bwrap", str(broken), "--json")
    assert code == 1
    findings = {f["submission"]: f for f in json.loads(output)["findings"]}
    assert findings["known_good"]["verdict"] == "error"
    assert findings["known_good"]["reason"] == "sandbox"


HANG_IS_A_REJECTION = """#!/bin/sh
# The stand-in's lake, except that a build which would hang ends at once as a rejection: an
# installation that turns an infrastructure failure into a verdict on the proof.
if grep -q 'standin-io: sleep' Submission.lean 2>/dev/null; then
  echo 'Building Solution'
  echo 'error: Child exited with 1' >&2
  exit 1
fi
exec "$(dirname "$0")/lake-standin" "$@"
"""


def _hang_is_a_rejection_toolchain(outside: Path) -> Path:
    root = outside / "hang-rejects"
    shutil.copytree(STANDIN, root)
    (root / "bin" / "lake").rename(root / "bin" / "lake-standin")
    (root / "bin" / "lake").write_text(HANG_IS_A_REJECTION)
    (root / "bin" / "lake").chmod(0o755)
    return root


@pytest.mark.slow
def test_the_workflow_check_expects_an_infrastructure_failure(
        bench_copy: Path, outside: Path, bwrap: str) -> None:
    """A build that never ends must be `error`/`timeout` (under its own short deadline); a
    toolchain that reports it as a rejection instead fails check-eval-workflow."""
    code, output = _invoke("check-eval-workflow", bench_copy, outside, STANDIN, "--json")
    assert code == 0, output
    findings = {f["submission"]: f for f in json.loads(output)["findings"]}
    assert (findings["wf_timeout"]["verdict"], findings["wf_timeout"]["reason"]) == (
        "error", "timeout")
    assert json.loads(output)["expected_counts"]["error"] == 1

    code, output = _invoke("check-eval-workflow", bench_copy, outside,
                           _hang_is_a_rejection_toolchain(outside), "--json")
    assert code == 1, output
    data = json.loads(output)
    bad = [f["submission"] for f in data["findings"] if not f["ok"]]
    assert bad == ["wf_timeout"], output
    assert data["counts"] != data["expected_counts"]
