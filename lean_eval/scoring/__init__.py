"""Scoring a batch: the run's options and arguments, its plan (every input read once, resume
and shards decided), the admission loop and its workers, one pair end to end (workspace,
driver, classification, verdict) and the run's summary.

Imports ``sandbox``, ``intake``, ``benchmark`` and the layers below them.
"""
