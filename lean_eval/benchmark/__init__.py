"""The trusted benchmark: its catalog (problems, workspaces, digests, pins, sets), where its
bytes come from (a git revision), problem selection, the Lean toolchain it pins, and the
maintainer's operations on it (import, validation, index, starter layout).

Imports ``supervise`` (git) and the layers below it; never ``intake`` or ``sandbox``.
"""
