"""The sandbox Lake runs a build in: bubblewrap vetted, the run's masks, the ``COMPARATOR_BWRAP``
wrapper, Lake's environment, and the runner that starts Lake through them. Imports ``supervise``
and the layers below it; never ``intake`` or ``benchmark``."""
