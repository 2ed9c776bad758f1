"""The problem id rule: a manifest, an output directory and the results store accept exactly
the ids it matches (none can be ``..``, hold a ``/`` or a control character)."""

from __future__ import annotations

import re

PROBLEM_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_]{0,127}$")
