"""The trusted benchmark: its catalog, where its bytes come from, problem selection, the Lean
toolchain it pins, and the maintainer's operations on it, importing from the lean-eval source
layout (every convention of its history) with the upstream's provenance among them (design
§2.1, §4.1, §4.2, §5.1).

Imports ``supervise`` (git) and the layers below it; never ``intake`` or ``sandbox``.
"""
