"""Supervision of what the harness starts: ``process`` (the one module that starts processes)
and its ``reaper``, output capture, per-pair limits, tree removal, kernel locks, interrupts.
Imports ``files``, ``records``, ``lean_eval.errors``."""
