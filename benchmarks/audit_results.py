"""How long ``lean-eval audit-results`` takes on a public results store against its catalog's
history, and what it finds (issue 31 item 4; target: the whole public store in at most 60 s).

Needs local copies of the public repositories (nothing is downloaded; skipped unless given):

    LEAN_EVAL_REAL_HISTORY=<checkout or git dir of leanprover/lean-eval> \
    LEAN_EVAL_REAL_RESULTS=<results/ directory of leanprover/lean-eval-submissions> \
        python3 benchmarks/audit_results.py [--json OUT]

Runs ``lean-eval audit-results --json`` once as a child process, as a maintainer runs it (so
the figure includes the interpreter's start-up), and prints the store's size, the statuses,
the stale problems, the wall time and its ratio to the 60 s target.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess  # noqa: TID251 - the command runs as a child, as a maintainer runs it
import sys
import time
from collections import Counter
from pathlib import Path

TARGET_SECONDS = 60.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=None,
                        help="Also write the audit's JSON document here.")
    args = parser.parse_args()
    history, results = (os.environ.get("LEAN_EVAL_REAL_HISTORY"),
                        os.environ.get("LEAN_EVAL_REAL_RESULTS"))
    if not history or not results:
        print("LEAN_EVAL_REAL_HISTORY and LEAN_EVAL_REAL_RESULTS are not both set; not run")
        return 0
    argv = [sys.executable, "-m", "lean_eval", "audit-results", "--results-dir", results,
            "--upstream", history, "--json"]
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, check=False)
    seconds = time.monotonic() - started
    if done.returncode not in (0, 1):
        print(done.stderr.decode(errors="replace"), file=sys.stderr)
        return 2
    report = json.loads(done.stdout)
    records = report["records"]
    commits = {r["benchmark_commit"] for r in records}
    stale = Counter(r["problem_id"] for r in records if r["status"] == "stale")
    print(f"{len(records)} records naming {len(commits)} commits, audited against "
          f"{report['upstream_commit'][:12]}: "
          + ", ".join(f"{n} {status}" for status, n in report["counts"].items()))
    for pid, n in sorted(stale.items()):
        print(f"  stale: {pid} ({n} record(s))")
    print(f"{len(stale)} stale problem(s); exit {done.returncode}")
    print(f"wall {seconds:.2f} s = {seconds / TARGET_SECONDS:.3f} of the {TARGET_SECONDS:.0f} s "
          "target")
    if args.json:
        args.json.write_bytes(done.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
