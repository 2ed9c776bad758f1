"""Reading an untrusted submission: a directory walk or an archive decoded in memory,
within bounds (``bounds``), into the files of each problem directory it names. Nothing here
starts a process, takes a lock or runs a sandbox (a forbidden contract in pyproject.toml).

Imports ``lean``, ``records``, ``files`` and ``lean_eval.errors``.
"""
