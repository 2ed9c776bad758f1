"""Supervision of what the harness starts: the one module that starts processes
(``process``, with its ``reaper``), bounded output capture, per-pair resource limits (cgroups,
``/proc`` and disk accounting, the watchdog), removal of trees a build left, kernel locks and
interrupts.

Imports ``files``, ``records``, ``lean_eval.errors``.
"""
