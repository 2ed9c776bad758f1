"""Every document lean-eval writes or prints, as frozen models on ``base.Record``, with their
committed JSON Schemas (``schemas/``, written by ``registry``): the vocabulary every other layer
speaks. Imports nothing of the package but ``lean_eval.errors``."""
