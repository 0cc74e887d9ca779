"""xstream.client.Client over gRPC: reconnects, safe retries, replicas, pipelines, batches."""

from __future__ import annotations

import pytest
from conftest import Cluster

from xstream.client import ConnectionError, ResponseError


def test_reads_reconnect_after_a_primary_restart(cluster: Cluster) -> None:
    p = cluster.primary("--fsync", "always")
    c = cluster.client(p)
    c.xadd("s", {"f": "v"}, id="1-1")
    p.stop()
    down = cluster.client(p, retries=0)
    with pytest.raises(ConnectionError):
        down.xlen("s")
    with pytest.raises(ConnectionError):
        down.xadd("s", {"f": "v"})  # never reached a server: safe to report, nothing applied
    p.start()
    assert c.xlen("s") == 1  # the same client, a new connection
    assert c.xadd("s", {"f": "w"}, id="2-1") == b"2-1"


def test_replica_reads_fall_back_to_the_primary(cluster: Cluster) -> None:
    p = cluster.primary()
    r1 = cluster.replica(p)
    c = cluster.client(p, read_from="replica", replicas=[r1.address], decode_responses=True)
    c.xadd("s", {"f": "v"}, id="1-1")
    cluster.settled(p, [r1])
    assert c.xrange("s") == [("1-1", {"f": "v"})]
    r1.stop()
    assert c.xlen("s") == 1  # answered by the primary


def test_pipeline_batches_and_wait(cluster: Cluster) -> None:
    p = cluster.primary()
    r1 = cluster.replica(p)
    c = cluster.client(p, decode_responses=True)
    ids = c.xadd_many("s", [{"n": str(i)} for i in range(10_000)])
    assert len(ids) == 10_000 and ids == [i for i, _ in c.xrange("s")]
    with c.pipeline() as pipe:
        pipe.xadd("s", {"x": "1"}, id="9999999999999-1").xlen("s").xadd("s", {"x": "2"}, id="1-1")
        replies = pipe.execute(raise_on_error=False)
    assert replies[:2] == ["9999999999999-1", 10_001]
    assert isinstance(replies[2], ResponseError)
    assert c.wait(1, 5000) == 1
    cluster.settled(p, [r1])
    assert p.digest() == r1.digest()
