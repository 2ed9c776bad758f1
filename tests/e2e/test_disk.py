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
    make_verdict,
    no_survivor,
    sh_payload,
    with_lines,
)

from lean_eval.records.verdict import Preflight, ResourceLimits, Verdict
from lean_eval.scoring import pair, resume, shard
from lean_eval.scoring.options import RunOptions
from lean_eval.supervise import disk, process
from lean_eval.supervise.resources import PairLimits

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

P = "two_plus_two"
ENV = {"PATH": "/usr/bin:/bin"}
MIB = 1 << 20


# --- accounting (pure and on a real directory) --------------------------------------------------


def test_usage_counts_allocated_blocks_and_entries_once_and_stops_at_the_file_budget(
        tmp_path: Path) -> None:
    (tmp_path / "d" / "e").mkdir(parents=True)
    with open(tmp_path / "d" / "big", "wb") as f:
        os.posix_fallocate(f.fileno(), 0, 4 * MIB)  # allocated, never written: still counted
    os.link(tmp_path / "d" / "big", tmp_path / "d" / "e" / "again")  # one inode, counted once
    (tmp_path / "d" / "link").symlink_to("/")  # never followed
    used = disk.usage([str(tmp_path)])
    assert used.complete and used.files == 5
    assert 4 * MIB <= used.bytes < 5 * MIB
    for i in range(50):
        (tmp_path / f"f{i}").touch()
    stopped = disk.usage([str(tmp_path)], max_files=10)
    assert not stopped.complete and stopped.files == 11  # the walk costs the budget, no more
    assert disk.exceeded_by(stopped, None, 10) == "disk_files"
    assert disk.exceeded_by(used, 4 * MIB, None) == "disk_bytes"
    assert disk.exceeded_by(used, None, None) is None


def test_short_of_space_is_below_the_reserve_or_nearly_full_without_one() -> None:
    assert disk.is_short(disk.Room(10 * MIB, 1000), 20 * MIB)
    assert not disk.is_short(disk.Room(30 * MIB, 1000), 20 * MIB)
    assert disk.is_short(disk.Room(MIB // 2, 1000), 0)
    assert disk.is_short(disk.Room(30 * MIB, 3), 0)  # out of inodes
    assert not disk.is_short(None, 20 * MIB)  # unknown: never blamed on the host


def test_the_limits_spec_round_trips_to_the_reaper() -> None:
    limits = PairLimits(1 << 30, 64, "watchdog", 16 * MIB, 1000, ("/a", "/b"))
    assert PairLimits.from_spec(limits.to_spec()) == limits
    assert limits.watches_disk() and not PairLimits(None, None).any()


def limited(options: RunOptions, **limits: int | None) -> RunOptions:
    return options._replace(pair_limits=options.pair_limits._replace(**limits))


def test_the_disk_limits_are_in_the_resume_key_and_the_options_digest(tmp_path: Path) -> None:
    base = RunOptions(out_dir=tmp_path, timeout=60)
    preflight = Preflight(skipped=True, toolchain_path="/t", bwrap_path="/b",
                          bwrap_version="0.8.0", bwrap_sha256="0" * 64)
    digests = {shard.options_digest(resume.verdict_options(o, preflight)) for o in (
        base, limited(base, disk_limit=MIB), limited(base, disk_files=10),
        limited(base, disk_limit=None))}
    assert len(digests) == 4
    # the reserve decides when a pair starts and whether a failure is the host's: not keyed
    assert resume.verdict_options(base._replace(disk_reserve=1), preflight) == \
        resume.verdict_options(base, preflight)


@pytest.mark.parametrize(("limits", "which"), [
    (PairLimits(None, None, "watchdog", 8 * MIB, None), "disk_bytes"),
    (PairLimits(None, None, "watchdog", None, 200), "disk_files"),
])
def test_the_watchdog_ends_a_tree_that_writes_past_its_disk_budget(
        tmp_path: Path, limits: PairLimits, which: str) -> None:
    work = tmp_path / "w"
    work.mkdir()
    script = ("import os, time\n"
              "for i in range(100000):\n"
              "    with open(f'f{i}', 'wb') as f: os.posix_fallocate(f.fileno(), 0, 1 << 18)\n"
              "    time.sleep(0.001)\n")
    out = process.run((sys.executable, "-c", script), env=ENV, cwd=work, timeout=120,
                      limits=limits._replace(disk_paths=(str(work),)))
    assert out.limit_exceeded == which, out
    assert out.limits_mechanism == "watchdog"
    assert len(os.listdir(work)) < 100000  # killed, not finished


def _verdict(outcome: str, cleanup: tuple[str, ...] = ()) -> Verdict:
    return make_verdict("s", P, outcome, execution="completed", code="build_failed",
                        message="ENOSPC", cleanup=cleanup,
                        limits=ResourceLimits(memory_bytes=None, max_processes=None,
                                              mechanism="none"))


def test_a_failure_while_short_of_space_is_error_and_an_acceptance_stays() -> None:
    rejected = pair._short_of_space(_verdict("rejected"))
    assert (rejected.verdict, rejected.execution, rejected.reason.code) == (
        "error", "harness_error", "disk_short")
    assert rejected.limits is not None and rejected.limits.short_of_space
    accepted = pair._short_of_space(_verdict("accepted"))
    assert accepted.verdict == "accepted" and accepted.limits and accepted.limits.short_of_space
    left = pair._short_of_space(_verdict("accepted", cleanup=("x: EACCES",)))
    assert left.verdict == "error"  # its cleanup failed while short: not a clean acceptance


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

