"""Git histories of a benchmark's source built commit by commit in a test (issue 31): a
``History`` writes files in the lean-eval source layout and commits them, and ``store_file``
writes a results store's ``<user>.json`` naming its commits. Fixture text only: the statements
are this suite's own."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomli_w

from lean_eval.outputs.results_store import result_id
from lean_eval.supervise import process

GIT_ENV = {"PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid"}


def git(repo: Path, *args: str) -> str:
    """git's stdout in ``repo``, asserting it succeeded."""
    got = process.run_capture(("git", "-C", str(repo), *args),
                              env={**GIT_ENV, "HOME": str(repo)}, cwd=repo)
    assert got.returncode == 0, got.stderr
    return got.stdout.decode().strip()


def challenge(name: str, statement: str, comment: str = "") -> str:
    """A Challenge.lean whose one hole ``name`` states ``statement``."""
    doc = f"/-- {comment} -/\n" if comment else ""
    return f"import Mathlib\n\n{doc}theorem {name} : {statement} := by\n  sorry\n"


class History:
    """A git repository in the source layout, committed step by step."""

    def __init__(self, root: Path, copy_of: Path | None = None) -> None:
        self.root = root
        if copy_of is not None:
            shutil.copytree(copy_of, root)
        root.mkdir(parents=True, exist_ok=True)
        git(root, "init", "-q")
        for name in ("lean-toolchain", "lakefile.toml", "lake-manifest.json"):
            if not (root / name).exists():
                self.write(name, {"lean-toolchain": "leanprover/lean4:v4.22.0\n",
                                  "lakefile.toml": 'name = "fixture"\n',
                                  "lake-manifest.json": "{}\n"}[name])

    def write(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def remove(self, rel: str) -> None:
        path = self.root / rel
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()

    def single_file(self, tables: list[dict[str, Any]]) -> None:
        """Every manifest in one ``manifests/problems.toml`` (the earliest layout)."""
        self.write("manifests/problems.toml", tomli_w.dumps({"version": 1, "problem": tables}))

    def manifest(self, pid: str, **table: Any) -> None:
        """One ``manifests/problems/<pid>.toml`` (the later layout)."""
        self.write(f"manifests/problems/{pid}.toml", tomli_w.dumps({"id": pid, **table}))

    def workspace(self, pid: str, hole: str, statement: str, comment: str = "") -> None:
        self.write(f"generated/{pid}/Challenge.lean", challenge(hole, statement, comment))

    def commit(self, message: str) -> str:
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "--allow-empty", "-m", message)
        return git(self.root, "rev-parse", "HEAD")


def store_record(user: str, pid: str, revision: int, commit: str,
                 model: str = "Fixture model") -> dict[str, Any]:
    """One record of a results store (schema version 2) as the public pipeline writes it."""
    return {"result_id": result_id(user, model, pid, revision), "problem_id": pid,
            "statement_revision": revision, "declared_model": model,
            "accepted_at": "2026-05-01T00:00:00Z", "benchmark_commit": commit,
            "intake": {"kind": "issue", "issue_number": 1},
            "submission": {"kind": "gist", "repo": f"{user}/0123abcd", "ref": "a" * 40,
                           "public": True},
            "production_metadata": {}}


def store_file(results: Path, user: str, records: list[Mapping[str, Any]]) -> Path:
    """``results/<user>.json`` holding ``records``."""
    results.mkdir(parents=True, exist_ok=True)
    path = results / f"{user.lower()}.json"
    path.write_text(json.dumps({"schema_version": 2, "user": user, "results": list(records)},
                               indent=2) + "\n")
    return path
