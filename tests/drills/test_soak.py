"""The soak runner (soak.py) for a few drills, so CI exercises it end to end: every fault it
draws is healed, the checker over the whole history passes, and the summary is printed.

One round of six faults in a seeded order: three of the failover faults, and the three disk
faults (a full disk, fsync EIO, a damaged log), each once."""

from __future__ import annotations

import pytest

from .harness import Cluster
from .soak import run_soak, summary_text

pytestmark = pytest.mark.drills

FAULTS = ("kill", "kill-replica", "pause", "disk-full", "eio", "corrupt")


def test_short_soak_passes(cluster: Cluster) -> None:
    summary = run_soak(cluster, drills=len(FAULTS), seed=1, faults=FAULTS)
    print(summary_text(summary))
    assert not summary.stuck, summary.stuck
    assert sorted(d["fault"] for d in summary.drills) == sorted(FAULTS)
    assert summary.passed, summary_text(summary)
