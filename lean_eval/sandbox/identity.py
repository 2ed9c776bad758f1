"""The identity everything untrusted runs as (SECURITY.md "The sandbox identity").

Invariants:
- A root harness starts the comparator, and so Lake, every build and every kernel, as one
  unprivileged uid and gid with no supplementary groups (``DEFAULT_USER`` unless
  ``--sandbox-user`` names another; never uid or gid 0). ``supervise.reaper`` switches in the
  child after it joined its cgroup and took its rlimits; the reaper itself stays root.
- That identity owns only the pair's writable trees (``scoring.workspace.hand_over``); every
  path it must reach is checked here before anything runs (:func:`unreachable`, stat bits only).
- A harness that is not root cannot switch: everything runs as its own user, and every verdict
  records ``switched: false``.
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import NamedTuple

from lean_eval.errors import SetupError
from lean_eval.records.verdict import Mounts, SandboxIdentity

# Debian's and most distributions' unprivileged account; 65534 when the host has no such name.
DEFAULT_USER = "nobody"
NOBODY_ID = 65534


class SandboxUser(NamedTuple):
    """Who the comparator runs as; ``switched``: the harness is root and changes to it."""

    uid: int
    gid: int
    name: str
    group: str
    switched: bool

    def switch_to(self) -> tuple[int, int] | None:
        """(uid, gid) for the reaper's child, or None: it stays the harness's user."""
        return (self.uid, self.gid) if self.switched else None

    def record(self) -> SandboxIdentity:
        return SandboxIdentity(uid=self.uid, gid=self.gid, name=self.name, group=self.group,
                               switched=self.switched)

    def describe(self) -> str:
        return f"{self.name} (uid {self.uid}, gid {self.gid})"


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def _uid_of(text: str) -> tuple[int, int | None]:
    """(uid, primary gid if the host knows the user)."""
    try:
        entry = pwd.getpwuid(int(text)) if text.isdigit() else pwd.getpwnam(text)
    except KeyError:
        if text.isdigit():
            return int(text), None
        if text == DEFAULT_USER:
            return NOBODY_ID, NOBODY_ID
        raise SetupError(f"--sandbox-user {text}: no such user on this host (give a name "
                         "from /etc/passwd or a number)") from None
    return entry.pw_uid, entry.pw_gid


def _gid_of(text: str) -> int:
    if text.isdigit():
        return int(text)
    try:
        return grp.getgrnam(text).gr_gid
    except KeyError:
        raise SetupError(f"--sandbox-user ...:{text}: no such group on this host (give a name "
                         "from /etc/group or a number)") from None


def resolve(spec: str | None, euid: int | None = None) -> SandboxUser:
    """The identity for ``--sandbox-user USER[:GROUP]`` (None: the default). Not root: the
    harness's own user, unswitched; naming another user then is a SetupError."""
    euid = os.geteuid() if euid is None else euid
    user_text, _, group_text = (spec or DEFAULT_USER).partition(":")
    if not user_text or (spec and ":" in spec and not group_text):
        raise SetupError(f"--sandbox-user {spec!r} is not USER[:GROUP]")
    if euid != 0:
        if spec is not None and _uid_of(user_text)[0] != euid:
            raise SetupError(f"--sandbox-user {spec}: only a root harness can run the sandbox as "
                             f"another user; this one runs as {_user_name(euid)} (uid {euid}) "
                             "and so does its sandbox (SECURITY.md \"The sandbox identity\")")
        return as_harness()
    uid, primary = _uid_of(user_text)
    gid = _gid_of(group_text) if group_text else (uid if primary is None else primary)
    if uid == 0 or gid == 0:
        raise SetupError(f"--sandbox-user {spec or DEFAULT_USER}: the sandbox identity must not "
                         "be root (uid and gid must both differ from 0)")
    return SandboxUser(uid, gid, _user_name(uid), _group_name(gid), switched=True)


def as_harness() -> SandboxUser:
    """The harness's own user, unswitched (what a harness that is not root always gets)."""
    uid, gid = os.geteuid(), os.getegid()
    return SandboxUser(uid, gid, _user_name(uid), _group_name(gid), switched=False)


@cache
def default() -> SandboxUser:
    """The default identity of this process (resolved once)."""
    return resolve(None)


def effective(user: SandboxUser | None) -> SandboxUser:
    """``user``, or the default when a caller left it unset."""
    return default() if user is None else user


# --- reachability (stat bits only: no process is started) ------------------------------------

READ, EXECUTE = 4, 1  # permission bits as in a mode's rwx triplet


def _allowed(info: os.stat_result, uid: int, gid: int, need: int) -> bool:
    """Whether ``uid``:``gid`` without supplementary groups has ``need`` on ``info``."""
    if uid == 0:
        return True
    mode = info.st_mode
    bits = (mode >> 6 if info.st_uid == uid else mode >> 3 if info.st_gid == gid else mode) & 7
    return bits & need == need


class Blocked(NamedTuple):
    """Where the identity is stopped on its way to ``path``."""

    path: Path
    at: Path  # the directory it cannot pass, or ``path`` itself
    mode: int
    owner: int


def blocked(path: Path, user: SandboxUser, need: int,
            stat_of: Callable[[str], os.stat_result] = os.stat) -> Blocked | None:
    """None if ``user`` can pass every directory down to ``path`` (its real path) and has
    ``need`` on it; else the first place it stops. A missing path is not blocked here (the
    check that needs it names it)."""
    real = Path(os.path.realpath(path))
    parts = real.parts
    for depth in range(1, len(parts) + 1):
        here = Path(*parts[:depth])
        try:
            info = stat_of(str(here))
        except OSError:
            return None
        last = depth == len(parts)
        wanted = need if last else EXECUTE
        if last and stat.S_ISDIR(info.st_mode) and need & READ:
            wanted |= EXECUTE
        if not _allowed(info, user.uid, user.gid, wanted):
            return Blocked(path, here, stat.S_IMODE(info.st_mode), info.st_uid)
    return None


def unreachable(user: SandboxUser, needs: Sequence[tuple[str, Path, int]],
                hints: Sequence[tuple[Path, str]] = (),
                stat_of: Callable[[str], os.stat_result] = os.stat) -> SetupError | None:
    """One SetupError naming each needed path ``user`` cannot reach, the directory that blocks
    it and the fix (``hints``: a fix of its own for paths under a directory); None: all reach."""
    if not user.switched:
        return None
    lines = []
    for label, path, need in needs:
        found = blocked(path, user, need, stat_of)
        if found is None:
            continue
        hint = next((h for root, h in hints if Path(os.path.realpath(path)).is_relative_to(
            os.path.realpath(root))), None)
        bits = "o+rx" if need & READ and found.at == Path(os.path.realpath(path)) else "o+x"
        fix = hint or (f"let every user pass it (chmod {bits} {found.at}), or keep it under a "
                       "directory every user can enter, such as /opt")
        lines.append(f"{label} {path} is not reachable by the sandbox identity "
                     f"{user.describe()}: {found.at} (mode {found.mode:04o}, owner "
                     f"{_user_name(found.owner)}) blocks it; {fix}")
    if not lines:
        return None
    return SetupError("; ".join(lines) + ". Or run the sandbox as another identity with "
                      "--sandbox-user USER[:GROUP] (SECURITY.md \"The sandbox identity\")")


def reachable_mounts(mounts: Mounts, user: SandboxUser) -> Mounts:
    """``mounts`` without the masks the switched ``user`` could not reach: bubblewrap runs as
    it and cannot even place a mask there, and what it cannot reach it cannot read anyway."""
    if not user.switched:
        return mounts

    def unreached(path: str) -> bool:
        return blocked(Path(path).parent, user, EXECUTE) is not None

    dropped = sorted(p for p in (*mounts.masks, *mounts.file_masks) if unreached(p))
    if not dropped:
        return mounts
    return mounts.model_copy(update={
        "masks": tuple(p for p in mounts.masks if p not in dropped),
        "file_masks": tuple(p for p in mounts.file_masks if p not in dropped),
        "notes": (*mounts.notes, *(f"{p} lies where the sandbox identity {user.name} cannot "
                                   "pass: not reachable, so not masked" for p in dropped))})
