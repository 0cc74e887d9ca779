"""Key expiry across processes: a key with PEXPIRE 200 goes from the primary by itself (active
expiry: nothing looks it up) and from the replica by the DEL it is shipped; keys with a TTL
keep it across a restart, from the snapshot and from the log after it."""

from __future__ import annotations

from conftest import Cluster, Node, poll

from xstream import protocol
from xstream.engine.reply import Reply
from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc


def run(node: Node, *words: str | int) -> Reply:
    return protocol.from_value(node.execute(*(str(w) for w in words)).value)


def test_a_key_expires_on_the_primary_and_the_replica_and_ttls_survive_restarts(
    cluster: Cluster,
) -> None:
    p = cluster.primary()
    r = cluster.replica(p)
    run(p, "XADD", "gone", "1-1", "f", "v")
    run(p, "XADD", "kept", "1-1", "f", "v")
    run(p, "PEXPIRE", "kept", 600_000)
    assert run(p, "PEXPIRE", "gone", 200) == 1
    # DBSIZE counts keys not deleted yet: only a deletion brings it down
    poll("the primary deletes the expired key", lambda: run(p, "DBSIZE") == 1, timeout=10)
    poll("the replica gets its DEL", lambda: run(r, "DBSIZE") == 1, timeout=10)
    assert run(r, "EXISTS", "gone") == 0 and run(r, "XLEN", "kept") == 1
    cluster.settled(p, [r])
    assert r.digest() == p.digest()

    pb_grpc.AdminStub(p.channel).Snapshot(pb.SnapshotRequest(), timeout=30)
    run(p, "SET", "logged", "v", "PX", 600_000)  # in the log after the snapshot
    times = {k: run(p, "PEXPIRETIME", k) for k in ("kept", "logged")}
    digest = p.digest()
    p.stop()
    p.start()
    assert p.digest() == digest
    assert {k: run(p, "PEXPIRETIME", k) for k in ("kept", "logged")} == times
    ttl = run(p, "TTL", "logged")
    assert isinstance(ttl, int) and 590 < ttl <= 600
