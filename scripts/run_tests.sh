#!/usr/bin/env bash
# The whole check: lint, types, the import layers (pyproject.toml's import-linter contracts),
# the benchmark's own consistency, then every test (pytest exits non-zero when none ran).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m ruff check .
python3 -m mypy
lint-imports
python3 -m lean_eval validate-catalog --benchmark .
# Python's default bytecode cache, even where the machine turns it off (PYTHONDONTWRITEBYTECODE):
# without it every pytest worker recompiles and re-rewrites every test module, and every child
# `python -m lean_eval` recompiles the package (about a tenth of the suite's CPU time).
unset PYTHONDONTWRITEBYTECODE
# Four workers on two cores: many end-to-end tests wait on sandboxed children or sleeps, so two
# workers leave a core idle; worksteal evens out the few long tests (tests/conftest.py keeps
# each worker's temp files and environment as in a serial run). The ci profile: every Hypothesis
# example count the tests state (the inner loop, -m "not e2e", runs a tenth of each).
python3 -m pytest -n 4 --dist worksteal --durations=25 --hypothesis-profile=ci
