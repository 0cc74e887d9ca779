"""Failover drills: etcd and three `xstream node` containers (--lease-ttl 2, --expect-replicas
2), writers running through each fault, then the Jepsen-style checker over what every node
holds once the cluster settles. Each test reads as the issue's sentence it checks.

    1 kill -9 the primary          no quorum-acked entry lost, no duplicate (IDMP retries)
    2 pause it past its lease      it acks nothing once the new epoch exists; it rejoins
    3 partition it with a writer   the minority stops acking within the lease; leader-acked
                                   losses are reported, quorum-acked ones never happen
    4 kill two primaries in a row  the spared replica resyncs partially both times
    5 consumer group failover      nothing acked is redelivered; group state identical

Every test prints its `Run.line()` (fault, recovery time, checker totals); recovery times are
recorded, not asserted. Every wait is bounded (scenarios.py); node logs go to failed reports.
"""

from __future__ import annotations

import pytest

from .groups import groups_failover
from .harness import Cluster
from .history import History
from .scenarios import (
    ACK_MARGIN,
    LEASE_TTL,
    Drill,
    Run,
    double_kill,
    kill_primary,
    partition_primary,
    pause_primary,
    start_nodes,
)

pytestmark = pytest.mark.drills


@pytest.fixture
def drill(cluster: Cluster) -> Drill:
    start_nodes(cluster)
    return Drill(cluster, History())


def assert_checked(run: Run) -> None:
    """The checker's verdict: nothing quorum-acked lost, no duplicate, nothing unexpected or
    out of order, every node the same entries and digest."""
    print(run.line())
    print({k: v for k, v in run.notes.items() if k != "group_states"})
    assert run.report.passed, run.line()
    assert run.report.ok > 0, "no write was acknowledged at all"


def test_kill_primary_loses_no_quorum_write(drill: Drill) -> None:
    run = kill_primary(drill)
    assert_checked(run)
    assert run.new_primary != run.old_primary
    assert run.report.duplicated == []


def test_paused_primary_acks_nothing_after_the_new_epoch(drill: Drill) -> None:
    run = pause_primary(drill)
    assert_checked(run)
    assert run.notes["acked_after_new_epoch"] == [], run.notes
    assert run.notes["paused_s"] > LEASE_TTL
    info = drill.cluster.node_info(run.old_primary)
    assert info.role == "replica" and not info.deposed, "the thawed primary rejoined as replica"


def test_partitioned_primary_stops_acking_within_its_lease(drill: Drill) -> None:
    run = partition_primary(drill)
    assert_checked(run)
    assert run.notes["minority_acked_s"] <= LEASE_TTL + ACK_MARGIN, run.notes
    print(f"leader-acked writes lost (allowed): {len(run.report.lost_leader)}")


def test_double_failover_resyncs_the_spared_replica_partially(drill: Drill) -> None:
    run = double_kill(drill)
    assert_checked(run)
    assert len(run.recovery_s) == 2
    (spared,) = run.notes["spared"]  # the one node never killed
    assert run.notes["full_syncs"] == {spared: 0}, run.notes
    # It re-pointed at each new primary, unless the second failover promoted it.
    resyncs = 1 if spared == run.new_primary else 2
    assert run.notes["partial_syncs"][spared] >= resyncs, run.notes


def test_consumer_group_survives_failover(drill: Drill) -> None:
    run = groups_failover(drill)
    assert_checked(run)
    assert run.notes["acked_before"] > 0 and run.notes["delivered_after"] > 0
    assert run.notes["redelivered_acked"] == [], run.notes
    assert run.notes["redelivered"] == [], run.notes
    assert run.notes["acked_in_pel"] == [], run.notes
    assert run.notes["groups_agree"], run.notes["group_states"]
