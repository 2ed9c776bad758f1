"""The per-pair disk budget, the free-space reserve and short-of-space failures (design §5.5
Disk, issue 12 item 1): one pair filling the scoring filesystem never costs another its score;
files held open after unlinking, fill-and-free pulses and a disk held full within the budget
do not escape it (issue 23 item 4)."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess  # noqa: TID251 - mounting a small filesystem needs a real child process
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import (
    Run,
    RunEval,
    correct,
    leftover_groups,
    make_submission,
    no_survivor,
    sh_payload,
    standin_only,
    with_lines,
)

from lean_eval.scoring import pair
from lean_eval.supervise import pair_fs

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
    mechanism = "watchdog" if pair_fs.unavailable_reason() else "filesystem"
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
        assert v["limits"]["disk_bytes"] == 12 * MIB
        assert v["limits"]["disk_mechanism"] == mechanism
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


# --- issue 23: what the walk of a pair's trees cannot see, and a disk held full -------------


def _python(code: str) -> str:
    encoded = base64.b64encode(code.encode()).decode()
    return f"python3 -c \"import base64; exec(base64.b64decode('{encoded}'))\""


HELD = _python("import os, time\nos.chdir('.lake')\nheld = []\n"
               "for i in range(6):\n"
               "    f = open(f'held{i}', 'wb')\n"
               "    f.write(os.urandom(8 << 20))\n"
               "    f.flush()\n"
               "    os.unlink(f'held{i}')\n"
               "    held.append(f)\n"
               "print('HELD', flush=True)\ntime.sleep(30)\n")


PULSE_FILES = {  # how a pulse makes each file: named, unlinked at once, or never named
    "named": "fd = os.open(f'p{i}', os.O_CREAT | os.O_WRONLY, 0o600); made.append(f'p{i}')",
    "unlinked": "fd = os.open(f'p{i}', os.O_CREAT | os.O_WRONLY, 0o600); os.unlink(f'p{i}')",
    "o_tmpfile": "fd = os.open('.', os.O_TMPFILE | os.O_WRONLY, 0o600)",
}


def _pulses(hold: float, gap: float, seconds: float, files: str) -> str:
    """Python that fills all free space in 4 MiB fallocated files made as ``PULSE_FILES``
    says, holds it ``hold`` seconds, frees it and waits ``gap`` seconds, for ``seconds``."""
    return _python(
        "import os, time\nos.chdir('.lake')\n"
        f"end = time.monotonic() + {seconds}\n"
        "while time.monotonic() < end:\n"
        "    made = []\n"
        "    for i in range(64):\n"
        "        try:\n"
        f"            {PULSE_FILES[files]}\n"
        "            made.append(fd)\n"
        "            os.posix_fallocate(fd, 0, 4 << 20)\n"
        "        except OSError:\n"
        "            break\n"
        f"    time.sleep({hold})\n"
        "    for held in made:\n"
        "        os.close(held) if isinstance(held, int) else os.unlink(held)\n"
        f"    time.sleep({gap})\n"
        "print('PULSED', flush=True)\n")


def _escape_batch(run_eval: RunEval, outside: Path, payload: str,
                  *extra: str) -> tuple[Run, dict[str, Any]]:
    subs = outside / "subs"
    make_submission(subs, "good", {P: {"Submission.lean": correct(P)}})
    make_submission(subs, "hostile", {P: {"Submission.lean": with_lines(P, sh_payload(payload))}})
    run = run_eval(subs / "good", subs / "hostile", extra=("-j", "2", *extra))
    output = run.result.output
    assert "Traceback" not in output, output
    assert (run.out / "summary.json").is_file(), output
    assert run.verdict("good", P)["verdict"] == "accepted", run.log("good", P)
    hostile = run.verdict("hostile", P)
    assert (hostile["verdict"], hostile["execution"]) == ("error", "resource_exhausted"), (
        hostile["reason"], run.log("hostile", P))
    assert hostile["limits"]["exceeded"] == "disk_bytes"
    no_survivor(outside)
    assert leftover_groups() == []
    return run, hostile


@pytest.fixture
def watchdog(monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk budget kept by the watchdog even where a pair could get a filesystem of its
    own (what these tests show is the watchdog's; tests/e2e/test_disk_attacks.py has both)."""
    monkeypatch.setattr(pair_fs, "unavailable_reason", lambda: "forced by the test")


@pytest.mark.usefixtures("watchdog")
def test_files_unlinked_while_held_open_count_against_the_disk_budget(
        run_eval: RunEval, outside: Path) -> None:
    """48 MiB in six unlinked files held open, under --disk-limit 16M. Negative control (run by
    hand): without disk.held_unlinked the pair is accepted."""
    standin_only(run_eval, "the payload is a -- standin-io: line")
    _escape_batch(run_eval, outside, HELD, "--disk-limit", "16M")


@pytest.mark.usefixtures("watchdog")
@pytest.mark.parametrize("files", ["unlinked", "o_tmpfile"])
def test_fill_and_free_pulses_are_caught_beside_a_correct_pair(
        run_eval: RunEval, outside: Path, small_fs: Path, files: str) -> None:
    """Pulses of 50 ms that fill the whole small work filesystem with files no walk finds and
    free it again, under --disk-limit 16M: a short filesystem is sampled every
    disk.SPACE_INTERVAL and measured at once, held-open files included, so the pulse is seen
    while it lasts. Negative control (run by hand): the old sampling never sees one."""
    standin_only(run_eval, "the payload is a -- standin-io: line")
    _escape_batch(run_eval, outside, _pulses(0.05, 0.3, 20, files), "--work-dir",
                  str(small_fs / "work"), "--disk-limit", "16M", "--disk-reserve", "8M")


@pytest.mark.usefixtures("watchdog")
def test_a_pair_holding_its_filesystem_full_within_its_budget_is_stopped(
        run_eval: RunEval, outside: Path, small_fs: Path) -> None:
    """The whole small work filesystem held full by a pair within its (default, 4 GiB) budget:
    stopped after resources.DISK_SHORT_GRACE instead of stalling admission for its deadline.
    Negative control (run by hand): without the grace rule it is accepted after 20 s."""
    standin_only(run_eval, "the payload is a -- standin-io: line")
    _escape_batch(run_eval, outside, _pulses(20, 0, 1, "named"), "--work-dir",
                  str(small_fs / "work"), "--disk-reserve", "8M")
