"""Logs are written like verdicts, and a run starts by removing what killed runs left.

One writer (``atomic.write_bytes_atomic``) gives every verdict, summary, log and report a
private temporary name opened ``O_EXCL|O_NOFOLLOW`` and renames it into place: a file or link
planted at the temporary name or at the final name is never written through. Stale temporary
files of either kind, and links planted at the name older releases wrote logs through
(``<problem>.log.tmp``), are removed at the start of a run, without following them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lean_eval.files import atomic
from lean_eval.files.atomic import write_bytes_atomic
from lean_eval.scoring import driver
from lean_eval.supervise import lock, process


def outcome() -> process.ProcessResult:
    return process.ProcessResult(returncode=0, signal=None, timed_out=False, duration=0.1,
                           stdout=b"built\n", stderr=b"", stdout_truncated=False,
                           stderr_truncated=False, orphans_killed=0)


def test_a_planted_temporary_name_is_never_written_through(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    monkeypatch.setattr(atomic.secrets, "token_hex", lambda n: "guessed")
    (tmp_path / ".p.log.guessed.tmp").symlink_to(victim)  # the name, had it been guessable
    with pytest.raises(FileExistsError):
        write_bytes_atomic(tmp_path / "p.log", b"attacker-controlled build output")
    assert victim.read_text() == "precious"
    assert not (tmp_path / "p.log").exists()
    assert (tmp_path / ".p.log.guessed.tmp").is_symlink()  # ours to leave: not ours to remove


def test_a_link_at_the_final_name_is_replaced_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "p.log").symlink_to(victim)
    write_bytes_atomic(tmp_path / "p.log", b"log\n")
    assert victim.read_text() == "precious"
    assert not (tmp_path / "p.log").is_symlink() and (tmp_path / "p.log").read_text() == "log\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.log", "victim"]


def test_the_log_writer_never_follows_a_planted_log_tmp(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    log = tmp_path / "out" / "good" / "two_plus_two.log"
    log.parent.mkdir(parents=True)
    (log.parent / "two_plus_two.log.tmp").symlink_to(victim)  # the fixed name of old releases
    tail = driver.write_log(log, ("lake", "env"), outcome())
    assert victim.read_text() == "precious"
    assert log.is_file() and not log.is_symlink() and "built" in log.read_text()
    assert "built" in "\n".join(tail)
    assert not [p for p in log.parent.iterdir() if p.name.startswith(".")]


def test_stale_temporaries_of_either_kind_are_removed_without_following_links(
        tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    out = tmp_path / "out"
    (out / "good").mkdir(parents=True)
    stale = [out / ".summary.json.0a1b.tmp", out / "good" / ".two_plus_two.json.0a1b.tmp",
             out / "good" / ".two_plus_two.log.0a1b.tmp", out / "good" / "double_def.log.tmp"]
    for path in stale:
        path.write_text("half")
    planted = [out / "good" / "two_plus_two.log.tmp", out / "good" / ".x.json.1.tmp"]
    for path in planted:
        path.symlink_to(victim)
    kept = [out / "good" / "two_plus_two.json", out / "good" / "two_plus_two.log",
            out / "summary.json"]
    for path in kept:
        path.write_text("{}")
    (out / "sub.log.tmp").mkdir()  # a directory of that name is a submission's, not a temp
    removed = lock.remove_stray_temps(out)
    assert sorted(removed) == sorted([*stale, *planted])
    assert victim.read_text() == "precious"
    assert all(p.is_file() for p in kept) and (out / "sub.log.tmp").is_dir()
