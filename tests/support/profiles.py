"""Hypothesis profiles: ``ci`` runs every property test with the example counts its module
states (Hypothesis's own default, 100, where it states none); ``dev``, the inner loop's, runs a
tenth of each. tests/conftest.py loads ``ci`` under CI=true and ``dev`` otherwise;
scripts/run_tests.sh (the whole check) passes ``--hypothesis-profile=ci``."""

from __future__ import annotations

from hypothesis import settings

CI = "ci"
DEV = "dev"
FULL = 100  # Hypothesis's default max_examples: the ci profile's, and the scale of examples()
settings.register_profile(CI, max_examples=FULL)
settings.register_profile(DEV, max_examples=FULL // 10)


def examples(count: int) -> int:
    """``count`` examples under the ``ci`` profile, the same share of it as the loaded
    profile's max_examples is of :data:`FULL` otherwise (never fewer than 5)."""
    return max(5, count * settings().max_examples // FULL)
