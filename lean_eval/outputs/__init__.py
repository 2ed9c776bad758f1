"""An output directory after its run: read back (``outdir``), merged, replayed, exported,
signed and verified, reported (``report/``). Imports ``scoring`` and the layers below it."""
