"""Issue 31's acceptance on the public material, where local copies of it are present.

Set ``LEAN_EVAL_REAL_HISTORY=<checkout or git dir of leanprover/lean-eval>`` and
``LEAN_EVAL_REAL_RESULTS=<results/ of leanprover/lean-eval-submissions>`` for the audit, and
``LEAN_EVAL_REAL_CATALOG=<checkout of leanprover/lean-eval>`` for the import (each test is
skipped without its variables; nothing is downloaded). At leanprover/lean-eval b91d475 and
leanprover/lean-eval-submissions 03bff19 the audit names exactly the 12 problems and 62
records issue 31 lists; a fresh import of b91d475 warns for each of those problems; an import
of a copy with an uncommitted statement change is refused, and imported with --allow-dirty
records the path.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.histories import git, store_file

from lean_eval.benchmark import audit
from lean_eval.cli import main

HISTORY = os.environ.get("LEAN_EVAL_REAL_HISTORY")
RESULTS = os.environ.get("LEAN_EVAL_REAL_RESULTS")
CATALOG = os.environ.get("LEAN_EVAL_REAL_CATALOG")
UPSTREAM_AT, STORE_AT = "b91d475", "03bff19"  # the commits issue 31 measured
STALE = {"boone_higman_embedding": 6, "boone_higman_simple": 8, "conway_schneeberger_fifteen": 1,
         "dvd_card_connectedComponent_markoffGraph": 5, "feit_thompson": 4,
         "finite_group_isSolvable_of_card_eq_prime_pow_mul_prime_pow": 9,
         "golod_shafarevich_inequality": 5, "halmos_generic_weak_mixing": 5,
         "koszul_formula": 4, "shannon_capacity_pentagon": 3,
         "solvable_by_radicals_converse": 7, "vonNeumann_doubleCommutant_tfae": 5}
pytestmark = pytest.mark.timeout(1800)
needs_store = pytest.mark.skipif(
    not (HISTORY and RESULTS), reason="LEAN_EVAL_REAL_HISTORY and LEAN_EVAL_REAL_RESULTS are "
                                      "not set (local copies of the public repositories)")
needs_catalog = pytest.mark.skipif(not CATALOG, reason="LEAN_EVAL_REAL_CATALOG is not set (a "
                                                       "checkout of leanprover/lean-eval)")


def _at(place: Path, prefix: str) -> bool:
    """Whether the repository holding ``place`` is at a commit starting with ``prefix``."""
    try:
        return git(place, "rev-parse", "HEAD").startswith(prefix)
    except AssertionError:
        return False


@needs_store
def test_the_audit_names_the_stale_records_of_the_public_store(tmp_path: Path) -> None:
    assert HISTORY is not None and RESULTS is not None
    report = audit.audit(Path(RESULTS), Path(HISTORY))
    stale: dict[str, int] = {}
    for record in report.records:
        if record.status == "stale":
            stale[record.problem_id] = stale.get(record.problem_id, 0) + 1
    if report.upstream_commit.startswith(UPSTREAM_AT) and _at(Path(RESULTS), STORE_AT):
        assert stale == STALE
        assert report.counts == {"ok": 1239, "stale": 62, "unknown_commit": 0,
                                 "unknown_problem": 0}
    # the negative control: the same store without what the audit found is clean
    kept: dict[str, list[dict[str, object]]] = {}
    ok = {r.result_id for r in report.records if r.status == "ok"}
    for path in sorted(Path(RESULTS).glob("*.json")):
        data = json.loads(path.read_text())
        kept[data["user"]] = [r for r in data["results"] if r["result_id"] in ok]
    for user, records in kept.items():
        store_file(tmp_path / "clean", user, records)
    again = CliRunner().invoke(main, ["audit-results", "--results-dir", str(tmp_path / "clean"),
                                      "--upstream", HISTORY, "-q"], catch_exceptions=False)
    assert (again.exit_code, again.output) == (0, "")


@needs_catalog
def test_a_fresh_import_warns_and_a_dirty_one_is_refused(outside: Path) -> None:
    assert CATALOG is not None
    src = outside / "lean-eval"
    git(outside, "clone", "-q", CATALOG, str(src))
    runner = CliRunner()
    imported = runner.invoke(main, ["import-catalog", str(src), str(outside / "clean")],
                             catch_exceptions=False)
    assert imported.exit_code == 0, imported.output
    warned = {line.split("'")[1] for line in imported.stderr.splitlines()
              if "without a new statement_revision" in line}
    if _at(src, UPSTREAM_AT):
        assert set(STALE) <= warned, sorted(set(STALE) - warned)
    changed = "generated/tverberg_theorem/Challenge.lean"
    path = src / changed
    path.write_text(path.read_text().replace(" : ", " :  ", 1) + "\ntheorem extra : True := "
                                                                 "trivial\n")
    refused = runner.invoke(main, ["import-catalog", str(src), str(outside / "dirty")],
                            catch_exceptions=False)
    assert refused.exit_code == 2 and changed in refused.stderr
    assert not (outside / "dirty").exists()
    allowed = runner.invoke(main, ["import-catalog", str(src), str(outside / "dirty"),
                                   "--allow-dirty"], catch_exceptions=False)
    assert allowed.exit_code == 0, allowed.output
    record = json.loads((outside / "dirty" / "provenance.json").read_text())
    assert record["uncommitted"] == [changed]
