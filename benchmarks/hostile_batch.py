"""A 200-pair batch where 40% of the submissions are hostile: nobody else loses a verdict.

Issue 6's acceptance batch, against the stand-in toolchain under real bubblewrap: 5% each of an
empty submission, duplicate problem directories, a pax-header bomb, a 1,500-deep tree left in
``.lake``, an over-long path, a build that hangs, an output flood and a detached daemon; the
rest are correct. ``run-eval`` runs as a child process (so its peak RSS is its own); this prints
the wall time, the harness's peak RSS, and the verdicts per kind, and fails unless every correct
pair is ``accepted``, every planned pair has a verdict file, and no process of the run survives.

    python benchmarks/hostile_batch.py [--pairs 200] [--jobs 2] [--timeout 10]

Inputs and outputs go under /srv (outside the directories Lake masks itself); root or a
writable /srv is needed.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import shutil
import subprocess  # noqa: TID251 - the harness runs as a child so its RSS is measured alone
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path

from batch_setup import survivors

REPO = Path(__file__).resolve().parent.parent
STANDIN = REPO / "tests" / "standin" / "toolchain"
P = "two_plus_two"
CORRECT = (REPO / "examples" / "submissions" / "correct" / P / "Submission.lean").read_text()
KINDS = ("empty", "duplicate", "pax_bomb", "deep_tree", "long_path", "hang", "flood", "daemon")


def _io(command: str) -> str:
    return CORRECT + f"\n-- standin-io: {command}\n"


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _pax_bomb(path: Path) -> None:
    body = b" size=" + b"1" * (4 << 20) + b"\n"
    record = str(len(body) + 8).encode() + body
    header = tarfile.TarInfo("././@PaxHeader")
    header.type, header.size = tarfile.XHDTYPE, len(record)
    raw = io.BytesIO()
    raw.write(header.tobuf(tarfile.USTAR_FORMAT) + record + b"\0" * (-len(record) % 512))
    member = tarfile.TarInfo(f"{P}/Submission.lean")
    raw.write(member.tobuf(tarfile.USTAR_FORMAT) + b"\0" * 1024)
    path.write_bytes(gzip.compress(raw.getvalue(), 9))


def _long_path(root: Path) -> None:
    _write(root, {f"{P}/Submission.lean": CORRECT})
    fd = os.open(root / P, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in ["Submission"] + ["A" * 200] * 25:
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        os.close(os.open("Deep.lean", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


def make_input(kind: str, base: Path, index: int) -> Path:
    """One submission of ``kind``; its id is ``<kind>-<index>``."""
    root = base / f"{kind}-{index:03d}"
    deep = ("mkdir -p .lake/deep && cd .lake/deep && /usr/bin/python3 -c 'import os; "
            "[(os.mkdir(\"d\" * 10), os.chdir(\"d\" * 10)) for _ in range(1500)]'")
    if kind == "empty":
        root.mkdir()
    elif kind == "duplicate":
        _write(root, {f"a/{P}/Submission.lean": CORRECT, f"b/{P}/Submission.lean": CORRECT})
    elif kind == "pax_bomb":
        root = root.with_name(root.name + ".tar.gz")
        _pax_bomb(root)
    elif kind == "long_path":
        _long_path(root)
    else:
        text = {"correct": CORRECT, "deep_tree": _io(deep), "hang": _io("sleep 100000"),
                "flood": _io("yes | head -c 200000000"),
                "daemon": _io("setsid sh -c 'sleep 100000' >/dev/null 2>&1 &")}[kind]
        _write(root, {f"{P}/Submission.lean": text})
    return root


def bwrap_version() -> str:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        sys.exit("bubblewrap (bwrap) is not on PATH")
    out = subprocess.run([bwrap, "--version"], capture_output=True, text=True, check=True)
    return out.stdout.split()[-1]


def peak_rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def run(args: argparse.Namespace, base: Path) -> int:
    """Build the batch under ``base``, score it, print the figures; 1 on any failed check."""
    per_kind = max(1, args.pairs // 20)
    subs = base / "subs"
    subs.mkdir()
    kinds = [k for k in KINDS for _ in range(per_kind)]
    kinds += ["correct"] * (args.pairs - len(kinds))
    order = sorted(range(len(kinds)), key=lambda i: (i * 7919) % len(kinds))  # interleave
    inputs = {make_input(kinds[i], subs, i): kinds[i] for i in order}
    out = base / "out"
    argv = [sys.executable, "-m", "lean_eval", "run-eval", *map(str, inputs), "--out",
            str(out), "--work-dir", str(base / "work"), "--benchmark", str(REPO),
            "--toolchain", str(STANDIN), "--timeout", str(args.timeout), "--jobs",
            str(args.jobs), "--skip-probes", "-q", "--allow-bwrap-version", bwrap_version()]
    started = time.monotonic()
    child = subprocess.Popen(argv, cwd=base, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env={**os.environ, "PYTHONPATH": str(REPO)})
    peak = 0
    while child.poll() is None:
        peak = max(peak, peak_rss_kib(child.pid))
        time.sleep(0.2)
    stdout, stderr = child.communicate()
    wall = time.monotonic() - started
    summary = json.loads((out / "summary.json").read_text())
    verdicts: dict[str, Counter[str]] = {k: Counter() for k in ("correct", *KINDS)}
    for path, kind in inputs.items():
        verdict = out / path.name.removesuffix(".tar.gz") / f"{P}.json"
        label = json.loads(verdict.read_text())["verdict"] if verdict.exists() else "no pair"
        verdicts[kind][label] += 1
    missing = [p for p in summary["pairs"] if not (out / p["path"]).is_file()]
    time.sleep(1)
    alive = survivors(str(base))
    print(f"pairs: {args.pairs} ({per_kind} of each hostile kind), --jobs {args.jobs}, "
          f"--timeout {args.timeout:g}s, exit code {child.returncode}")
    print(f"wall time: {wall:.1f} s; harness peak RSS: {peak / 1024:.1f} MiB")
    for kind, counts in verdicts.items():
        print(f"  {kind:<10} " + ", ".join(f"{v}: {n}" for v, n in sorted(counts.items())))
    print(f"pairs in summary: {len(summary['pairs'])}, without a verdict file: "
          f"{len(missing)}; surviving processes: {len(alive)}")
    failures = []
    if set(verdicts["correct"]) != {"accepted"}:
        failures.append(f"correct pairs not all accepted: {dict(verdicts['correct'])}")
        for path, kind in inputs.items():
            verdict = out / path.name / f"{P}.json"
            if kind == "correct" and verdict.exists():
                data = json.loads(verdict.read_text())
                if data["verdict"] != "accepted":
                    print(f"  {path.name}: {data['verdict']} {data['reason']}")
                    print("    " + "\n    ".join(data["log"]["tail"][-25:]))
    if missing:
        failures.append(f"pairs without a verdict: {missing[:5]}")
    if alive:
        failures.append(f"survivors: {alive[:5]}")
    if "Traceback" in stdout.decode() + stderr.decode():
        failures.append("a traceback was printed")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=10.0)
    args = parser.parse_args()
    Path("/srv").mkdir(exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="lean-eval-hostile-", dir="/srv"))
    try:
        return run(args, base)
    finally:
        subprocess.run(["chmod", "-R", "u+rwx", str(base)], check=False, capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
