"""Lean source read as text: import headers (lexed as Lean lexes comments and strings),
declarations and their statements, and workspace lakefiles. Used on both sides of the trust
boundary: intake reads submitted headers with it, the benchmark reads its trusted files.

Imports nothing of the package but ``lean_eval.errors``.
"""
