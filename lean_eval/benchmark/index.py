"""``workspaces/index.json`` computed in memory from a benchmark's files (``import-catalog``,
design §4.2): the same bytes ``scripts/update_index.py`` writes from a checkout (a test runs
both on an imported catalog).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from lean_eval.benchmark import catalog, provenance
from lean_eval.benchmark.sets import set_files

SCHEMA_VERSION = 1


def index_of(files: Mapping[str, bytes]) -> dict[str, Any]:
    """The index of a benchmark given as relative path -> bytes."""
    ids = sorted(n.removeprefix("problems/").removesuffix(".toml") for n in files
                 if n.startswith("problems/") and n.endswith(".toml") and n.count("/") == 1)
    problems: dict[str, Any] = {}
    for pid in ids:
        trusted: dict[str, str] = {}
        for name in (*catalog.TRUSTED_FILES, *catalog.OPTIONAL_TRUSTED_FILES):
            data = catalog.workspace_file(pid, name, files)
            if data is not None:
                trusted[name] = catalog.sha256(data)
        starter = {name: catalog.sha256(files[f"workspaces/{pid}/{name}"])
                   for name in catalog.STARTER_FILES if f"workspaces/{pid}/{name}" in files}
        problems[pid] = {"starter": starter, "trusted": trusted}
    index: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "problems": problems}
    root = {path: catalog.sha256(files[path])
            for path in (catalog.BENCHMARK_CONFIG, provenance.PROVENANCE,
                         *set_files(files).values()) if path in files}
    if root:
        index["root"] = root
    return index


def render(index: Mapping[str, Any]) -> bytes:
    """The committed bytes of an index."""
    return (json.dumps(index, indent=2, sort_keys=True, ensure_ascii=True) + "\n").encode()
