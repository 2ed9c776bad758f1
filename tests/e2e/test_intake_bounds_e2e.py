"""Bounded intake (design §5.2): hostile tar headers cost a bounded time and memory, whatever the
Python patch level (CPython's own pax parser is quadratic before 3.11.10, CVE-2024-6232):
the bombs in a whole run-eval batch (real bubblewrap, the stand-in toolchain)."""

from __future__ import annotations

import functools
import gzip
import tarfile
from pathlib import Path

from support import RunEval, correct, make_submission, no_survivor

PROOF = b"theorem t : True := trivial\n"
GOOD = "two_plus_two"


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


def test_bombs_in_a_batch_cost_only_their_submission(run_eval: RunEval, outside: Path) -> None:
    pax = outside / "paxbomb.tar.gz"
    pax.write_bytes(pax_number_bomb())
    glob = outside / "globalbomb.tar.gz"
    glob.write_bytes(global_key_bomb())
    good = make_submission(outside / "subs", "good", {GOOD: {"Submission.lean": correct(GOOD)}})
    run = run_eval(pax, glob, good)
    output = run.result.output
    assert "Traceback" not in output, output
    assert run.verdict("good", GOOD)["verdict"] == "accepted", output
    summary = run.summary()
    rejected = {s["id"]: s for s in summary["submissions"] if s["rejection"] is not None}
    assert sorted(rejected) == ["globalbomb", "paxbomb"]
    assert all(s["rejection_code"] == "limit_exceeded" for s in rejected.values())
    assert run.code == 0, output
    assert (run.out / "summary.json").is_file()
    no_survivor(outside)
