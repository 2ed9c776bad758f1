"""lean-eval: score untrusted Lean 4 proofs against a trusted benchmark inside bubblewrap.

The documented Python API is :mod:`lean_eval.api` (``from lean_eval import api``); it is
imported on first use, so ``import lean_eval`` (and ``lean-eval --help``) stays cheap.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__version__ = "0.1.0"
__all__ = ["__version__", "api"]


def __getattr__(name: str) -> ModuleType:
    """``lean_eval.api`` without importing it first (PEP 562)."""
    if name == "api":
        return importlib.import_module("lean_eval.api")
    raise AttributeError(f"module 'lean_eval' has no attribute {name!r}")
