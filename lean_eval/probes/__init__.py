"""The installation's own checks: the preflight probes (``registry``; one module per probe,
its payloads and synthetic problems) and the two self-checks, each scoring synthetic
submissions through the real scoring path.

Imports ``scoring`` and the layers below it.
"""
