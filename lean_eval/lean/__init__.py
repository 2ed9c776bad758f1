"""Lean source read as text: import headers, declarations and their statements, workspace
lakefiles; used on both sides of the trust boundary (submitted headers, the benchmark's files).
Imports nothing of the package but ``lean_eval.errors``."""
