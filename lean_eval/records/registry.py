"""Every committed JSON Schema, by file name. ``python3 -m lean_eval.records.registry`` rewrites
``schemas/*.json`` from the models; a test fails when a committed schema drifts from its model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lean_eval.records import audit, documents, replay, results_store, run_report, statement
from lean_eval.records.verdict import Summary, Verdict

SCHEMA_DIR = Path(__file__).parent / "schemas"


def schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schema of each committed model, by file name (printed documents included)."""
    return {
        "verdict.schema.json": Verdict.model_json_schema(),
        "summary.schema.json": Summary.model_json_schema(),
        "probe-report.schema.json": documents.ProbeReport.model_json_schema(),
        "test-report.schema.json": documents.WorkspaceTestReport.model_json_schema(),
        "selfcheck-report.schema.json": documents.SelfCheckReport.model_json_schema(),
        "start-problem-report.schema.json": documents.StartProblemReport.model_json_schema(),
        "catalog-report.schema.json": documents.CatalogReport.model_json_schema(),
        "prepare-report.schema.json": documents.PrepareReport.model_json_schema(),
        "config-report.schema.json": documents.ConfigReport.model_json_schema(),
        "run-report.schema.json": run_report.RunReport.model_json_schema(),
        "run-eval-json.schema.json": run_report.RunEvalDocument.model_json_schema(),
        "error-document.schema.json": run_report.ErrorDocument.model_json_schema(),
        "submission-check.schema.json": documents.SubmissionCheck.model_json_schema(),
        "results-store.schema.json": results_store.UserFile.model_json_schema(),
        "verdict-statement.schema.json": statement.Statement.model_json_schema(),
        "run-statement.schema.json": statement.RunStatement.model_json_schema(),
        "verify-report.schema.json": documents.VerifyReport.model_json_schema(),
        "export-report.schema.json": documents.ExportReport.model_json_schema(),
        "problem-list.schema.json": documents.ProblemList.model_json_schema(),
        "replay-report.schema.json": replay.ReplayReport.model_json_schema(),
        "audit-report.schema.json": audit.AuditReport.model_json_schema(),
    }


def write_schemas() -> None:
    """Rewrite every committed schema from its model."""
    for name, schema in schemas().items():
        (SCHEMA_DIR / name).write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n",
                                       encoding="utf-8")


if __name__ == "__main__":
    write_schemas()
