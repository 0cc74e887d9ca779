"""Hostile replication peers against a real primary and replica: a peer that forges acks,
says hello with an unusable address or name, or sends what the protocol does not allow is
cut off with INVALID_ARGUMENT and never counts as an ack; a stray that attached and left is
forgotten after --replica-forget-after, while a real replica that reconnects keeps its place.
"""

from __future__ import annotations

import queue
from collections.abc import Iterator

import grpc
import pytest
from conftest import Cluster, Node, poll

from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc

SYNC = "/xstream.v1.Replication/Sync"


class Peer:
    """A Replication.Sync call of our own: messages go out as queued, replies are read one by
    one. Given bytes, it sends raw bytes (so they can be garbage) instead of messages."""

    def __init__(self, node: Node, first: pb.ReplicaMessage | bytes) -> None:
        self.out: queue.Queue[pb.ReplicaMessage | bytes | None] = queue.Queue()
        self.channel = grpc.insecure_channel(node.address)
        if isinstance(first, bytes):
            sync = self.channel.stream_stream(
                SYNC, request_serializer=None, response_deserializer=pb.PrimaryMessage.FromString
            )
        else:
            sync = pb_grpc.ReplicationStub(self.channel).Sync
        self.out.put(first)
        self.call = sync(iter(self.out.get, None), timeout=30)

    def send(self, msg: pb.ReplicaMessage | bytes) -> None:
        self.out.put(msg)

    def read_until(self, kind: str) -> pb.PrimaryMessage:
        for msg in self.call:
            if msg.WhichOneof("kind") == kind:
                return msg
        raise AssertionError(f"the call ended before a {kind} message")

    def closed_with(self) -> tuple[grpc.StatusCode, str]:
        """Drain the call to its end: its status."""
        try:
            for _ in self.call:
                pass
        except grpc.RpcError as e:
            return e.code(), e.details() or ""
        return self.call.code(), self.call.details() or ""

    def close(self) -> None:
        self.out.put(None)
        self.call.cancel()
        self.channel.close()


@pytest.fixture
def peers() -> Iterator[list[Peer]]:
    opened: list[Peer] = []
    yield opened
    for peer in opened:
        peer.close()


def hello(name: str, address: str = "") -> pb.ReplicaMessage:
    return pb.ReplicaMessage(hello=pb.Hello(name=name, address=address))


def write(node: Node, acks: int, timeout_ms: int = 400) -> tuple[bool, str]:
    """XADD with a write concern: (ok, details of the error if not)."""
    concern = pb.WriteConcern(acks=acks, timeout_ms=timeout_ms)
    cmd = pb.Command(argv=[b"XADD", b"s", b"*", b"f", b"v"], concern=concern)
    try:
        node.streams().Execute(cmd, timeout=10)
    except grpc.RpcError as e:
        return False, e.details() or ""
    return True, ""


def names(node: Node) -> dict[str, str]:
    return {r.name: r.state for r in node.info().replicas}


def test_forged_ack_closes_the_link_and_counts_for_nothing(
    cluster: Cluster, peers: list[Peer]
) -> None:
    p = cluster.primary()
    r1 = cluster.replica(p)
    rogue = Peer(p, hello("rogue"))
    peers.append(rogue)
    rogue.read_until("snapshot_end")
    assert write(p, pb.ACKS_LEADER)[0]
    rogue.read_until("records")  # online: an honest ack would count now
    rogue.send(pb.ReplicaMessage(ack=pb.Ack(offset=10**12)))
    code, details = rogue.closed_with()
    assert code is grpc.StatusCode.INVALID_ARGUMENT, (code, details)
    assert "ack for offset 1000000000000 beyond the" in details
    assert names(p) == {r1.address: "online", "rogue": "disconnected"}
    assert max(r.ack_offset for r in p.info().replicas) <= p.info().offset
    assert p.events("replica_protocol_error")[0]["replica"] == "rogue"

    r1.kill()
    poll("the replica seen gone", lambda: names(p)[r1.address] == "disconnected")
    ok, details = write(p, pb.ACKS_QUORUM)
    assert not ok and details.startswith("ACKTIMEOUT"), details


UNUSABLE = [
    ("x", "nohost", "'nohost' is not HOST:PORT"),
    ("x", "host:0", "is not HOST:PORT"),
    ("x", "host:65536", "is not HOST:PORT"),
    ("x", ":7700", "is not HOST:PORT"),
    ("x", "host:7x", "is not HOST:PORT"),
    ("", "127.0.0.1:7701", "empty replica name"),
    ("n" * 257, "", "name must be 1..256 printable characters"),
    ("a\nb", "", "name must be 1..256 printable characters"),
]


def test_unusable_hello_is_refused(cluster: Cluster, peers: list[Peer]) -> None:
    p = cluster.primary()
    for name, address, why in UNUSABLE:
        peer = Peer(p, hello(name, address))
        peers.append(peer)
        code, details = peer.closed_with()
        assert code is grpc.StatusCode.INVALID_ARGUMENT and why in details, (code, details)
        assert p.info().replicas == []  # Admin.Info still answers; nothing was attached
    assert len(p.events("replica_refused")) == len(UNUSABLE)
    fine = Peer(p, hello("fine", "[::1]:7701"))  # IPv6 in brackets; "" is fine too (above)
    peers.append(fine)
    fine.read_until("snapshot_end")
    assert names(p) == {"fine": "online"}
    assert p.info().replicas[0].address == "[::1]:7701"


def test_messages_the_protocol_does_not_allow_close_the_link(
    cluster: Cluster, peers: list[Peer]
) -> None:
    p = cluster.primary("--replica-forget-after", "0.5")
    r1 = cluster.replica(p)
    ack_first = Peer(p, pb.ReplicaMessage(ack=pb.Ack(offset=1)))
    garbage_first = Peer(p, b"\xff\xff\xff\xff\x0f")
    second_hello = Peer(p, hello("twice", "127.0.0.1:1"))
    empty = Peer(p, hello("empty"))
    garbage = Peer(p, hello("garbage").SerializeToString())
    peers += [ack_first, garbage_first, second_hello, empty, garbage]
    for peer in (second_hello, empty, garbage):
        peer.read_until("full_sync")
    second_hello.send(hello("twice", "127.0.0.1:1"))
    empty.send(pb.ReplicaMessage())
    garbage.send(b"\xff\xff\xff\xff\x0f")
    expected = [
        (ack_first, "the first message must be hello"),
        (garbage_first, "undecodable request"),
        (second_hello, "unexpected hello message after hello"),
        (empty, "unexpected empty message after hello"),
        (garbage, "undecodable request"),
    ]
    for peer, why in expected:
        code, details = peer.closed_with()
        assert code is grpc.StatusCode.INVALID_ARGUMENT and why in details, (code, details)
    logged = {
        "twice": "unexpected hello message after hello",
        "empty": "unexpected empty message after hello",
        "garbage": "undecodable message",  # logged just after its call is closed
    }
    errors = lambda: {e["replica"]: e["error"] for e in p.events("replica_protocol_error")}  # noqa: E731
    poll("the protocol errors logged", lambda: errors() == logged, timeout=5)
    poll("the rogue links forgotten", lambda: names(p) == {r1.address: "online"})
    assert write(p, pb.ACKS_ALL, timeout_ms=5000) == (True, "")


def test_stray_is_forgotten_and_a_reconnecting_replica_keeps_its_place(
    cluster: Cluster, peers: list[Peer]
) -> None:
    p = cluster.primary("--replica-forget-after", "4")
    r1 = cluster.replica(p)
    stray = Peer(p, hello("stray", "127.0.0.1:1"))
    peers.append(stray)
    stray.read_until("snapshot_end")
    ok, details = write(p, pb.ACKS_ALL)
    assert not ok and "acknowledged by 1 of 2 required replicas" in details, details

    stray.close()
    poll("the stray forgotten", lambda: names(p) == {r1.address: "online"})
    assert p.events("replica_forgotten")[0]["replica"] == "stray"
    assert write(p, pb.ACKS_ALL, timeout_ms=5000) == (True, "")

    r1.kill()
    poll("the replica seen gone", lambda: names(p) == {r1.address: "disconnected"})
    ok, details = write(p, pb.ACKS_ALL)  # R is still 1: a departed replica is not forgotten
    assert not ok and "acknowledged by 0 of 1 required replicas" in details, details
    r1.start()
    poll("the replica back online", lambda: names(p) == {r1.address: "online"})
    assert write(p, pb.ACKS_ALL, timeout_ms=5000) == (True, "")
