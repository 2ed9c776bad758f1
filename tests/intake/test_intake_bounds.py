"""Bounded intake (design §5.2): hostile tar headers cost a bounded time and memory, whatever the
Python patch level (CPython's own pax parser is quadratic before 3.11.10, CVE-2024-6232)."""

from __future__ import annotations

import functools
import gzip
import json
import os
import resource
import sys
import tarfile
from pathlib import Path

import pytest
from support import REPO

from lean_eval.intake.reader import IntakeLimits, read_submission
from lean_eval.supervise.process import run

IDS = frozenset({"P1", "P2"})
PROOF = b"theorem t : True := trivial\n"
RSS_CEILING_KIB = 500 * 1024


def _header(name: str, kind: bytes, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.type, info.size = kind, size
    return info.tobuf(tarfile.USTAR_FORMAT)


def _member(name: str, kind: bytes, data: bytes) -> bytes:
    return _header(name, kind, len(data)) + data + bytes(-len(data) % 512)


def pax_record(body: bytes) -> bytes:
    """One pax record "LEN body\n" (body is "key=value") whose LEN counts itself."""
    length = len(body) + 2
    while len(str(length)) + len(body) + 2 != length:
        length = len(str(length)) + len(body) + 2
    return b"%d %s\n" % (length, body)


def pax_number_bomb() -> bytes:
    """One pax header whose record length is a 4-million-digit number (about 8 KB gzipped)."""
    digits = b"1" * (4 << 20)
    return gzip.compress(_member("././@PaxHeader", tarfile.XHDTYPE, digits)
                         + _member("P1/Submission.lean", tarfile.REGTYPE, PROOF)
                         + bytes(1024), 9)


@functools.cache
def global_key_bomb() -> bytes:
    """A pax global header of two million keys, then four thousand members (about 7 MB)."""
    keys = [b"k%x=" % (i * 2654435761 % (1 << 32)) for i in range(2_000_000)]
    # pax_record of each key, its "LEN " (which depends on the key's length only) built once
    prefix = {n: pax_record(b"k" * n)[:-n - 1] for n in {len(key) for key in keys}}
    records = b"".join(prefix[len(key)] + key + b"\n" for key in keys)
    parts = [_member("pax_global_header", tarfile.XGLTYPE, records)]
    parts += [_member(f"junk/{i}", tarfile.REGTYPE, b"x") for i in range(4000)]
    parts += [_member("P1/Submission.lean", tarfile.REGTYPE, PROOF), bytes(1024)]
    return gzip.compress(b"".join(parts), 6)


def pax_key_bomb() -> bytes:
    """A pax header within the record limit holding thousands of keys."""
    records = b"".join(pax_record(b"a%04d=" % i) for i in range(5000))
    return gzip.compress(_member("././@PaxHeader", tarfile.XHDTYPE, records)
                         + _member("P1/Submission.lean", tarfile.REGTYPE, PROOF) + bytes(1024))


def _intake_in_child(path: Path, limits: IntakeLimits) -> dict[str, object]:
    """Read `path` in a child interpreter: its verdict, peak RSS (KiB) and whether it hung."""
    code = (
        "import json, resource, sys, time\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "from lean_eval.intake.reader import IntakeLimits, read_submission\n"
        "start = time.monotonic()\n"
        f"limits = IntakeLimits.model_validate_json({limits.model_dump_json()!r})\n"
        f"got = read_submission(__import__('pathlib').Path({str(path)!r}), "
        f"frozenset({sorted(IDS)!r}), limits)\n"
        "print(json.dumps({'code': got.rejection_code, 'rejection': got.rejection,\n"
        "  'rss_kib': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,\n"
        "  'seconds': time.monotonic() - start}))\n"
    )
    cap = 2 << 30  # a broken intake fails this test instead of taking the machine down
    outcome = run((sys.executable, "-c", code), env={"PATH": os.environ.get("PATH", "")},
                  cwd=path.parent, timeout=60,
                  rlimits={resource.RLIMIT_AS: (cap, cap)})
    assert not outcome.timed_out, "intake did not finish within a minute"
    assert outcome.returncode == 0, outcome.stderr.decode(errors="replace")[-2000:]
    result: dict[str, object] = json.loads(outcome.stdout)
    return result


@pytest.mark.parametrize("bomb", ["pax_number", "global_keys"])
def test_header_bombs_are_rejected_quickly_in_bounded_memory(tmp_path: Path, bomb: str) -> None:
    data = pax_number_bomb() if bomb == "pax_number" else global_key_bomb()
    path = tmp_path / f"{bomb}.tar.gz"
    path.write_bytes(data)
    size = len(data)
    assert size < 16_000 if bomb == "pax_number" else 3 << 20 < size < 12 << 20
    got = _intake_in_child(path, IntakeLimits())
    assert got["code"] == "limit_exceeded", got
    assert "header record of" in str(got["rejection"]), got
    assert isinstance(got["rss_kib"], int) and got["rss_kib"] < RSS_CEILING_KIB, got


def test_too_many_pax_keys(tmp_path: Path) -> None:
    path = tmp_path / "keys.tgz"
    path.write_bytes(pax_key_bomb())
    intake = read_submission(path, IDS)
    assert intake.rejection_code == "limit_exceeded"
    assert intake.rejection == "archive: a pax header with more than 128 keys at its start"


def test_too_many_global_keys_across_headers(tmp_path: Path) -> None:
    globals_ = [_member("g", tarfile.XGLTYPE, b"".join(
        pax_record(b"k%d_%03d=v" % (j, i)) for i in range(100))) for j in range(3)]
    path = tmp_path / "g.tar"
    path.write_bytes(b"".join(globals_) + _member("P1/Submission.lean", tarfile.REGTYPE, PROOF)
                     + bytes(1024))
    intake = read_submission(path, IDS)
    assert intake.rejection_code == "limit_exceeded"
    assert intake.rejection is not None and "more than 128 pax global keys" in intake.rejection


@pytest.mark.parametrize("kind", [tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK,
                                  tarfile.XGLTYPE, tarfile.XHDTYPE])
def test_every_extension_record_is_bounded(tmp_path: Path, kind: bytes) -> None:
    path = tmp_path / "long.tar"
    path.write_bytes(_member("x", kind, b"a" * 70_000 + b"\0")
                     + _member("P1/Submission.lean", tarfile.REGTYPE, PROOF) + bytes(1024))
    intake = read_submission(path, IDS)
    assert intake.rejection_code == "limit_exceeded"
    assert intake.rejection == (f"archive: a {kind.decode()!r} header record of 70001 bytes at "
                                "its start, over the limit of 65536")


def test_extension_headers_per_member_are_bounded(tmp_path: Path) -> None:
    name = _member("L", tarfile.GNUTYPE_LONGNAME, b"P1/Submission.lean\0")
    path = tmp_path / "many.tar"
    path.write_bytes(name * 5 + _member("x", tarfile.REGTYPE, PROOF) + bytes(1024))
    intake = read_submission(path, IDS)
    assert intake.rejection == ("archive: more than 4 extension headers for one member at its "
                                "start")


def test_pax_and_gnu_long_names_are_read(tmp_path: Path) -> None:
    long_dir = "d" * 120
    path = tmp_path / "names.tar"
    path.write_bytes(
        _member("L", tarfile.GNUTYPE_LONGNAME, f"{long_dir}/P1/Submission.lean\0".encode())
        + _member("ignored", tarfile.REGTYPE, PROOF)
        + _member("x", tarfile.XHDTYPE, pax_record(b"path=P2/Submission.lean") + b"\0\0")
        + _member("short", tarfile.REGTYPE, PROOF) + bytes(1024))
    intake = read_submission(path, IDS)
    assert intake.rejection is None, intake.rejection
    assert [(p.problem_id, p.location) for p in intake.problems] == [
        ("P1", f"{long_dir}/P1"), ("P2", "P2")]


def test_intake_deadline(tmp_path: Path) -> None:
    root = tmp_path / "sub"
    (root / "P1").mkdir(parents=True)
    (root / "P1" / "Submission.lean").write_bytes(PROOF)
    intake = read_submission(root, IDS, IntakeLimits(intake_seconds=1e-9))
    assert intake.rejection_code == "limit_exceeded"
    assert intake.rejection is not None and "intake took longer than 1e-09 s" in intake.rejection
    archive = tmp_path / "sub.tgz"
    archive.write_bytes(gzip.compress(_member("P1/Submission.lean", tarfile.REGTYPE, PROOF)
                                      + bytes(1024)))
    intake = read_submission(archive, IDS, IntakeLimits(intake_seconds=1e-9))
    assert intake.rejection_code == "limit_exceeded"
    assert intake.rejection is not None and "intake took longer than" in intake.rejection
