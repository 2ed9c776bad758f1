"""Where problem directories are (design §4.3): forks, hints, problems named by a rejected
submission, per-pair name limits and import headers, and intakes held without their data."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
from support import fork_archive

from lean_eval.intake.bounds import PATH_MAX, max_path_bytes_under
from lean_eval.intake.reader import Intake, IntakeLimits, ProblemEntry, read_submission

REPO = Path(__file__).resolve().parents[2]

IDS = frozenset({"P1", "P2", "two_plus_two"})
PROOF = b"theorem t : True := trivial\n"


def write(path: Path, data: bytes = PROOF) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def problem(intake: Intake, pid: str) -> ProblemEntry:
    (entry,) = [p for p in intake.problems if p.problem_id == pid]
    return entry


def tar(path: Path, files: dict[str, bytes]) -> Path:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    path.write_bytes(buffer.getvalue())
    return path


# ---------------------------------------------------------------- forks of the benchmark


def test_fork_reads_only_workspaces(tmp_path: Path) -> None:
    root = tmp_path / "fork"
    write(root / "workspaces" / "P1" / "Submission.lean")
    write(root / "workspaces" / "P1" / "Challenge.lean", b"evil")
    write(root / "examples" / "submissions" / "correct" / "P1" / "Submission.lean")
    write(root / "examples" / "submissions" / "correct" / "P2" / "Submission.lean")
    write(root / "P2" / "Submission.lean")
    write(root / "workspaces" / "P3" / "Submission.lean")
    (root / "workspaces" / "P2").mkdir()
    intake = read_submission(root, IDS)
    assert intake.rejection is None
    assert [(p.problem_id, p.location) for p in intake.problems] == [("P1", "workspaces/P1")]
    assert intake.named == ("P1",)
    assert list(intake.ignored) == [
        "P2/: outside workspaces/ of a fork of the benchmark, not read",
        "examples/: outside workspaces/ of a fork of the benchmark, not read",
        "workspaces/P2/: named after problem P2, no Submission.lean",
        "workspaces/P3/: not a catalog problem id, not read"]


# ---------------------------------------------------------------- problems named, hints


def test_duplicate_names_both_problems(tmp_path: Path) -> None:
    write(tmp_path / "a" / "P1" / "Submission.lean")
    write(tmp_path / "b" / "P1" / "Submission.lean")
    write(tmp_path / "P2" / "Submission.lean")
    intake = read_submission(tmp_path, IDS)
    assert intake.rejection is not None and "more than one problem directory" in intake.rejection
    assert intake.problems == ()
    assert intake.named == ("P1", "P2")
    assert intake.hint is None


def test_limit_rejection_names_problems_found_before_it(tmp_path: Path) -> None:
    write(tmp_path / "P1" / "Submission.lean")
    for i in range(20):
        write(tmp_path / "zz" / f"f{i}", b"")
    intake = read_submission(tmp_path, IDS, IntakeLimits(max_files=10))
    assert intake.rejection_code == "limit_exceeded"
    assert intake.named == ("P1",)
    path = tar(tmp_path.parent / "s.tar", {"P2/Submission.lean": PROOF,
                                           **{f"zz/{i}": b"x" * 100 for i in range(5)}})
    intake = read_submission(path, IDS, IntakeLimits(max_total_bytes=300))
    assert intake.rejection_code == "limit_exceeded"
    assert intake.named == ("P2",)


@pytest.mark.parametrize(("files", "fragment"), [
    ({"Submission.lean": PROOF}, "Submission.lean is at the top level: put it in a directory "
                                 "named after the problem id (for example P1/Submission.lean)"),
    ({"two-plus-two/Submission.lean": PROOF}, "two-plus-two/ is not a problem id; did you mean "
                                              "two_plus_two?"),
    ({"x/TwoPlusTwo/Submission.lean": PROOF}, "x/TwoPlusTwo/ is not a problem id; did you mean "
                                              "two_plus_two?"),
    ({"P1/Proof.lean": PROOF}, "P1/ has no Submission.lean"),
    ({"README.md": b"hi"}, "no directory named after a problem id holds a Submission.lean"),
])
def test_no_problem_directory_gives_a_hint(tmp_path: Path, files: dict[str, bytes],
                                           fragment: str) -> None:
    for rel, data in files.items():
        write(tmp_path / "s" / rel, data)
    intake = read_submission(tmp_path / "s", IDS)
    assert intake.problems == () and intake.named == ()
    assert intake.hint is not None and fragment in intake.hint, intake.hint


# ---------------------------------------------------------------- per-pair name limits


def test_path_over_the_workspace_limit_rejects_only_its_problem(tmp_path: Path) -> None:
    deep = "/".join(["A" * 200] * 6)
    path = tar(tmp_path / "s.tar", {"P1/Submission.lean": PROOF,
                                    f"P1/Submission/{deep}/X.lean": PROOF,
                                    "P2/Submission.lean": PROOF})
    intake = read_submission(path, IDS)
    assert intake.rejection is None
    p1 = problem(intake, "P1")
    assert p1.rejection is not None
    assert p1.rejection.startswith("P1/Submission/AAAA")
    assert p1.rejection.endswith("...: a path of 1223 bytes inside the scoring workspace, over "
                                 "the limit of 1024")
    assert p1.rejection_code == "path_rejected"
    assert problem(intake, "P2").rejection is None
    assert problem(read_submission(path, IDS, IntakeLimits(max_path_bytes=2000)), "P1"
                   ).rejection is None


def test_component_over_255_bytes_rejects_only_its_problem(tmp_path: Path) -> None:
    path = tar(tmp_path / "s.tar", {"P1/Submission.lean": PROOF,
                                    f"P1/Submission/{'é' * 128}/x.md": b"",
                                    "P2/Submission.lean": PROOF})
    intake = read_submission(path, IDS)
    assert problem(intake, "P1").rejection == (
        f"P1/Submission/{'é' * 128}: a path component longer than 255 bytes")
    assert problem(intake, "P2").rejection is None


def test_max_path_bytes_under_a_workspace() -> None:
    workspace = "/srv/" + "w" * 100
    assert max_path_bytes_under(workspace) == PATH_MAX - len(workspace) - 2 - 64
    assert max_path_bytes_under("/" + "x" * 5000) == 32


# ---------------------------------------------------------------- import headers


def test_escaped_import_rejects_only_its_problem(tmp_path: Path) -> None:
    write(tmp_path / "P1" / "Submission.lean", b"import Submission.Helpers\n" + PROOF)
    write(tmp_path / "P1" / "Submission" / "Helpers.lean", b"import \xc2\xabEvil\xc2\xbb\n")
    write(tmp_path / "P2" / "Submission.lean", b"/- a --/ import Submission.Helpers\n" + PROOF)
    intake = read_submission(tmp_path, IDS)
    p1 = problem(intake, "P1")
    assert p1.rejection_code == "import_rejected"
    assert p1.rejection == ("P1/Submission/Helpers.lean: import header, line 1: module name "
                            "'«Evil»' is not a chain of plain identifiers (no «...» escapes)")
    assert problem(intake, "P2").rejection is None


# ---------------------------------------------------------------- plans without data


def test_without_data_keeps_digests_and_detects_a_change(tmp_path: Path) -> None:
    write(tmp_path / "P1" / "Submission.lean")
    write(tmp_path / "P1" / "Submission" / "Helpers.lean", b"def h := 1\n")
    first = read_submission(tmp_path, IDS)
    light = first.without_data()
    assert [f.data for f in light.problems[0].files] == [b"", b""]
    assert [(f.relpath, f.sha256) for f in light.problems[0].files] == [
        (f.relpath, f.sha256) for f in first.problems[0].files]
    assert read_submission(tmp_path, IDS).digest == light.digest  # what the batch compares
    write(tmp_path / "P1" / "Submission" / "Helpers.lean", b"def h := 2\n")
    assert read_submission(tmp_path, IDS).digest != light.digest


# ---------------------------------------------------------------- a fork as `git archive` makes it


def test_git_archive_fork_reads_the_solved_workspace_and_the_starters(tmp_path: Path) -> None:
    ids = frozenset(p.name for p in (REPO / "workspaces").iterdir() if p.is_dir())
    proof = b"namespace Submission\ntheorem two_plus_two : 2 + 2 = 4 := rfl\nend Submission\n"
    intake = read_submission(fork_archive(tmp_path / "fork.tar", "two_plus_two", proof), ids)
    assert intake.rejection is None, intake.rejection
    assert intake.named == tuple(sorted(ids))
    for entry in intake.problems:
        assert entry.location == f"workspaces/{entry.problem_id}"
        assert entry.rejection is None, entry.rejection
        files = {f.relpath: f.data for f in entry.files}
        starter = REPO / "workspaces" / entry.problem_id
        if entry.problem_id == "two_plus_two":
            assert files["Submission.lean"] == proof
        else:
            assert files["Submission.lean"] == (starter / "Submission.lean").read_bytes()
        assert files["Submission/Helpers.lean"] == (starter / "Submission/Helpers.lean"
                                                    ).read_bytes()
    assert "examples/: outside workspaces/ of a fork of the benchmark, not read" in intake.ignored
