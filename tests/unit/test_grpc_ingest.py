"""GrpcTransport.xadd_many on the wire: IngestOne for one message, an Ingest stream for more,
and the stream again for a node that has no IngestOne (older than it), nothing sent twice.

The node here is an in-process gRPC server that serves only `Streams/Ingest` (as a node
before IngestOne did) or both, and records the messages it was sent.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from xstream.client import Client
from xstream.client.grpc_transport import GrpcTransport
from xstream.v1 import xstream_pb2 as pb


class FakeNode:
    """Answers each Ingest call with IDs 1-0, 1-1, ... per message; records the calls."""

    def __init__(self, *, ingest_one: bool) -> None:
        self.calls: list[tuple[str, list[pb.IngestBatch]]] = []
        self.ingest_one = ingest_one
        handlers = {
            "Ingest": grpc.stream_unary_rpc_method_handler(
                self._stream,
                request_deserializer=pb.IngestBatch.FromString,
                response_serializer=pb.IngestReply.SerializeToString,
            )
        }
        if ingest_one:
            handlers["IngestOne"] = grpc.unary_unary_rpc_method_handler(
                self._one,
                request_deserializer=pb.IngestBatch.FromString,
                response_serializer=pb.IngestReply.SerializeToString,
            )
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        self.server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("xstream.v1.Streams", handlers),)
        )
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def _answer(self, method: str, batches: list[pb.IngestBatch]) -> pb.IngestReply:
        self.calls.append((method, batches))
        out = pb.IngestReply(offset=len(self.calls))
        for i, batch in enumerate(batches):
            out.first_ids.append(f"{i + 1}-0")
            out.last_ids.append(f"{i + 1}-{len(batch.counts) - 1}")
            out.entries += len(batch.counts)
            out.batches += 1
        return out

    def _stream(self, batches: Iterator[pb.IngestBatch], context: Any) -> pb.IngestReply:
        return self._answer("Ingest", list(batches))

    def _one(self, batch: pb.IngestBatch, context: Any) -> pb.IngestReply:
        return self._answer("IngestOne", [batch])


@pytest.fixture(params=[True, False], ids=["with-IngestOne", "older-node"])
def node(request: pytest.FixtureRequest) -> Iterator[FakeNode]:
    n = FakeNode(ingest_one=request.param)
    yield n
    n.server.stop(None)


def test_one_message_by_ingest_one_more_by_a_stream(node: FakeNode) -> None:
    transport = GrpcTransport("127.0.0.1", node.port, retries=0, acks="quorum")
    client = Client(transport=transport)
    rows = [{"n": str(i)} for i in range(5000)]
    assert client.xadd_many("s", rows[:3]) == [b"1-0", b"1-1", b"1-2"]
    ids = client.xadd_many("s", rows)
    assert ids == [b"1-%d" % i for i in range(4096)] + [b"2-%d" % i for i in range(904)]
    assert client.xadd_many("s", rows[:1]) == [b"1-0"]
    one = "IngestOne" if node.ingest_one else "Ingest"
    assert [(m, [len(b.counts) for b in bs]) for m, bs in node.calls] == [
        (one, [3]),
        ("Ingest", [4096, 904]),
        (one, [1]),
    ]
    assert transport.resent == 0  # the fallback sent nothing twice
    first = node.calls[0][1][0]
    assert first.key == b"s" and list(first.elements) == [b"n", b"0", b"n", b"1", b"n", b"2"]
    assert first.concern.acks == pb.ACKS_QUORUM  # the write concern, in the first message
    assert not node.calls[1][1][1].HasField("concern")
    transport.close()
