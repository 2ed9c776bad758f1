"""The per-pair disk budget, the free-space reserve and short-of-space failures (design §5.5
Disk, issue 12 item 1): one pair filling the scoring filesystem never costs another its score."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess  # noqa: TID251 - mounting a small filesystem needs a real child process
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import (
    RunEval,
    correct,
    make_submission,
    no_survivor,
    sh_payload,
    with_lines,
)

from lean_eval.scoring import pair

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

P = "two_plus_two"
MIB = 1 << 20


# --- the batch: reserve at admission, short-of-space classification -------------------------


def _fill(seconds: float) -> str:
    """Python that, for ``seconds``, fills all free space with 4 MiB fallocated files (and one
    for the rest), holds it, frees it and starts again (each file far below RLIMIT_FSIZE: only a
    budget over all of them stops it)."""
    code = ("import os, time\n"
            "os.chdir('.lake')\n"  # the one directory a build may write
            f"end = time.monotonic() + {seconds}\n"
            "while time.monotonic() < end:\n"
            "    made = []\n"
            "    for i in range(64):\n"
            "        try:\n"
            "            fd = os.open(f'fill{i}', os.O_CREAT | os.O_WRONLY, 0o600)\n"
            "            made.append(f'fill{i}')\n"
            "            os.posix_fallocate(fd, 0, 4 << 20)\n"
            "            os.close(fd)\n"
            "        except OSError:\n"
            "            break\n"
            "    try:\n"  # and the last few blocks, so that nothing is left to anyone
            "        fd = os.open('rest', os.O_CREAT | os.O_WRONLY, 0o600)\n"
            "        made.append('rest')\n"
            "        st = os.statvfs('.')\n"
            "        os.posix_fallocate(fd, 0, max(1, st.f_bavail * st.f_frsize))\n"
            "        os.close(fd)\n"
            "    except OSError:\n"
            "        pass\n"
            "    time.sleep(0.2)\n"
            "    for name in made:\n"
            "        os.unlink(name)\n")
    encoded = base64.b64encode(code.encode()).decode()
    return f"python3 -c \"import base64; exec(base64.b64decode('{encoded}'))\""


def _as_root() -> tuple[str, ...] | None:
    """How to run mount(8) as root here: directly, through passwordless sudo (CI), or not."""
    if shutil.which("mount") is None:
        return None
    if os.geteuid() == 0:
        return ()
    if shutil.which("sudo") and subprocess.run(("sudo", "-n", "true"), capture_output=True,
                                               check=False).returncode == 0:
        return ("sudo", "-n")
    return None


@pytest.fixture
def small_fs(outside: Path) -> Iterator[Path]:
    """A 48 MiB tmpfs owned by this user, mounted at a fresh directory; under CI it must work."""
    mount = outside / "small"
    mount.mkdir()
    prefix = _as_root()
    why = None
    if prefix is None:
        why = "mounting a tmpfs needs root (or passwordless sudo) and mount(8)"
    else:
        options = f"size=48m,mode=0755,uid={os.getuid()},gid={os.getgid()}"
        done = subprocess.run((*prefix, "mount", "-t", "tmpfs", "-o", options, "tmpfs",
                               str(mount)), capture_output=True, text=True, check=False)
        if done.returncode != 0:
            why = f"mount -t tmpfs failed: {done.stderr.strip()}"
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"under CI the small-filesystem disk test must run: {why}")
        pytest.skip(why)
    try:
        yield mount
    finally:
        subprocess.run((*(prefix or ()), "umount", "-l", str(mount)), check=False)


def _batch(subs: Path) -> list[Path]:
    hostile = make_submission(subs, "filler", {P: {"Submission.lean": with_lines(
        P, sh_payload(_fill(8)))}})
    good = [make_submission(subs, f"good{i}", {P: {"Submission.lean": correct(P)}})
            for i in range(6)]
    return [hostile, *good]


def test_a_build_filling_a_small_work_dir_costs_no_correct_pair_its_score(
        run_eval: RunEval, outside: Path, small_fs: Path) -> None:
    subs = _batch(outside / "subs")
    extra = ("-j", "2", "--work-dir", str(small_fs / "work"), "--disk-limit", "12M",
             "--disk-reserve", "24M")
    first = run_eval(*subs, extra=extra)
    output = first.result.output
    assert "Traceback" not in output, output
    assert (first.out / "summary.json").is_file(), output
    hostile = first.verdict("filler", P)
    assert (hostile["verdict"], hostile["execution"]) == ("error", "resource_exhausted"), (
        first.out / "filler" / f"{P}.log").read_text()
    assert hostile["limits"]["exceeded"] == "disk_bytes" and "disk" in hostile["reason"]["message"]
    errors = []
    for i in range(6):
        v = first.verdict(f"good{i}", P)
        assert v["verdict"] in ("accepted", "error"), v
        assert v["limits"]["disk_bytes"] == 12 * MIB and v["limits"]["disk_mechanism"] == "watchdog"
        if v["verdict"] == "error":
            errors.append(f"good{i}")
    if errors:  # the re-run scores them again
        again = run_eval(*subs, extra=extra)
        assert "Traceback" not in again.result.output
        for name in errors:
            v = again.verdict(name, P)
            assert v["verdict"] == "accepted", (v["reason"], v["limits"], v.get("last_phase"))
    no_survivor(outside)


@pytest.mark.slow
def test_without_the_budget_and_the_reserve_a_correct_pair_is_not_accepted(
        run_eval: RunEval, outside: Path, small_fs: Path, monkeypatch: pytest.MonkeyPatch
        ) -> None:
    """Negative control of the test above: without the budget, the reserve and the second try
    alone, the filler holds the disk full beside them."""
    monkeypatch.setattr(pair, "worth_another_try", lambda verdict: False)
    subs = _batch(outside / "subs")
    run = run_eval(*subs, extra=("-j", "2", "--work-dir", str(small_fs / "work"),
                                 "--disk-limit", "0", "--disk-files", "0",
                                 "--disk-reserve", "0"))
    assert "Traceback" not in run.result.output
    verdicts = [run.verdict(f"good{i}", P)["verdict"] for i in range(6)]
    assert any(v != "accepted" for v in verdicts), verdicts
    no_survivor(outside)
