"""Logs are written like verdicts, and a run starts by removing what killed runs left.

One writer (``atomic.write_bytes_atomic``) gives every verdict, summary, log and report a
private temporary name opened ``O_EXCL|O_NOFOLLOW`` and renames it into place: a file or link
planted at the temporary name or at the final name is never written through. Stale temporary
files of either kind, and links planted at the name older releases wrote logs through
(``<problem>.log.tmp``), are removed at the start of a run, without following them.
"""

from __future__ import annotations

import json
from pathlib import Path

from support import correct, make_submission, no_survivor


def test_run_eval_never_follows_a_planted_log_tmp_and_removes_stale_temporaries(
        run_eval, outside: Path) -> None:
    subs = [make_submission(outside / "in", name, {
        "two_plus_two": {"Submission.lean": correct("two_plus_two")}}) for name in ("good", "also")]
    out = outside / "out"
    victim = outside / "victim.txt"
    victim.write_text("precious")
    (out / "good").mkdir(parents=True)
    (out / "good" / "two_plus_two.log.tmp").symlink_to(victim)
    stale = [out / ".summary.json.dead.tmp", out / "also" / ".two_plus_two.log.dead.tmp"]
    stale[1].parent.mkdir()
    for path in stale:
        path.write_text("half-written by a killed run")
    run = run_eval(*subs, out=out)
    assert run.code == 0, run.result.output
    assert "Traceback" not in run.result.output
    assert (out / "summary.json").is_file()
    for name in ("good", "also"):
        assert run.verdict(name, "two_plus_two")["verdict"] == "accepted"
        log = out / name / "two_plus_two.log"
        assert log.is_file() and not log.is_symlink() and "# argv:" in log.read_text()
    assert victim.read_text() == "precious"
    assert not list(out.rglob("*.tmp")), list(out.rglob("*.tmp"))
    assert json.loads((out / "summary.json").read_text())["counts"]["accepted"] == 2
    no_survivor(outside)
