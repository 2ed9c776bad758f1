"""The sandbox Lake runs a build in: bubblewrap resolved and vetted, the run's mask set, the
generated ``COMPARATOR_BWRAP`` wrapper, the environment Lake sees, and the runner that starts
Lake through them.

Imports ``supervise`` and the layers below it; never ``intake`` or ``benchmark``.
"""
