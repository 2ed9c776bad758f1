"""Making a machine ready to score (``lean-eval prepare``): elan and the pinned release,
bubblewrap, the shared packages, each download pinned and checked.

Imports ``scoring`` and the layers below it.
"""
