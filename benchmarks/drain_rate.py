"""The harness drains a child's output at pipe speed, whatever the shape of its lines.

Issue 7 item 7: the log cap and the phase-line timing must not cost Python work per line. A child
writes ``--megabytes`` of what ``yes`` prints (2-byte lines) and then of 1 KB lines, in 1 MiB
writes from one process (so the producer, not a ``yes | head`` pipeline, is the cheap side),
through ``process.run`` with the driver's output cap; this prints both drain rates in MB/s, the
harness's own CPU seconds, and the ratio, from one run. Target: >= 100 MB/s for both, ratio
near 1. Under load from other processes the wall-clock rates drop; the CPU figure does not.

    python benchmarks/drain_rate.py [--megabytes 400]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

from lean_eval.supervise import process

SHAPES = {"short lines (yes)": "b'y\\n'", "1 KB lines": "b'x' * 1023 + b'\\n'"}
WRITER = ("import os, sys\n"
          "line, size = eval(sys.argv[1]), int(sys.argv[2])\n"
          "block = (line * (1048576 // len(line) + 1))[:1048576]\n"
          "for _ in range(size // len(block)): os.write(1, block)\n"
          "os.write(1, block[: size % len(block)])\n")


def drain(line: str, size: int) -> tuple[float, float]:
    """MB/s at which run() took ``size`` bytes of ``line`` repeated, and the harness CPU time."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.monotonic()
    done = process.run((sys.executable, "-I", "-c", WRITER, line, str(size)), env={},
                       cwd=Path("/"), timeout=600, output_cap=256 * 1024)
    elapsed = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    assert done.returncode == 0, done
    assert done.stdout_truncated, done
    assert f"[... {size - 256 * 1024} bytes omitted ...]".encode() in done.stdout
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return size / elapsed / 1e6, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=400)
    size = parser.parse_args().megabytes * 1_000_000
    results = {name: drain(line, size) for name, line in SHAPES.items()}
    for name, (rate, cpu) in results.items():
        print(f"{name:>18}: {rate:8.1f} MB/s  (harness CPU {cpu:.2f} s)")
    short, long_ = (rate for rate, _ in results.values())
    print(f"{'short / long':>18}: {short / long_:8.2f}")
    print(f"{'target':>18}: >= 100 MB/s each: {'met' if min(short, long_) >= 100 else 'MISSED'}")


if __name__ == "__main__":
    main()
