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


def test_what_redis_py_users_call_first(cluster: Cluster) -> None:
    p = cluster.primary()
    r = cluster.replica(p)
    c = cluster.client(p, decode_responses=True)
    assert c.ping() is True
    assert c.echo("hé") == "hé"
    assert c.dbsize() == 0
    c.xadd("events", {"a": "1"})
    assert c.dbsize() == 1
    cluster.settled(p, [r])
    info = c.info()
    assert info["role"] == "master" and info["connected_slaves"] == 1
    assert info["slave0"]["state"] == "online" and info["slave0"]["port"] == r.port
    assert info["db0"] == {"keys": 1, "expires": 0, "avg_ttl": 0, "subexpiry": 0}
    assert info["aof_last_write_status"] == "ok" and info["redis_version"] == "8.8.0"
    assert set(c.info("replication")) >= {"role", "master_repl_offset", "master_replid"}
    assert "redis_version" not in c.info("replication")
    on_replica = cluster.client(r, decode_responses=True).info("replication")
    assert on_replica["role"] == "slave" and on_replica["master_link_status"] == "up"
    assert on_replica["master_port"] == p.port
