"""Bounded work per request, on a real node: a read of 1,000,000 entries (no COUNT) while a
writer keeps adding: its XADDs are answered while the read is still being served (a node that
served the read in one go would answer at most one), and the long reply is exactly the pages
read with COUNT joined (the writer's latency is a benchmark's business, not an assertion
here). A reply past --max-reply-bytes and an argument past --proto-max-bulk-len are refused
with clear lines, and nothing is applied."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from conftest import Cluster

from xstream.v1 import xstream_pb2 as pb

N = 1_000_000


def fill(cluster: Cluster, port_node: object, key: str, n: int) -> None:
    c = cluster.client(port_node)  # type: ignore[arg-type]
    rows = [{"user": str(i), "action": "click", "amount": str(i % 97)} for i in range(10_000)]
    for _ in range(n // len(rows)):
        c.xadd_many(key, rows)


READER = """
import sys, grpc
from xstream.v1 import xstream_pb2 as pb
channel = grpc.insecure_channel(sys.argv[1], [("grpc.max_receive_message_length", 1 << 28)])
call = channel.unary_unary("/xstream.v1.Streams/Execute",
    request_serializer=pb.Command.SerializeToString, response_deserializer=None)
sys.stdout.buffer.write(call(pb.Command(argv=[b"XRANGE", b"big", b"-", b"+"]), timeout=120))
"""


def test_a_long_read_does_not_stall_writers(cluster: Cluster, tmp_path: Path) -> None:
    node = cluster.primary()
    fill(cluster, node, "big", N)
    writer = cluster.client(node)
    out = tmp_path / "reply.bin"
    writes = 0
    with out.open("wb") as f:  # the reader in its own process: its GIL is not the writer's
        reading = subprocess.Popen([sys.executable, "-c", READER, node.address], stdout=f)
        while reading.poll() is None:
            writer.xadd("other", {"n": str(writes)})
            writes += 1
    assert reading.returncode == 0
    assert writes >= 20, f"only {writes} writes answered while the read was served"

    reply = pb.Reply.FromString(out.read_bytes())
    ids = list(reply.value.entries.ids)
    assert len(ids) == N
    channel = grpc.insecure_channel(node.address, [("grpc.max_receive_message_length", 1 << 28)])
    execute = channel.unary_unary(
        "/xstream.v1.Streams/Execute",
        request_serializer=pb.Command.SerializeToString,
        response_deserializer=pb.Reply.FromString,
    )

    def run(*argv: bytes) -> pb.Reply:
        return execute(pb.Command(argv=list(argv)), timeout=60)  # type: ignore[no-any-return]

    paged: list[bytes] = []
    start = b"-"
    while True:
        page = run(b"XRANGE", b"big", start, b"+", b"COUNT", b"50000").value.entries
        paged.extend(page.ids)
        if len(page.ids) < 50000:
            break
        start = b"(" + page.ids[-1]
    assert ids == paged
    whole = run(b"XRANGE", b"big", b"-", b"+").value.entries
    assert list(whole.elements) == list(reply.value.entries.elements)
    channel.close()


def test_reply_and_argument_limits(cluster: Cluster) -> None:
    node = cluster.primary("--max-reply-bytes", "1000000", "--proto-max-bulk-len", "1000")
    fill(cluster, node, "big", 30_000)
    with pytest.raises(grpc.RpcError) as e:
        node.execute("XRANGE", "big", "-", "+")
    assert e.value.details() == (
        "ERR reply exceeds max-reply-bytes (1000000 bytes): read it in pages with COUNT"
    )
    with pytest.raises(grpc.RpcError) as e:
        node.execute("XREAD", "STREAMS", "big", "0")
    assert "max-reply-bytes" in e.value.details()
    assert len(node.execute("XRANGE", "big", "-", "+", "COUNT", "100").value.entries.ids) == 100

    with pytest.raises(grpc.RpcError) as e:
        node.execute("XADD", "big", "*", "f", "x" * 1001)
    assert e.value.details() == (
        "ERR Protocol error: invalid bulk length (1001 bytes, proto-max-bulk-len is 1000)"
    )
    c = cluster.client(node)
    with pytest.raises(Exception, match="invalid bulk length"):
        c.xadd_many("big", [{"f": "y" * 2000}])
    assert node.execute("XLEN", "big").value.integer == 30_000
    node.execute("XADD", "big", "*", "f", "x" * 1000)
    assert node.execute("XLEN", "big").value.integer == 30_001


def test_an_over_long_argument_is_refused_on_every_grpc_path(cluster: Cluster) -> None:
    """The gRPC edge bounds each argv it takes out of a request (the node floor does not):
    a Pipeline's over-long command is refused in its place and the others run; a typed
    method's (XAdd) fails alone, with the same line as Execute's; nothing long is applied."""
    node = cluster.primary("--proto-max-bulk-len", "1000")
    refused = "ERR Protocol error: invalid bulk length (1001 bytes, proto-max-bulk-len is 1000)"
    commands = [
        [b"XADD", b"s", b"1-1", b"f", b"v"],
        [b"XADD", b"s", b"1-2", b"f", b"x" * 1001],
        [b"XADD", b"s", b"1-3", b"f", b"x" * 1000],
        [b"XRANGE", b"s", b"-", b"+", b"COUNT", b"x" * 1001],
        [b"XLEN", b"s"],
    ]
    request = pb.PipelineRequest(commands=[pb.Command(argv=c) for c in commands])
    replies = node.streams().Pipeline(request, timeout=30).replies
    assert [r.error for r in replies] == ["", refused, "", refused, ""]
    assert [replies[0].value.bulk, replies[2].value.bulk] == [b"1-1", b"1-3"]
    assert replies[4].value.integer == 2
    with pytest.raises(grpc.RpcError) as e:
        field = pb.Field(field=b"f", value=b"y" * 1001)
        node.streams().XAdd(pb.XAddRequest(key=b"s", fields=[field]), timeout=10)
    assert e.value.details() == refused
    assert node.execute("XRANGE", "s", "-", "+").value.entries.ids == [b"1-1", b"1-3"]


def test_a_pipelines_replies_share_max_reply_bytes(cluster: Cluster) -> None:
    node = cluster.primary("--max-reply-bytes", "1000000")
    fill(cluster, node, "big", 20_000)
    page = [b"XRANGE", b"big", b"-", b"+", b"COUNT", b"10000"]
    commands = [page, page, [b"XADD", b"big", b"*", b"f", b"v"], [b"XLEN", b"big"]]
    request = pb.PipelineRequest(commands=[pb.Command(argv=c) for c in commands])
    replies = node.streams().Pipeline(request, timeout=30).replies
    assert len(replies[0].value.entries.ids) == 10_000
    assert replies[1].error == (
        "ERR reply exceeds max-reply-bytes (1000000 bytes): read it in pages with COUNT"
    )
    assert replies[2].value.bulk  # the write's reply fits, and it was applied
    assert replies[3].value.integer == 20_001
