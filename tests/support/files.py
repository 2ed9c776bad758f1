"""Files: benchmark copies, submissions, archives and signing keys."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import shutil
import tarfile
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from lean_eval.supervise import process
from support.places import BENCHMARK_FILES, CORRECT, PROBLEM, REPO


def copy_benchmark(path: Path) -> None:
    """The benchmark files of this repository (``BENCHMARK_FILES``) copied into ``path``."""
    for name in BENCHMARK_FILES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, path / name, ignore=shutil.ignore_patterns(".lake"))
        else:
            shutil.copy2(source, path / name)


def _update_index() -> ModuleType:
    spec = importlib.util.spec_from_file_location("update_index", REPO / "scripts" /
                                                  "update_index.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


UPDATE_INDEX = _update_index()


def changed_benchmark(outside: Path, change: Callable[[Path], None], *,
                      reindex: bool = True) -> Path:
    """A copy of the benchmark with ``change`` applied and (by default) the index regenerated,
    so that the fault under test is not hidden behind a digest mismatch."""
    root = outside / "bench"
    root.mkdir(parents=True)
    copy_benchmark(root)
    change(root)
    if reindex:
        assert UPDATE_INDEX.main(["--root", str(root)]) == 0
    return root


def rehash_trusted(bench: Path, problem: str, name: str) -> None:
    """Record the current digest of ``problem``'s trusted file ``name`` in the index."""
    index_path = bench / "workspaces" / "index.json"
    index = json.loads(index_path.read_text())
    data = (bench / "workspaces" / problem / name).read_bytes()
    index["problems"][problem]["trusted"][name] = hashlib.sha256(data).hexdigest()
    index_path.write_text(json.dumps(index, indent=2))


def write_tree(base: Path, files: Mapping[str, str | bytes]) -> Path:
    """Create files under ``base`` from a relpath -> content mapping."""
    for rel, content in files.items():
        target = base / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return base


def correct(problem: str, rel: str = "Submission.lean") -> str:
    """The example correct submission file of ``problem``."""
    return (CORRECT / problem / rel).read_text(encoding="utf-8")


def starter(problem: str, rel: str = "Submission.lean") -> str:
    """The benchmark's starter file of ``problem``."""
    return (REPO / "workspaces" / problem / rel).read_text(encoding="utf-8")


def with_lines(problem: str, *lines: str) -> str:
    """The correct proof of ``problem`` with extra lines appended (directives, payloads)."""
    return correct(problem) + "\n" + "\n".join(lines) + "\n"


def sh_payload(command: str) -> str:
    """Run ``command`` during the Solution build, in both forms (design §7): a real Lean
    ``#eval`` for a real toolchain and a ``-- standin-io:`` line for the stand-in."""
    quoted = command.replace("\\", "\\\\").replace('"', '\\"')
    return (f"-- standin-io: {command}\n"
            f'#eval show IO Unit from do\n'
            f'  let out ← IO.Process.output {{ cmd := "/bin/sh", args := #["-c", "{quoted}"] }}\n'
            f"  IO.println out.stdout")


def make_submission(base: Path, name: str, problems: Mapping[str, Mapping[str, str | bytes]]
                    ) -> Path:
    """A submission directory ``base/name`` with one problem directory per entry."""
    root = base / name
    root.mkdir(parents=True)
    for problem, files in problems.items():
        write_tree(root / problem, files)
    return root


def good(subs: Path) -> Path:
    """The submission ``good``: a correct proof of ``PROBLEM``."""
    return make_submission(subs, "good", {PROBLEM: {"Submission.lean": correct(PROBLEM)}})


def sleeper(base: Path, name: str, seconds: float, *extra: str) -> Path:
    """A correct proof of ``PROBLEM`` whose build sleeps ``seconds`` (sleep-bound, not
    CPU-bound)."""
    text = with_lines(PROBLEM, sh_payload(f"sleep {seconds}"), *extra)
    return make_submission(base, name, {PROBLEM: {"Submission.lean": text}})


SOLVED = {  # the imported SOURCE problems solved() solves, and how
    "scaled_norm": ("  sorry\n", "  simp\n"),
    "widget_facts": None,  # several holes: see solved()
    "counter_where": ("count := sorry", "count := fun n => n"),
}


def solved(src: Path, pid: str) -> str:
    """A solved submission of the imported ``SOURCE`` catalog (imported into ``src``): the
    starter with each ``sorry`` replaced by a proof."""
    text = (src / "generated" / pid / "Submission.lean").read_text(encoding="utf-8")
    if pid == "widget_facts":
        for old, new in (("def widget : ℕ := sorry", "def widget : ℕ := 1"),  # noqa: RUF001
                         ("Fact (0 < widget) := sorry", "Fact (0 < widget) := ⟨by decide⟩"),
                         ("Inhabited Carrier := sorry", "Inhabited Carrier := ⟨⟨0, by decide⟩⟩"),
                         ("  sorry\n", "  simp [widget]\n")):
            assert old in text
            text = text.replace(old, new)
    else:
        old, new = SOLVED[pid] or ("", "")
        assert old in text
        text = text.replace(old, new)
    assert "sorry" not in text
    return text


def sparse(path: Path, size: int) -> None:
    """A file of `size` bytes that takes no disk space (reading it would still cost `size`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        handle.truncate(size)


def tgz(path: Path, members: list[tuple[str, bytes | int]]) -> Path:
    """A .tar.gz of regular members; an int stands for that many zero bytes, streamed."""
    compressor = zlib.compressobj(1, zlib.DEFLATED, 31)
    parts: list[bytes] = []
    for name, content in members:
        info = tarfile.TarInfo(name)
        info.size = content if isinstance(content, int) else len(content)
        parts.append(compressor.compress(info.tobuf(tarfile.GNU_FORMAT)))
        if isinstance(content, int):
            chunk = bytes(1 << 20)
            parts.extend(compressor.compress(chunk) for _ in range(content // len(chunk)))
            parts.append(compressor.compress(bytes(content % len(chunk))))
        else:
            parts.append(compressor.compress(content))
        parts.append(compressor.compress(bytes(-info.size % 512)))
    parts.append(compressor.compress(bytes(1024)) + compressor.flush())
    path.write_bytes(b"".join(parts))
    return path


def fork_archive(dest: Path, solved: str, proof: bytes) -> Path:
    """`git archive HEAD` of this repository with `solved`'s Submission.lean replaced."""
    got = process.run_capture(("git", "-C", str(REPO), "archive", "--format=tar", "HEAD"),
                              env={"PATH": "/usr/bin:/bin"}, cwd=REPO)
    if got.returncode != 0 or got.stdout_truncated:
        pytest.skip(f"git archive of the repository failed: {got.stderr[-300:]!r}")
    target = f"workspaces/{solved}/Submission.lean"
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(got.stdout), mode="r:") as source, \
            tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as fork:
        fork.pax_headers = dict(source.pax_headers)
        for member in source.getmembers():
            handle = source.extractfile(member) if member.isreg() else None
            data = handle.read() if handle is not None else None
            if member.name == target:
                data, member.size = proof, len(proof)
            fork.addfile(member, io.BytesIO(data) if data is not None else None)
    dest.write_bytes(out.getvalue())
    return dest


def keypair(base: Path, name: str = "key") -> tuple[Path, Path]:
    """A PKCS#8 PEM Ed25519 private key (what `openssl genpkey -algorithm ed25519` writes)
    and its SubjectPublicKeyInfo PEM (what `openssl pkey -pubout` writes)."""
    key = Ed25519PrivateKey.generate()
    private = base / f"{name}.pem"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    public = base / f"{name}.pub"
    public.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public
