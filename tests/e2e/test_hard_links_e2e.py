"""Hard links scored end to end (lean_eval/intake/links.py): a submission holding a `cp -al`
copy of its own problem directory, and a tar archive whose hard-link members name earlier
files, are scored like copies, beside an ordinary correct submission, all `accepted`; a link
whose other name is outside the submission rejects its pair, the host file's bytes never
reaching the workspace, and spares the submission's other pair."""

from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path

from support import RunEval, correct, make_submission

GOOD = "two_plus_two"
OTHER = "add_comm_explicit"
SECRET = "-- a host file no submitter may read: 9f1c2e\n"


def _both(base: Path, name: str) -> Path:
    return make_submission(base, name, {GOOD: {"Submission.lean": correct(GOOD)},
                                        OTHER: {"Submission.lean": correct(OTHER)}})


def test_linked_copies_are_scored_and_a_link_to_outside_is_refused(
        run_eval: RunEval, outside: Path) -> None:
    subs = outside / "subs"
    ordinary = _both(subs, "ordinary")
    # `cp -al` of a problem directory into the submission itself: every name inside it
    linked = _both(subs, "linked")
    shutil.copytree(linked / GOOD, linked / "attic" / "draft", copy_function=os.link)
    shutil.copytree(linked / OTHER, linked / "attic" / "older", copy_function=os.link)
    assert (linked / GOOD / "Submission.lean").stat().st_nlink == 2
    # an archive tar wrote from such a tree: its second names are hard-link members
    source = _both(outside / "src", "archived")
    shutil.copytree(source / GOOD, source / "attic" / "draft", copy_function=os.link)
    with tarfile.open(subs / "archived.tgz", "w:gz") as archive:
        archive.add(source / "attic", arcname="attic")  # first: the links name these
        for pid in (GOOD, OTHER):
            archive.add(source / pid, arcname=pid)
    with tarfile.open(subs / "archived.tgz") as archive:
        assert any(m.islnk() and m.name.startswith(GOOD) for m in archive.getmembers())
    # a link to a file outside the submission, as a local user could make one
    leaking = _both(subs, "leaking")
    host_file = outside / "host-secret.lean"
    host_file.write_text(SECRET, encoding="utf-8")
    helper = leaking / OTHER / "Submission" / "Helper.lean"
    helper.parent.mkdir()
    os.link(host_file, helper)

    run = run_eval(ordinary, linked, subs / "archived.tgz", leaking)
    assert run.code == 0, run.result.output
    for sub in ("ordinary", "linked", "archived"):
        for pid in (GOOD, OTHER):
            verdict = run.verdict(sub, pid)
            assert verdict["verdict"] == "accepted", (sub, pid, verdict["reason"])
    assert run.verdict("leaking", GOOD)["verdict"] == "accepted"
    refused = run.verdict("leaking", OTHER)
    assert refused["verdict"] == "invalid_submission"
    assert refused["execution"] == "not_run"
    assert refused["reason"]["message"] == (
        f"{OTHER}/Submission/Helper.lean: hard link: 1 of its 2 names is outside the "
        "submission (a hard link is read as a copy only when every name is inside it)")
    for path in run.out.rglob("*"):
        if path.is_file():
            assert "9f1c2e" not in path.read_text(encoding="utf-8", errors="replace"), path
