"""``benchmark.gitread`` against git itself: the state a history walk rebuilds at any commit is
exactly ``git ls-tree``'s listing (hostile path names, merges, side branches and deletions
included), blobs read in batches are the committed bytes, and a listing that does not add up
is an error, never a wrong blob."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.histories import History, git

from lean_eval.benchmark import gitread, statements
from lean_eval.errors import CatalogError
from lean_eval.supervise import process

HOSTILE = ("plain", "with space", "new\nline", "tab\there", ":colon", "\x01start",
           'quo"te', "ünïcödé", "back\\slash")


def listing(repo: Path, commit: str) -> dict[str, str]:
    """What git itself says is under the statement pathspecs at ``commit``."""
    got = process.run_capture(("git", "-C", str(repo), "ls-tree", "-r", "-z", commit),
                              env={"PATH": "/usr/bin:/bin", "HOME": str(repo)}, cwd=repo)
    assert got.returncode == 0, got.stderr
    found = {}
    for entry in got.stdout.split(b"\0"):
        if entry:
            meta, _, raw = entry.partition(b"\t")
            mode, _, name = meta.decode().split(" ")
            path = raw.decode("utf-8", errors="surrogateescape")
            parts = path.split("/")
            wanted = (path == "manifests/problems.toml"
                      or path.startswith("manifests/problems/")
                      or (len(parts) == 3 and parts[0] == "generated"
                          and parts[2] in ("Challenge.lean", "ChallengeDeps.lean")))
            if wanted and mode in ("100644", "100755"):
                found[path] = name
    return found


def test_states_equal_git_listings_across_hostile_names_merges_and_branches(
        tmp_path: Path) -> None:
    h = History(tmp_path / "src")
    for i, name in enumerate(HOSTILE):
        h.manifest(f"p{i}", statement_revision=1)
        h.workspace(name, "t", f"({i} : Nat) = {i}")
    h.single_file([{"id": "early"}])
    commits = [h.commit("hostile names")]
    git(h.root, "checkout", "-q", "-b", "side")
    h.workspace("side_only", "t", "True")
    h.write("generated/with space/ChallengeDeps.lean", "def helper : Nat := 2\n")
    commits.append(h.commit("side: a problem and a deps file"))
    git(h.root, "checkout", "-q", "-")
    h.remove("manifests/problems.toml")
    h.remove("generated/tab\there")
    h.workspace("plain", "t", "(1 : Nat) ≠ 0")
    commits.append(h.commit("main: a deletion and a change"))
    git(h.root, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    commits.append(git(h.root, "rev-parse", "HEAD"))
    h.write("generated/new\nline/Challenge.lean", "")  # an empty blob
    commits.append(h.commit("emptied"))
    repo = gitread.repository(h.root)
    history = gitread.history(repo, [commits[-1], commits[1]], statements.PATHSPECS)
    for commit in commits:
        assert gitread.state_at(history, commit) == listing(h.root, commit), commit
    head = gitread.state_at(history, commits[-1])
    sizes = gitread.objects(repo)
    read = gitread.blobs(repo, set(head.values()), sizes)
    for path, blob in head.items():
        assert read[blob] == (h.root / path).read_bytes(), path


def test_blobs_read_in_many_batches_are_the_same(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    h = History(tmp_path / "src")
    texts = {f"generated/p{i}/Challenge.lean": "x" * i + ("\n" if i % 2 else "")
             for i in range(7)}
    for rel, text in texts.items():
        h.write(rel, text)
    head = h.commit("seven blobs, one empty, some without a final newline")
    repo = gitread.repository(h.root)
    state = gitread.state_at(gitread.history(repo, [head], statements.PATHSPECS), head)
    monkeypatch.setattr(gitread, "_SHOW_CHUNK_NAMES", 2)
    read = gitread.blobs(repo, set(state.values()), gitread.objects(repo))
    assert {rel: read[state[rel]].decode() for rel in texts} == texts


def test_sizes_that_do_not_add_up_are_an_error(tmp_path: Path) -> None:
    h = History(tmp_path / "src")
    h.write("generated/a/Challenge.lean", "theorem a : True := trivial\n")
    h.write("generated/b/Challenge.lean", "theorem b : True := trivial\n-- longer\n")
    head = h.commit("two blobs")
    repo = gitread.repository(h.root)
    state = gitread.state_at(gitread.history(repo, [head], statements.PATHSPECS), head)
    sizes = dict(gitread.objects(repo))
    first, second = sorted(state.values())
    sizes[first] = ("blob", sizes[first][1] + 1)
    sizes[second] = ("blob", sizes[second][1] - 1)  # the same total, split wrongly
    with pytest.raises(CatalogError, match="read back differently"):
        gitread.blobs(repo, [first, second], sizes)
    with pytest.raises(CatalogError, match="not blobs"):
        gitread.blobs(repo, [head], gitread.objects(repo))
