"""Smoke drill: the image from scripts/images.sh runs a primary and a replica that converge,
and the harness's fault verbs do what they say (a killed replica is gone, a paused one
answers nothing until unpaused, a partitioned one misses writes until healed, then catches up).

Each test starts its own cluster on a fresh network; every wait is bounded.
"""

from __future__ import annotations

import pytest

from .harness import Cluster, DrillError

pytestmark = pytest.mark.drills

CONVERGE_S = 30  # bound on a replica catching up after a write or a heal


def entries(cluster: Cluster, node: str) -> list[tuple[str, dict[str, str]]]:
    return cluster.client(node).xrange("s")


def converged(cluster: Cluster, replica: str, expected: list[tuple[str, dict[str, str]]]) -> bool:
    return entries(cluster, replica) == expected


def test_replica_converges_with_primary(cluster: Cluster) -> None:
    cluster.start_primary("primary")
    cluster.start_replica("replica", primary="primary")
    primary = cluster.client("primary")
    ids = [primary.xadd("s", {"a": str(i)}) for i in range(3)]
    expected = primary.xrange("s")
    assert [e[0] for e in expected] == ids
    cluster.poll(
        lambda: converged(cluster, "replica", expected), CONVERGE_S, "replica has the 3 entries"
    )


def test_fault_verbs(cluster: Cluster) -> None:
    cluster.start_primary("primary")
    cluster.start_replica("r1", primary="primary")
    cluster.start_replica("r2", primary="primary")
    primary = cluster.client("primary")
    primary.xadd("s", {"a": "0"})

    # partition: r1 misses the writes made while it is cut off, then catches up once healed.
    cluster.partition("r1")
    primary.xadd("s", {"a": "1"})
    expected = primary.xrange("s")
    cluster.poll(lambda: converged(cluster, "r2", expected), CONVERGE_S, "r2 has both entries")
    assert len(entries(cluster, "r1")) <= 1, "a partitioned replica received a write"
    cluster.heal("r1")
    cluster.poll(lambda: converged(cluster, "r1", expected), CONVERGE_S, "healed r1 caught up")

    # pause: r2 answers nothing while frozen, and catches up when thawed.
    cluster.pause("r2")
    assert cluster.status("r2") == "paused"
    with pytest.raises(DrillError):
        cluster.poll(lambda: cluster.healthy("r2"), 2, "a paused node answers health checks")
    primary.xadd("s", {"a": "2"})
    expected = primary.xrange("s")
    cluster.unpause("r2")
    cluster.poll(lambda: converged(cluster, "r2", expected), CONVERGE_S, "unpaused r2 caught up")

    # kill: the container is gone at once; the primary keeps taking writes.
    cluster.kill("r2")
    cluster.poll(lambda: cluster.status("r2") == "exited", 10, "killed r2 has exited")
    primary.xadd("s", {"a": "3"})
    assert len(primary.xrange("s")) == 4
