"""The problem id rule: a manifest and an output directory accept exactly the ids it matches
(none can be ``..``, hold a ``/`` or a control character). The results store reads any
non-empty id, as the public store does (``records.results_store``); it only writes ids a
catalog accepted."""

from __future__ import annotations

import re

PROBLEM_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_]{0,127}$")
