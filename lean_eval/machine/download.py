"""Pinned downloads for ``lean-eval prepare``, fetched (or taken from ``--offline DIR``) and
checked against their SHA-256 before anything reads them. Only ``https://`` or ``file:///``
URLs are fetched, at most ``_MAX_DOWNLOAD`` bytes of one; a file whose digest differs from the
pin is removed before anything unpacks it; ``unpack_member`` writes one regular member with a
plain relative name, nothing else.
"""

from __future__ import annotations

import hashlib
import shutil
import stat
import tarfile
import urllib.request
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from lean_eval.errors import PrepareError

_MAX_DOWNLOAD = 256 * 1024 * 1024


class Archive(NamedTuple):
    """A pinned download: its file name (also its name in ``--offline DIR``), URL and digest."""

    name: str
    url: str
    sha256: str


def fetch_verified(archive: Archive, offline: Path | None, into: Path, hint: str) -> Path:
    """The archive, from ``offline`` or downloaded into ``into``, its digest checked;
    PrepareError on any difference, ending with ``hint`` when the archive cannot be had."""
    target = into / archive.name
    if offline is not None:
        source = offline / archive.name
        if not source.is_file():
            raise PrepareError(f"--offline: {source} does not exist (expected {archive.url}); "
                               + hint)
        shutil.copyfile(source, target)
    else:
        if not archive.url.startswith(("https://", "file:///")):
            raise PrepareError(f"{archive.url}: only https:// (or file:///) URLs are fetched")
        try:
            with urllib.request.urlopen(archive.url, timeout=60) as response, \
                    target.open("wb") as out:  # noqa: S310 (scheme checked above)
                while chunk := response.read(1 << 20):
                    if out.tell() + len(chunk) > _MAX_DOWNLOAD:
                        raise PrepareError(f"{archive.url} is larger than {_MAX_DOWNLOAD} bytes")
                    out.write(chunk)
        except OSError as exc:
            raise PrepareError(f"cannot download {archive.url}: {exc}; " + hint) from exc
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    if digest != archive.sha256:
        target.unlink()
        raise PrepareError(f"{archive.name}: SHA-256 {digest} differs from the pinned "
                           f"{archive.sha256}; refused before unpacking")
    return target


def unpack_member(tar_path: Path, member_name: str, into: Path) -> Path:
    """The first regular member named ``member_name`` (at any depth, under a plain relative
    name) written into ``into``, owner-executable; PrepareError when there is none."""
    with tarfile.open(tar_path, mode="r:*") as tar:
        for member in tar:
            parts = PurePosixPath(member.name).parts
            if member.isfile() and parts and parts[-1] == member_name \
                    and ".." not in parts and not PurePosixPath(member.name).is_absolute():
                handle = tar.extractfile(member)
                if handle is None:
                    break
                out = into / member_name
                out.write_bytes(handle.read())
                out.chmod(stat.S_IRWXU)
                return out
    raise PrepareError(f"{tar_path.name} holds no regular file {member_name}")
