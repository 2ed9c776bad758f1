"""How long `lean-eval --help` takes to start, as a ratio to `python -c pass` in the same run.

The target (issue: newcomer polish) is at most 4x: `--help` must not import pydantic, rich or
the scoring pipeline. Each command is run ROUNDS times alternately and the medians compared.
Usage: python3 benchmarks/cli_startup.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET = 4.0


def _seconds(argv: tuple[str, ...]) -> float:
    """Wall time of one run, output discarded. posix_spawn rather than lean_eval.supervise.process:
    the
    harness's supervision (reaper, process group) would add the same overhead to both sides."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    devnull = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)]
    started = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=devnull)
    _, status = os.waitpid(pid, 0)
    elapsed = time.perf_counter() - started
    assert os.waitstatus_to_exitcode(status) == 0, argv
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    rounds = parser.parse_args().rounds
    baseline_argv = (sys.executable, "-c", "pass")
    # `python -m lean_eval` is what the installed `lean-eval` script runs (its entry point is
    # lean_eval.cli:main), without a launcher such as a pyenv shim in front of it.
    help_argv = (sys.executable, "-m", "lean_eval", "--help")
    base, helps = [], []
    for _ in range(rounds):
        base.append(_seconds(baseline_argv))
        helps.append(_seconds(help_argv))
    b, h = statistics.median(base), statistics.median(helps)
    ratio = h / b
    print(f"python -c pass      median {b * 1000:7.1f} ms over {rounds} runs")
    print(f"lean-eval --help    median {h * 1000:7.1f} ms over {rounds} runs")
    print(f"ratio {ratio:.2f}x (target <= {TARGET:.0f}x): {'OK' if ratio <= TARGET else 'SLOW'}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
