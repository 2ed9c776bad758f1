"""start-problem's packed layout works in both pipelines (issue 27 item 5): the archive command
it prints packs the read-only ``lakefile.toml`` reference beside the starters, whose ``name`` is
the problem id, so the public pipeline (which finds a workspace by its lakefile's name) and
ours (by the directory's name, or the same lakefile) both find the problem."""

from __future__ import annotations

import shlex
import stat
import tarfile
from pathlib import Path

import tomllib
from click.testing import CliRunner
from support import correct

from lean_eval.cli import main
from lean_eval.intake.reader import read_submission

PID = "two_plus_two"


def test_the_printed_archive_holds_the_lakefile_and_is_found_by_its_name(
        bench_copy: Path, outside: Path) -> None:
    dest = outside / "work"
    result = CliRunner().invoke(main, ["start-problem", PID, str(dest), "--benchmark",
                                       str(bench_copy)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lakefile = dest / PID / "lakefile.toml"
    assert not lakefile.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    assert tomllib.loads(lakefile.read_text())["name"] == PID
    (line,) = [x.strip() for x in result.stdout.splitlines() if "tar czf" in x]
    argv = shlex.split(line.split("#", 1)[0])
    assert f"{PID}/lakefile.toml" in argv
    (dest / PID / "Submission.lean").write_text(correct(PID))
    archive = outside / "alice-two_plus_two.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        for member in argv[argv.index(str(dest)) + 1:]:
            tar.add(dest / member, arcname=member)
    ids = frozenset({PID, "double_def"})
    intake = read_submission(archive, ids)
    assert [(p.problem_id, p.rejection) for p in intake.problems] == [(PID, None)]
    # renamed (as a repository or gist made from it would be), the lakefile still names it
    (dest / PID).rename(dest / "my-attempt")
    renamed = read_submission(dest, ids)
    assert [(p.problem_id, p.location) for p in renamed.problems] == [(PID, "my-attempt")]
