"""Shared pytest configuration: hypothesis profiles selected by ``HYPOTHESIS_PROFILE``.

``ci`` (the default, what CI runs) uses more examples, derandomized, and prints the
blob that reproduces a failure; ``dev`` keeps local iterations fast.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "dev",
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "ci",
    max_examples=100,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
