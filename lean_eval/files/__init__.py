"""Files the harness reads and writes itself: atomic writes (never half-written), strict
decoding of JSON and TOML, and path containment.

Imports nothing of the package but ``lean_eval.errors``.
"""
