"""What happens to an output directory after a run: reading it back (``outdir``), merging
shards, replaying, exporting to a results store, signing and verifying verdicts, and
``report/`` (one module per format).

Imports ``scoring`` and the layers below it.
"""
