#!/usr/bin/env python3
"""lean-eval probe `comparator`: the installed comparator accepts and rejects as specified,
and never accepts without NanoDa or without a working sandbox.

Scores a synthetic submission through the same driver, wrapper, masks, PATH filtering and
environment allowlist as `lean-eval run-eval` (the probe: lean_eval/probes/comparator.py).

    python scripts/security_probes/comparator_probe.py [--toolchain DIR] [--bwrap PATH]
        [--allow-bwrap-version MIN] [--scratch DIR] [--json]

Exit 0: pass, 1: fail, 2: could not run (e.g. the toolchain or bubblewrap cannot be resolved).
"""

import sys
from pathlib import Path

try:
    import lean_eval  # noqa: F401
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from lean_eval.cli import main

if __name__ == "__main__":  # `lean-eval probe-script NAME ...`: the CLI parses the options
    main(["probe-script", "comparator", *sys.argv[1:]], prog_name=Path(sys.argv[0]).name)
