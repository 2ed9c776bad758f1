"""The sandbox identity (lean_eval/sandbox/identity.py): who it is, what it reaches, and that
the reaper's child really runs as it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lean_eval.errors import SetupError
from lean_eval.records.verdict import Mounts
from lean_eval.sandbox import identity
from lean_eval.sandbox.identity import EXECUTE, READ, SandboxUser
from lean_eval.supervise import process

NOBODY = SandboxUser(65534, 65534, "nobody", "nogroup", switched=True)


def _stat(mode: int, uid: int = 0, gid: int = 0) -> os.stat_result:
    return os.stat_result((mode, 0, 0, 1, uid, gid, 0, 0, 0, 0))


def _tree(entries: dict[str, os.stat_result]):  # type: ignore[no-untyped-def]
    def stat_of(path: str) -> os.stat_result:
        return entries[path]
    return stat_of


DIR, FILE = stat.S_IFDIR, stat.S_IFREG


def test_a_root_harness_switches_to_nobody_by_default() -> None:
    user = identity.resolve(None, euid=0)
    assert user.switched and user.uid != 0 and user.gid != 0
    assert user.switch_to() == (user.uid, user.gid)
    assert user.record().switched is True


def test_an_unprivileged_harness_runs_its_sandbox_as_itself() -> None:
    user = identity.resolve(None, euid=os.geteuid() or 4242)
    assert user.switched is False and user.switch_to() is None
    if os.geteuid() == 0:
        with pytest.raises(SetupError, match="only a root harness"):
            identity.resolve("nobody", euid=4242)


def test_numbers_names_and_groups_resolve() -> None:
    assert identity.resolve("4242:4343", euid=0)[:2] == (4242, 4343)
    assert identity.resolve("4242", euid=0)[:2] == (4242, 4242)  # unknown uid: its own number
    with pytest.raises(SetupError, match="must not be root"):
        identity.resolve("0", euid=0)
    with pytest.raises(SetupError, match="must not be root"):
        identity.resolve("4242:0", euid=0)
    with pytest.raises(SetupError, match="no such user"):
        identity.resolve("no-such-user-here", euid=0)
    with pytest.raises(SetupError, match="USER"):
        identity.resolve("4242:", euid=0)


def test_a_0700_directory_blocks_and_is_named() -> None:
    tree = _tree({"/": _stat(DIR | 0o755), "/root": _stat(DIR | 0o700),
                  "/root/tc": _stat(DIR | 0o755), "/root/tc/lake": _stat(FILE | 0o755)})
    found = identity.blocked(Path("/root/tc/lake"), NOBODY, EXECUTE, tree)
    assert found is not None and found.at == Path("/root") and found.mode == 0o700
    error = identity.unreachable(NOBODY, [("its lake", Path("/root/tc/lake"), EXECUTE)],
                                 stat_of=tree)
    assert error is not None
    assert ("its lake /root/tc/lake is not reachable by the sandbox identity nobody (uid "
            "65534, gid 65534): /root (mode 0700, owner root) blocks it") in str(error)
    assert "chmod o+x /root" in str(error) and "--sandbox-user" in str(error)
    unswitched = NOBODY._replace(switched=False)
    assert identity.unreachable(unswitched, [("x", Path("/root/tc/lake"), EXECUTE)],
                                stat_of=tree) is None


def test_owner_group_and_other_bits_are_each_the_right_ones() -> None:
    tree = _tree({"/": _stat(DIR | 0o755), "/d": _stat(DIR | 0o750, uid=0, gid=65534),
                  "/d/f": _stat(FILE | 0o640, uid=0, gid=65534),
                  "/e": _stat(DIR | 0o705, uid=0, gid=65534)})
    assert identity.blocked(Path("/d/f"), NOBODY, READ, tree) is None  # by its group
    assert identity.blocked(Path("/d/f"), NOBODY._replace(gid=1), READ, tree) is not None
    # the group's bits decide for a member, even where "other" would allow it
    assert identity.blocked(Path("/e"), NOBODY, EXECUTE, tree) is not None


@given(mode=st.integers(min_value=0, max_value=0o777), owner=st.booleans(),
       group=st.booleans())
def test_passing_a_directory_is_its_one_execute_bit(mode: int, owner: bool,
                                                    group: bool) -> None:
    info = _stat(DIR | mode, uid=65534 if owner else 0, gid=65534 if group else 0)
    tree = _tree({"/": _stat(DIR | 0o755), "/d": info, "/d/f": _stat(FILE | 0o755)})
    bit = 0o100 if owner else 0o010 if group else 0o001
    passes = identity.blocked(Path("/d/f"), NOBODY, EXECUTE, tree) is None
    assert passes == bool(mode & bit)


def test_masks_the_identity_cannot_reach_are_dropped_and_noted(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs a directory the identity cannot pass while the harness can")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o700)
    (locked / "key.pem").write_text("k")
    open_dir = tmp_path / "open"
    open_dir.mkdir(mode=0o755)
    (open_dir / "key.pem").write_text("k")
    mounts = Mounts(masks=(str(locked / "sub"),),
                    file_masks=(str(locked / "key.pem"), str(open_dir / "key.pem")))
    kept = identity.reachable_mounts(mounts, NOBODY)
    assert kept.masks == () and kept.file_masks == (str(open_dir / "key.pem"),)
    assert len(kept.notes) == 2
    assert identity.reachable_mounts(mounts, NOBODY._replace(switched=False)) == mounts


def test_the_reapers_child_runs_as_the_identity_without_supplementary_groups(
        tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root switches identity")
    done = process.run(("/bin/sh", "-c", "id -u; id -g; id -G; cat /proc/self/status"),
                       env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path, timeout=30,
                       user=(65534, 65533))
    lines = done.stdout.decode().splitlines()
    assert lines[:3] == ["65534", "65533", "65533"], lines
    status = dict(line.split(":", 1) for line in lines[3:] if ":" in line)
    assert status["Uid"].split() == ["65534"] * 4  # real, effective, saved, fs: no way back
    assert status["CapEff"].strip().strip("0") == ""
    assert status["Groups"].strip() == ""
