"""The results store's result ids and file names (records: ``records.results_store``). The
declared model is used verbatim; the user is lowercased only in the id and the file name."""

from __future__ import annotations

import hashlib

import rfc8785

RESULT_ID_DOMAIN = b"lean-eval-result-v2\0"


def result_id(user: str, declared_model: str, problem_id: str, statement_revision: int) -> str:
    # rfc8785: the canonical form is the library's, never a hand-tuned json.dumps.
    canonical = rfc8785.dumps([user.lower(), declared_model, problem_id, statement_revision])
    return "r2_" + hashlib.sha256(RESULT_ID_DOMAIN + canonical).hexdigest()


def file_name(user: str) -> str:
    return f"{user.lower()}.json"
