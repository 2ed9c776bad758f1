#!/usr/bin/env bash
# The whole check: lint, types, the import layers (pyproject.toml's import-linter contracts),
# the benchmark's own consistency, then every test (pytest exits non-zero when none ran).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m ruff check .
python3 -m mypy
lint-imports
python3 -m lean_eval validate-catalog --benchmark .
python3 -m pytest --durations=25
