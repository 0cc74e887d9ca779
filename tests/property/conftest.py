"""Property tier: hypothesis profiles.

`ci` (the default) is fixed and fast: derandomized, so every run tests the same examples, and
sized so that the whole tier stays well under a minute on a 2-core machine. `deep` explores far
more and keeps a failure database; select it with XSTREAM_HYPOTHESIS_PROFILE=deep.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=25,
    stateful_step_count=40,
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "deep",
    max_examples=500,
    stateful_step_count=80,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("XSTREAM_HYPOTHESIS_PROFILE", "ci"))
