"""How many of the upstream catalog commits a public results store names import, and whether each
of its records' problems is listed at the record's statement revision (issue 27 item 2).

Needs local copies of the public repositories (nothing is downloaded; skipped unless given):

    LEAN_EVAL_REAL_HISTORY=<git dir of leanprover/lean-eval> \
    LEAN_EVAL_REAL_RESULTS=<results/ directory of leanprover/lean-eval-submissions> \
        python3 benchmarks/historical_imports.py [--scratch DIR] [--json OUT] [--validate]
                                                 [--chain]

For each distinct ``benchmark_commit`` of the store's records, the commit's source layout
(``manifests/``, ``generated/`` and the root pin files) is written by ``git archive`` into a scratch
directory and planned with ``importer.plan_import`` (the commit stated explicitly, as for a
source without ``.git``). Prints one line per commit that does not import, or whose records'
problems are not all listed at their revision, then the totals; ``--validate`` also writes each
import and runs ``validate-catalog`` on it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess  # noqa: TID251 - git archive of each historical commit into a scratch dir
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import tomllib

from lean_eval.benchmark import import_dest, importer
from lean_eval.benchmark.validation import validate_catalog
from lean_eval.errors import LeanEvalError

PATHS = ("manifests", "generated", "lean-toolchain", "lakefile.toml", "lake-manifest.json")


def records(results: Path) -> dict[str, list[tuple[str, int]]]:
    by_commit: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for path in sorted(results.glob("*.json")):
        for rec in json.loads(path.read_bytes())["results"]:
            by_commit[rec["benchmark_commit"]].append((rec["problem_id"],
                                                       rec["statement_revision"]))
    return dict(by_commit)


def archive(git_dir: Path, commit: str, dest: Path) -> None:
    present = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "--name-only",
                              commit, "--", *PATHS], check=True, capture_output=True,
                             text=True).stdout.split()
    dest.mkdir(parents=True)
    tar = subprocess.run(["git", "--git-dir", str(git_dir), "archive", "--format=tar", commit,
                          "--", *present], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=tar, check=True)


def unbumped_changes(git_dir: Path, statements: dict[str, dict[str, dict[str, str]]]
                     ) -> list[str]:
    """Each (problem, revision) whose digest differs between consecutive commits (history
    order): what ``import-catalog --check`` refuses between two imports."""
    order = subprocess.run(["git", "--git-dir", str(git_dir), "rev-list", "--topo-order",
                            "--reverse", "HEAD"], check=True, capture_output=True,
                           text=True).stdout.split()
    position = {c: i for i, c in enumerate(order)}
    seen: dict[tuple[str, str], tuple[str, str]] = {}
    found: list[str] = []
    for commit in sorted(statements, key=lambda c: position.get(c, -1)):
        for pid, by_revision in statements[commit].items():
            for revision, digest in by_revision.items():
                before = seen.get((pid, revision))
                if before is not None and before[1] != digest:
                    found.append(f"{pid} revision {revision}: {before[0][:9]} -> {commit[:9]}")
                seen[(pid, revision)] = (commit, digest)
    return found


def one_commit(history: Path, commit: str, recs: list[tuple[str, int]], scratch: Path,
               validate: bool) -> tuple[dict[str, Any], dict[str, dict[str, str]]]:
    """What importing ``commit`` gives: its report entry and its statement digests."""
    src = scratch / commit
    archive(history, commit, src)
    try:
        plan = importer.plan_import(src, commit=commit)
    except LeanEvalError as exc:
        print(f"{commit[:9]}: refused ({len(recs)} records): "
              + str(exc).replace("\n", " | ")[:600])
        return {"imported": False, "records": len(recs), "error": str(exc)}, {}
    finally:
        shutil.rmtree(src)
    revisions = {rel[len("problems/"):-len(".toml")]:
                 tomllib.loads(data.decode())["statement_revision"]
                 for rel, data in plan.files.items()
                 if rel.startswith("problems/") and rel.count("/") == 1}
    unlisted = sorted({f"{pid}@{rev}" for pid, rev in recs if revisions.get(pid) != rev})
    entry: dict[str, Any] = {
        "imported": True, "records": len(recs), "problems": len(revisions),
        "warnings": sum(1 for n in plan.notes if n.action == "warning"), "unlisted": unlisted}
    if unlisted:
        print(f"{commit[:9]}: imported, {len(unlisted)} record problem(s) not listed at their "
              f"revision: {', '.join(unlisted)}")
    if validate:
        dest = scratch / f"{commit}-import"
        import_dest.write_import(plan, dest)
        findings = validate_catalog(dest).findings
        shutil.rmtree(dest)
        entry["findings"] = [f"{f.path}: {f.message}" for f in findings]
        if findings:
            print(f"{commit[:9]}: validate-catalog: {len(findings)} finding(s), first "
                  f"{findings[0].path}: {findings[0].message}"[:400])
    return entry, json.loads(plan.files["provenance.json"])["statements"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scratch", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--validate", action="store_true",
                        help="Also write each import and run validate-catalog on it.")
    parser.add_argument("--chain", action="store_true",
                        help="Also list each statement whose digest changed between two of the "
                             "commits (in history order) while its statement_revision did not.")
    args = parser.parse_args()
    history, results = (os.environ.get("LEAN_EVAL_REAL_HISTORY"),
                        os.environ.get("LEAN_EVAL_REAL_RESULTS"))
    if not history or not results:
        print("LEAN_EVAL_REAL_HISTORY and LEAN_EVAL_REAL_RESULTS are not both set; not run")
        return 0
    wanted = records(Path(results))
    scratch = Path(tempfile.mkdtemp(prefix="historical-", dir=args.scratch))
    report: dict[str, dict[str, Any]] = {}
    statements: dict[str, dict[str, dict[str, str]]] = {}
    try:
        for commit, recs in sorted(wanted.items()):
            report[commit], statements[commit] = one_commit(Path(history), commit, recs,
                                                            scratch, args.validate)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    imported = [c for c, r in report.items() if r["imported"]]
    listed = sum(r["records"] - len(r["unlisted"]) for r in report.values() if r["imported"])
    total = sum(len(v) for v in wanted.values())
    print(f"{len(imported)} of {len(report)} commits import; {listed} of {total} records' "
          "problems listed at their statement revision")
    if args.validate:
        clean = [c for c in imported if not report[c].get("findings")]
        print(f"{len(clean)} of {len(imported)} imports pass validate-catalog")
    if args.chain:
        changes = unbumped_changes(Path(history), statements)
        for line in changes:
            print(line)
        print(f"{len(changes)} statement change(s) at an unchanged statement_revision between "
              "consecutive imported commits")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
