"""Failover by hand: promote a replica, re-point its siblings, bring the old primary back.

Siblings continue with a partial resync (PSYNC2: the promoted node accepts the replid it
followed up to where it ended); a deposed primary that accepted writes nobody else received
cuts that tail back (found by epoch, as Kafka) and converges; a primary that hears of a newer
epoch steps down and refuses writes.
"""

from __future__ import annotations

import random
import subprocess
import sys

import grpc
import pytest
from conftest import Cluster, Node, poll
from test_replication import random_workload

from xstream.client import Client
from xstream.v1 import xstream_pb2 as pb


def syncs(node: Node) -> tuple[int, int]:
    info = node.info()
    return info.full_syncs, info.partial_syncs


def xadd(node: Node, key: str, value: str, epoch: int = 0) -> tuple[pb.XAddReply, dict[str, str]]:
    """An XADD through the typed call; (reply, trailing metadata)."""
    request = pb.XAddRequest(
        key=key.encode(), id="*", fields=[pb.Field(field=b"v", value=value.encode())]
    )
    metadata = (("xstream-epoch", str(epoch)),) if epoch else ()
    reply, call = node.streams().XAdd.with_call(request, metadata=metadata, timeout=10)
    return reply, dict(call.trailing_metadata() or ())


def refused(node: Node, epoch: int = 0) -> str:
    """The error line of a write refused by `node`."""
    with pytest.raises(grpc.RpcError) as e:
        xadd(node, "refused", "x", epoch)
    return str(e.value.details())


def cli(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "xstream.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def more_writes(c: Client, rng: random.Random, steps: int) -> None:
    """Writes on the keys random_workload made: appends, trims, deliveries, acks, claims."""
    for step in range(steps):
        k = f"s{rng.randrange(4)}"
        op = rng.random()
        if op < 0.4:
            c.xadd(k, {"f": str(step)}, maxlen=rng.choice([None, 100]), approximate=True)
        elif op < 0.55:
            c.xadd_many(k, [{"a": str(step)}] * rng.randint(1, 50))
        elif op < 0.8:
            c.xreadgroup("g", f"c{rng.randrange(3)}", {k: ">"}, count=rng.randint(1, 10))
        elif op < 0.9:
            pending = c.xpending_range(k, "g", "-", "+", 5)
            if pending:
                c.xack(k, "g", *[p["message_id"] for p in pending])
        else:
            c.xautoclaim(k, "g", "c9", 0, count=3)


def converged(nodes: list[Node]) -> None:
    poll(
        "every node at the same offset and digest",
        lambda: (
            len({n.info().offset for n in nodes}) == 1 and len({n.digest() for n in nodes}) == 1
        ),
    )


def test_promote_a_replica_after_the_primary_dies_siblings_continue_partially(
    cluster: Cluster,
) -> None:
    p = cluster.primary()
    r1 = cluster.replica(p)
    r2 = cluster.replica(p)
    random_workload(cluster.client(p), random.Random(1), 300)
    cluster.settled(p, [r1, r2])
    old_replid = p.info().replid
    before = syncs(r2)
    p.kill()

    out = cli("promote", "--node", r1.address)
    assert "epoch: 2" in out
    cli("replicaof", "--node", r2.address, "--primary", r1.address)
    poll("the sibling linked to the new primary", lambda: r2.info().link == "up")

    info = r1.info()
    assert (info.role, info.epoch, info.leader_epoch, info.deposed) == ("primary", 2, 2, False)
    assert info.replid != old_replid and info.replid2 == old_replid
    assert [(e.epoch, e.start) for e in info.history] == [(1, 0), (2, info.replid2_end)]
    reply, trailing = xadd(r1, "after", "1")
    assert trailing["xstream-epoch"] == "2" and reply.id
    more_writes(cluster.client(r1), random.Random(2), 200)
    cluster.settled(r1, [r2])
    assert r1.digest() == r2.digest()
    full, partial = syncs(r2)
    assert full == before[0] and partial == before[1] + 1  # no snapshot: a partial resync
    assert syncs(r1) == (0, 1)  # served: the sibling's partial resync
    assert r2.info().epoch == 2
    assert "The primary is " + r1.address in refused(r2)
    assert refused(r1, epoch=3).startswith("READONLY You can't write against a stale primary")


def test_a_deposed_primary_cuts_back_writes_that_never_replicated(cluster: Cluster) -> None:
    p = cluster.primary()
    r1 = cluster.replica(p)
    r2 = cluster.replica(p)
    c = cluster.client(p)
    random_workload(c, random.Random(3), 300)
    cluster.settled(p, [r1, r2])
    r1.kill()
    r2.kill()
    for i in range(50):  # acks=leader: applied and logged on the primary only
        c.xadd("lost", {"i": str(i)})
        c.xadd("s0", {"lost": str(i)})
    lost_offset = p.info().offset
    p.kill()
    r1.start()
    r2.start()
    r1.promote()
    r2.replicaof(r1)
    rng = random.Random(4)
    while r1.info().offset <= lost_offset:  # epoch 2 writes over (and past) the lost tail
        more_writes(cluster.client(r1), rng, 50)

    p.restart_as_replica(r1)
    poll("the old primary linked to the new one", lambda: p.info().link == "up")
    converged([r1, r2, p])
    assert p.info().keys == r1.info().keys
    assert cluster.client(p).exists("lost") == 0
    cut = p.events("replica_cut_back")
    assert cut and cut[-1]["cut_bytes"] > 0
    assert list(p.data_dir.glob("aof-*.diverged-*"))  # the cut writes are kept aside
    assert syncs(p) == (0, 1)
    assert p.info().epoch == 2
    xadd(r1, "after", "rejoined")
    cluster.settled(r1, [r2, p])
    assert r1.digest() == r2.digest() == p.digest()


def test_a_deposed_primary_whose_snapshot_is_past_the_divergence_takes_a_full_sync(
    cluster: Cluster,
) -> None:
    p = cluster.primary("--snapshot-bytes", "4096")
    r1 = cluster.replica(p)
    c = cluster.client(p)
    c.xadd_many("s", [{"i": str(i)} for i in range(100)])
    diverges_at = cluster.settled(p, [r1])
    r1.kill()
    for i in range(40):  # far past 4 KiB: the old primary snapshots inside its lost tail
        c.xadd_many("lost", [{"i": str(i), "pad": "x" * 100}] * 10)
    poll("a snapshot past the divergence", lambda: p.info().snapshot_offset > diverges_at)
    p.kill()
    r1.start()
    r1.promote()
    xadd(r1, "after", "failover")

    p.restart_as_replica(r1)
    poll("the old primary linked to the new one", lambda: p.info().link == "up")
    converged([r1, p])
    assert syncs(p) == (1, 0)  # it could not cut back below its snapshot
    assert cluster.client(p).exists("lost") == 0


def test_a_primary_that_hears_of_a_newer_epoch_steps_down_and_can_be_demoted(
    cluster: Cluster,
) -> None:
    p = cluster.primary()
    r1 = cluster.replica(p)
    r2 = cluster.replica(p)
    c = cluster.client(p)
    c.xadd_many("s", [{"i": str(i)} for i in range(200)])
    cluster.settled(p, [r1, r2])
    p.pause()  # partitioned, as far as the others can tell
    try:
        r1.promote()
        r2.replicaof(r1)
        xadd(r1, "new", "epoch 2")
        cluster.settled(r1, [r2])  # r2 has followed r1, so it knows epoch 2
        assert r2.info().epoch == 2
    finally:
        p.resume()
    xadd(p, "old", "accepted: nobody told it yet")
    assert refused(p, epoch=2).startswith("READONLY You can't write against a stale primary")

    r2.replicaof(p)  # its Hello says epoch 2: the old primary steps down
    poll("the old primary deposed", lambda: p.info().deposed)
    assert p.info().epoch == 2 and p.info().leader_epoch == 1
    assert refused(p).startswith("READONLY You can't write against a deposed primary")
    assert p.events("primary_deposed") and r2.info().link != "up"

    r2.replicaof(r1)
    p.replicaof(r1)  # demoted in place: it cuts back its "old" write
    poll("the demoted primary linked", lambda: p.info().role == "replica" and p.info().link == "up")
    converged([r1, r2, p])
    assert cluster.client(p).exists("old") == 0 and cluster.client(p).exists("new") == 1
    assert p.info().full_syncs == 0
    assert "The primary is " + r1.address in refused(p)


def test_double_failover_keeps_siblings_partial(cluster: Cluster) -> None:
    p = cluster.primary()
    r1, r2, r3 = (cluster.replica(p) for _ in range(3))
    random_workload(cluster.client(p), random.Random(5), 200)
    cluster.settled(p, [r1, r2, r3])
    first = {r.port: syncs(r) for r in (r2, r3)}
    p.kill()
    assert r1.promote().epoch == 2
    r2.replicaof(r1)
    r3.replicaof(r1)
    more_writes(cluster.client(r1), random.Random(6), 200)
    cluster.settled(r1, [r2, r3])

    r1.kill()
    assert r2.promote(epoch=5).epoch == 5
    r3.replicaof(r2)
    more_writes(cluster.client(r2), random.Random(7), 200)
    cluster.settled(r2, [r3])
    assert r2.digest() == r3.digest()
    assert syncs(r3) == (first[r3.port][0], first[r3.port][1] + 2)  # partial both times
    assert syncs(r2) == (0, 1)  # as the primary: r3's partial resync
    assert [(e.epoch) for e in r3.info().history] == [1, 2, 5]

    r1.restart_as_replica(r2)  # the first failover's primary, on its data, as a replica
    cluster.settled(r2, [r1, r3])
    assert r1.digest() == r2.digest()
    assert syncs(r1) == (0, 1)
    with pytest.raises(grpc.RpcError) as e:
        r3.promote(epoch=4)  # not above the epoch it has seen
    assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
