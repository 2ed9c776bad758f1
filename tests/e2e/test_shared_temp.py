"""A shared system temp dir (design §5.5 "Resume"): another user's scoring directory there is
skipped, never a crash; and the suite judges only what it made, whatever other lean-eval
processes write into the system temp dir meanwhile (tests/conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess  # noqa: TID251 - an unprivileged run and a second pytest session
import sys
from pathlib import Path

import pytest
from support import BWRAP_FLOOR, REPO, STANDIN, UNPRIVILEGED, good, harness_env, unprivileged_python
from support import PROBLEM as P

from lean_eval.supervise import lock


def test_another_users_scoring_directory_is_skipped_not_a_crash(
        bench_copy: Path, outside: Path, bwrap: str) -> None:
    """Two users score on one machine: root's live-looking directory (mode 0700) sits in the
    shared work dir of uid 65534's run, which scores as usual and leaves it alone."""
    del bwrap
    if os.geteuid() != 0:
        pytest.skip("needs root to make a directory of another user")
    setup = unprivileged_python(outside)
    if isinstance(setup, str):
        pytest.skip(setup)
    prefix, env = setup
    subs, out, shared = outside / "subs", outside / "out", outside / "shared"
    good(subs)
    for path in (outside, *outside.rglob("*")):
        os.chown(path, UNPRIVILEGED, UNPRIVILEGED, follow_symlinks=False)
    shared.mkdir(mode=0o1777)
    shared.chmod(0o1777)
    foreign = shared / f"{lock.RUN_PREFIX}rootsown"
    foreign.mkdir(mode=0o700)
    (foreign / ".owner").write_text("{}")  # a dead run's, but not this user's to reclaim
    argv = ["-m", "lean_eval", "run-eval", str(subs / "good"), "--out", str(out),
            "--work-dir", str(shared), "--benchmark", str(bench_copy), "--toolchain",
            str(STANDIN), "--timeout", "60", "-q", "--skip-probes", "--jobs", "1",
            "--allow-bwrap-version", BWRAP_FLOOR]
    done = subprocess.run([*prefix, *argv], capture_output=True, text=True, env=env,
                          cwd=outside, timeout=240, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "PermissionError" not in output and "bug" not in output, output
    assert json.loads((out / "good" / f"{P}.json").read_text())["verdict"] == "accepted"
    assert (foreign / ".owner").is_file()
    assert sorted(p.name for p in shared.iterdir()) == [foreign.name]


_WRITER = """
import os, sys, tempfile, time
# Another lean-eval on this machine: a run's scoring directory and a crash file it keeps,
# straight in the system temp dir, for as long as the suite runs.
made = []
stop = sys.argv[1]
while not os.path.exists(stop):
    made.append(tempfile.mkdtemp(prefix="lean-eval-run-", dir="/tmp"))
    handle, name = tempfile.mkstemp(prefix="lean-eval-crash-", suffix=".txt", dir="/tmp")
    os.close(handle)
    made.append(name)
    print(made[-2], made[-1], flush=True)
    time.sleep(0.05)
"""


def test_the_suite_ignores_what_other_processes_put_in_the_system_temp_dir(
        tmp_path: Path, bench_copy: Path, bwrap: str) -> None:
    """The README's test command (here on one small module, with xdist workers) passes while
    a user's own run-eval scores in /tmp (its default --work-dir) and another process keeps
    writing lean-eval scoring directories and crash files there."""
    del bwrap
    stop = tmp_path / "stop"
    user_env = {**harness_env(), "TMPDIR": "/tmp"}  # a user's shell: the system temp dir
    user_run = subprocess.Popen(
        [sys.executable, "-m", "lean_eval", "run-eval", str(REPO / "examples" / "submissions" /
                                                             "correct"),
         "--out", str(tmp_path / "user-out"), "--benchmark", str(bench_copy), "--toolchain",
         str(STANDIN), "--skip-probes", "-q", "--allow-bwrap-version", BWRAP_FLOOR],
        env=user_env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(stop)],
                              stdout=subprocess.PIPE, text=True, env={"PATH": "/usr/bin:/bin"})
    try:
        assert writer.stdout is not None
        first = writer.stdout.readline()  # it wrote before the session started, and goes on
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PYTEST", "CI", "TMPDIR"))}
        session = subprocess.run(
            [sys.executable, "-m", "pytest", "tests/files/test_paths.py", "-q", "-n", "2",
             "-p", "no:cacheprovider"], capture_output=True, text=True, cwd=REPO, env=env,
            timeout=170, check=False)
        stop.touch()
        rest, _ = writer.communicate(timeout=30)
        user_output, _ = user_run.communicate(timeout=300)
    finally:
        stop.touch()
        for child in (writer, user_run):
            if child.poll() is None:
                child.kill()
            child.wait()
    assert user_run.returncode == 0, user_output
    made = [name for line in [first, *rest.splitlines()] for name in line.split()]
    for name in made:  # the other process's entries: removed here, by the test that made them
        path = Path(name)
        if path.is_dir():
            path.rmdir()
        else:
            path.unlink(missing_ok=True)
    assert session.returncode == 0, session.stdout[-3000:] + session.stderr[-2000:]
    assert "lean-eval entr" not in session.stdout
    assert len(made) > 2  # the writer went on while the session ran
