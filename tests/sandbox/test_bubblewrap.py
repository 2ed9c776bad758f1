"""bubblewrap identity: resolution, setuid refusal and the version floor (CVE-2026-87766)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from lean_eval.errors import SandboxUnavailableError, UsageError
from lean_eval.sandbox import bubblewrap


def _fake(directory: Path, version: str, mode: int = 0o755) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "bwrap"
    path.write_text(f"#!/bin/sh\necho 'bubblewrap {version}'\n")
    path.chmod(mode)
    return path


def test_identity_is_recorded(outside: Path) -> None:
    fake = _fake(outside / "bin", "0.12.0")
    info = bubblewrap.resolve_bwrap(str(fake), {})
    assert info.path == fake and info.version == "0.12.0" and info.minimum == "0.12.0"
    assert info.sha256 == hashlib.sha256(fake.read_bytes()).hexdigest()
    assert info.owner in ("root", str(os.geteuid())) or info.owner
    assert info.setuid is False


def test_old_version_is_refused_unless_allowed(outside: Path) -> None:
    fake = _fake(outside / "bin", "0.8.0")
    with pytest.raises(SandboxUnavailableError, match=r"0\.8\.0.*0\.12\.0.*CVE-2026-87766"):
        bubblewrap.resolve_bwrap(str(fake), {})
    assert bubblewrap.resolve_bwrap(str(fake), {}, allow_version="0.8.0").minimum == "0.8.0"
    assert bubblewrap.resolve_bwrap(str(fake), {}, allow_version="0.8").version == "0.8.0"
    with pytest.raises(SandboxUnavailableError):
        bubblewrap.resolve_bwrap(str(fake), {}, allow_version="0.9.0")


def test_no_allowance_goes_below_the_version_with_disable_userns(outside: Path) -> None:
    """The wrapper passes --disable-userns, which bubblewrap has from 0.8.0 on: an older one is
    refused at setup, naming why, instead of failing every sandbox."""
    older = _fake(outside / "old", "0.7.1")
    with pytest.raises(SandboxUnavailableError, match=r"0\.7\.1.*0\.8\.0 or newer for "
                                                      r"--disable-userns"):
        bubblewrap.resolve_bwrap(str(older), {}, allow_version="0.6.0")
    assert bubblewrap.USERNS_LOCK_VERSION == "0.8.0"
    assert bubblewrap.resolve_bwrap(str(_fake(outside / "new", "0.8.0")), {},
                                    allow_version="0.6.0").version == "0.8.0"


def test_versions_compare_numerically(outside: Path) -> None:
    fake = _fake(outside / "bin", "0.100.0")
    assert bubblewrap.resolve_bwrap(str(fake), {}).version == "0.100.0"
    with pytest.raises(UsageError):
        bubblewrap.parse_version("latest")
    assert bubblewrap.parse_version("0.12") == bubblewrap.parse_version("0.12.0")
    assert bubblewrap.parse_version("0.9.1") < bubblewrap.parse_version("0.12")


@pytest.mark.skipif(os.geteuid() != 0, reason="setting the setuid bit on a root-owned file")
def test_setuid_bwrap_is_refused(outside: Path) -> None:
    fake = _fake(outside / "bin", "0.12.0", 0o4755)
    with pytest.raises(SandboxUnavailableError, match="setuid"):
        bubblewrap.resolve_bwrap(str(fake), {})


def test_path_lookup_skips_planted_and_relative_entries(outside: Path) -> None:
    planted = _fake(outside / "work" / "bin", "0.12.0")
    good = _fake(outside / "good", "0.12.0")
    env = {"PATH": f"work/bin:{planted.parent}:{good.parent}"}
    info = bubblewrap.resolve_bwrap(None, env, writable_roots=[outside / "work"])
    assert info.path == good


def test_no_bwrap_anywhere(outside: Path) -> None:
    with pytest.raises(SandboxUnavailableError, match="no unsandboxed mode"):
        bubblewrap.resolve_bwrap(None, {"PATH": str(outside)})


def test_the_version_is_asked_once_per_binary_and_again_when_its_bytes_change(
        outside: Path) -> None:
    calls, broken = outside / "calls", outside / "broken"
    fake = outside / "bin" / "bwrap"
    fake.parent.mkdir()

    def install(version: str) -> None:
        fake.write_text(f"#!/bin/sh\necho run >> {calls}\n[ -e {broken} ] && exit 1\n"
                        f"echo 'bubblewrap {version}'\n")
        fake.chmod(0o755)

    def asked() -> int:
        return len(calls.read_text().splitlines())

    install("0.12.0")
    broken.touch()
    for _ in range(2):  # a binary that fails is asked again each time
        with pytest.raises(SandboxUnavailableError, match="does not run"):
            bubblewrap.resolve_bwrap(str(fake), {})
    broken.unlink()
    assert [bubblewrap.resolve_bwrap(str(fake), {}).version for _ in range(3)] == ["0.12.0"] * 3
    assert asked() == 3  # the two failures, then one `--version` for three resolutions
    install("0.13.0")  # other bytes at the same path: asked again
    assert bubblewrap.resolve_bwrap(str(fake), {}).version == "0.13.0"
    assert asked() == 4
