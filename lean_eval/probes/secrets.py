"""What ``sandbox_engaged`` checks of the harness's secrets (SECURITY.md "The sandbox identity").

From inside the sandbox the payload reads every path it is given and reports the SHA-256 of
what it read, or the errno; a check fails only when what was read *is* the secret (a masked
file reads empty). Two kinds of secret:
- the run's ``--sign-key`` (``ProbeContext.secrets``), masked file by file whoever runs the
  harness (``sandbox.masks.run_masks``);
- when the harness is root and switches identity: a secret it plants itself, a 0600 file and
  a 0644 one in a fresh 0700 directory outside every directory Lake masks in any step (so
  only the identity, not a mask, can keep it unread). A harness that is not root runs its
  sandbox as itself and so cannot keep its own files from it: nothing is planted then.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from lean_eval.files.paths import inside_any
from lean_eval.records.probe_result import ProbeCheck
from lean_eval.sandbox.identity import SandboxUser
from lean_eval.sandbox.masks import LAKE_MASKED_ROOTS

# Lake also puts a tmpfs on /run and /var in its build, export and kernel steps.
_LAKE_HIDES = (*LAKE_MASKED_ROOTS, "/run", "/var")
PLANT_PARENTS = ("/srv", "/opt", "/mnt")

# Appended to the sandbox_engaged payload (``spec["secrets"]``: the paths to try).
PAYLOAD = r'''
import hashlib
def secret(path):
    try:
        with open(path, "rb") as f:
            return "read:" + hashlib.sha256(f.read()).hexdigest()
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
ev["secrets"] = {p: secret(p) for p in spec.get("secrets", [])}
'''


class Planted(NamedTuple):
    """The harness's own secret files, by label; ``where`` None: nowhere to plant them."""

    where: Path | None
    files: dict[str, Path]


def plant(token: str, user: SandboxUser) -> Planted:
    """Plant the secrets when ``user`` is switched (module doc); remove them with :func:`clear`."""
    if not user.switched:
        return Planted(None, {})
    for parent in PLANT_PARENTS:
        if not os.path.isdir(parent) or inside_any(os.path.realpath(parent), _LAKE_HIDES):
            continue
        try:
            where = Path(tempfile.mkdtemp(prefix="lean-eval-secret-", dir=parent))
        except OSError:
            continue
        files = {"0600 file": where / "token", "0644 file": where / "shared"}
        for (label, path), mode in zip(files.items(), (0o600, 0o644), strict=True):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(f"{token} {label}\n")
        return Planted(where, files)
    return Planted(None, {})


def clear(planted: Planted) -> None:
    if planted.where is not None:
        shutil.rmtree(planted.where, ignore_errors=True)


def paths(planted: Planted, keys: Sequence[Path]) -> list[str]:
    """Every path the payload tries."""
    return [*map(str, planted.files.values()), *(str(k) for k in keys)]


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def _shown(label: str, path: Path, got: str) -> tuple[bool, str]:
    leaked = got == "read:" + _digest(path)
    said = ("read, and it is the secret" if leaked else
            "read, but not the secret (masked)" if got.startswith("read:") else got)
    return not leaked, f"{label} {path}: {said}"


def checks(ev: Mapping[str, object], planted: Planted, keys: Sequence[Path],
           user: SandboxUser) -> list[ProbeCheck]:
    """``signing_key_unreadable`` when the run signs, ``harness_secrets_unreadable`` when the
    identity is switched."""
    s = ev.get("secrets")
    seen: dict[str, str] = s if isinstance(s, dict) else {}
    found = []
    if keys:
        shown = [_shown("--sign-key", k, str(seen.get(str(k), "missing"))) for k in keys]
        found.append(ProbeCheck(name="signing_key_unreadable", ok=all(ok for ok, _ in shown),
                                evidence="; ".join(text for _, text in shown)))
    if user.switched:
        if planted.where is None:
            found.append(ProbeCheck(
                name="harness_secrets_unreadable", ok=False,
                evidence="no place to plant a secret outside Lake's masks ("
                         + ", ".join(PLANT_PARENTS) + " missing or not writable)"))
        else:
            shown = [_shown(label, p, str(seen.get(str(p), "missing")))
                     for label, p in planted.files.items()]
            found.append(ProbeCheck(
                name="harness_secrets_unreadable", ok=all(ok for ok, _ in shown),
                evidence=f"in 0700 {planted.where} of the harness's user, the build running as "
                         f"{user.describe()}: " + "; ".join(text for _, text in shown)))
    return found
