"""The client across a failover: it finds the new primary from its seeds, sends writes again
where that is safe (IDMP makes a repeated XADD answer its first ID), and one client's reads
never go backwards, replicas included."""

from __future__ import annotations

import threading
import time
from typing import Any

import grpc
import pytest
from conftest import Cluster, Node, free_port, poll

from xstream.client import AckTimeoutError, Client
from xstream.client.grpc_transport import GrpcTransport
from xstream.v1 import xstream_pb2 as pb


def seeds(*nodes: Node) -> list[str]:
    return [n.address for n in nodes]


def link(c: Client) -> GrpcTransport:
    assert isinstance(c.transport, GrpcTransport)
    return c.transport


class Writer(threading.Thread):
    """XADDs {"n": i} to "s" in a loop (every fifth step a pipeline of three) until stopped;
    what each returned, and what it raised, if anything."""

    def __init__(self, client: Client) -> None:
        super().__init__(daemon=True)
        self.client = client
        self.stop = threading.Event()
        self.acked: list[tuple[int, bytes]] = []  # (n, entry ID)
        self.error: BaseException | None = None

    def run(self) -> None:
        n = 0
        try:
            while not self.stop.is_set():
                if n % 5 == 4:
                    pipe = self.client.pipeline()
                    for k in range(3):
                        pipe.xadd("s", {"n": str(n + k)})
                    self.acked += zip(range(n, n + 3), pipe.execute(), strict=True)
                    n += 3
                else:
                    self.acked.append((n, self.client.xadd("s", {"n": str(n)})))
                    n += 1
        except BaseException as e:
            self.error = e

    def until(self, count: int) -> None:
        poll(f"{count} writes acknowledged", lambda: len(self.acked) >= count or self.error)
        assert self.error is None, repr(self.error)

    def finish(self) -> None:
        self.stop.set()
        self.join(30)
        assert not self.is_alive(), "the writer is stuck"
        assert self.error is None, repr(self.error)


def entries(node: Node, key: str) -> list[tuple[bytes, int]]:
    c = Client("127.0.0.1", node.port)
    try:
        return [(eid, int(fields[b"n"])) for eid, fields in c.xrange(key)]
    finally:
        c.close()


@pytest.mark.parametrize("fault", ["kill", "pause"])
def test_idempotent_writes_carry_on_across_a_failover_each_applied_once(
    cluster: Cluster, fault: str
) -> None:
    p = cluster.primary()
    r1 = cluster.replica(p)
    r2 = cluster.replica(p)
    options: dict[str, Any] = {"idempotent_xadd": True, "acks": "all", "failover_timeout": 4.0}
    c = cluster.client(p, nodes=seeds(r1, r2), **options)  # a try waits 2 s at most
    writer = Writer(c)
    writer.start()
    writer.until(50)
    if fault == "kill":
        p.kill()
    else:
        p.pause()  # cut off: its last write may land there later, on a tail that is cut back
    try:
        r1.promote()
        r2.replicaof(r1)
        seen = len(writer.acked)
        writer.until(seen + 50)  # carried on against the new primary
        writer.finish()
    finally:
        if fault == "pause":
            p.resume()

    t = link(c)
    assert (t.primary, t.epoch) == (r1.address, 2) and t.resent > 0
    stored = entries(r1, "s")
    assert sorted(stored) == sorted((eid, n) for n, eid in writer.acked)  # each once, same ID
    assert [n for _, n in stored] == list(range(len(writer.acked)))  # nothing twice, in order
    cluster.settled(r1, [r2])
    assert r1.digest() == r2.digest()


def test_a_write_with_an_unknown_outcome_is_sent_again_and_not_appended_twice(
    cluster: Cluster,
) -> None:
    p = cluster.primary()
    r1 = cluster.replica(p)
    r2 = cluster.replica(p)
    options: dict[str, Any] = {"nodes": seeds(r1, r2), "acks": "all", "acks_timeout_ms": 300}
    plain = cluster.client(p, **options)
    c = cluster.client(p, idempotent_xadd=True, **options)
    r2.pause()  # its acks stop: acks=all writes are applied and replicated to r1, not acked
    try:
        with pytest.raises(AckTimeoutError):
            plain.xadd("plain", {"n": "0"})  # not repeatable: the outcome is the caller's
        result: dict[str, Any] = {}
        thread = threading.Thread(target=lambda: result.update(id=c.xadd("s", {"n": "0"})))
        thread.start()
        poll("the write on r1", lambda: entries(r1, "s"))
        poll("a repeat the primary answered", lambda: xinfo(p, "s")["iids-duplicates"] >= 1)
        p.kill()
        r1.promote()  # r1 holds the entry and its IDMP record: the repeat finds both
        thread.join(30)
    finally:
        r2.resume()
    assert not thread.is_alive()
    r2.replicaof(r1)
    assert entries(r1, "s") == [(result["id"], 0)]
    assert xinfo(r1, "s")["iids-duplicates"] >= 2  # repeated on p and on r1: the first ID
    assert len(entries(r1, "plain")) == 1


def test_reads_never_go_back_before_the_clients_own_writes(cluster: Cluster) -> None:
    p = cluster.primary()
    r1 = cluster.replica(p)
    c = cluster.client(p, nodes=seeds(r1), read_from="replica", replicas=[r1.address])
    c.xadd("s", {"n": "0"})
    cluster.settled(p, [r1])
    r1.replicaof(Node("primary", free_port(), p.data_dir, [], p.log))  # cut off: r1 lags now
    poll("r1 cut off", lambda: r1.info().link == "down")
    c.xadd("s", {"n": "1"})
    assert link(c).session_offset > r1.info().offset

    t0 = time.monotonic()
    assert [n for _, n in entries_of(c)] == [0, 1]  # r1 waited, then said TRYAGAIN: the primary
    assert time.monotonic() - t0 >= 0.9
    line = behind(r1, link(c).session_offset)
    assert line.startswith("TRYAGAIN replica at offset ")

    def catch_up() -> None:
        time.sleep(0.3)
        r1.replicaof(p)

    threading.Thread(target=catch_up).start()
    c.xadd("s", {"n": "2"})
    assert [n for _, n in entries_of(c)] == [0, 1, 2]  # r1 catches up as it waits (or TRYAGAIN)
    assert r1.info().link == "up"


def test_a_paused_replica_resumed_does_not_answer_from_before_the_clients_write(
    cluster: Cluster,
) -> None:
    p = cluster.primary()
    r1 = cluster.replica(p)
    c = cluster.client(p, read_from="replica", replicas=[r1.address])
    c.xadd("s", {"n": "0"})
    for n in range(1, 20):
        r1.pause()
        try:
            c.xadd("s", {"n": str(n)})
        finally:
            r1.resume()
        assert len(c.xrange("s")) == n + 1  # at once: r1 is the first asked


def test_a_client_given_a_replica_finds_the_primary(cluster: Cluster) -> None:
    p = cluster.primary()
    r1 = cluster.replica(p)
    r2 = cluster.replica(p)
    alone = cluster.client(r1, nodes=[])  # the primary r1 follows joins the seeds
    assert alone.xadd("s", {"n": "0"})
    assert link(alone).primary == p.address
    assert link(alone).seeds == seeds(r1, p)
    seeded = cluster.client(r1, nodes=seeds(r2, p))
    assert seeded.xadd("s", {"n": "1"})
    assert [n for _, n in entries(p, "s")] == [0, 1]
    p.kill()  # no primary for a moment: the client waits for one
    promoted = threading.Timer(0.5, r2.promote)
    promoted.start()
    assert seeded.xadd("s", {"n": "2"})
    promoted.join()
    assert link(seeded).primary == r2.address


def xinfo(node: Node, key: str) -> dict[str, Any]:
    c = Client("127.0.0.1", node.port, decode_responses=True)
    try:
        info: dict[str, Any] = c.xinfo_stream(key)
        return info
    finally:
        c.close()


def entries_of(c: Client) -> list[tuple[bytes, int]]:
    return [(eid, int(fields[b"n"])) for eid, fields in c.xrange("s")]


def behind(node: Node, offset: int) -> str:
    """The error line of a read sent to `node` with a session offset it has not reached."""
    with pytest.raises(grpc.RpcError) as e:
        node.streams().Execute(
            pb.Command(argv=[b"XLEN", b"s"]), metadata=(("xstream-offset", str(offset)),)
        )
    return str(e.value.details())
