"""Records: every document lean-eval writes or prints, as frozen pydantic models, with their
committed JSON Schemas (``schemas/``). The vocabulary every other layer speaks.

Imports nothing of the package but ``lean_eval.errors``.
"""
