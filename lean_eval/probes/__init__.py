"""The installation's own checks: the preflight probes (``registry``, one module per probe) and
the two self-checks, scoring synthetic submissions through ``scoring`` as a library. Imports
``scoring`` and the layers below it."""
