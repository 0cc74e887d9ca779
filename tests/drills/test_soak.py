"""The soak runner (soak.py) for a few drills, so CI exercises it end to end: every fault it
draws is healed, the checker over the whole history passes, and the summary is printed."""

from __future__ import annotations

import pytest

from .harness import Cluster
from .soak import run_soak, summary_text

pytestmark = pytest.mark.drills


def test_short_soak_passes(cluster: Cluster) -> None:
    summary = run_soak(cluster, drills=3, seed=1)
    print(summary_text(summary))
    assert not summary.stuck, summary.stuck
    assert len(summary.drills) == 3
    assert summary.passed, summary_text(summary)
