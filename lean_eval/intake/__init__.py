"""Reading an untrusted submission in memory, within bounds (design §5.2).

Imports ``lean``, ``records``, ``files`` and ``lean_eval.errors``; never ``supervise``
(pyproject.toml's contract, design §2.1).
"""
