"""Talking to xstream nodes from Spark processes: channels opened lazily, cached per process.

Data source objects are pickled and shipped to planner and worker processes, and gRPC
channels cannot be pickled, so nothing here lives on a reader or writer: `node(address)`
opens a channel on first use in each process and keeps it in a module-level dict.

`StreamState` is what XSPLITS says about one stream on one node: its last generated ID (the
freshness check: a node that applied the primary's log up to last ID X holds every entry
<= X), the trim watermark (data loss: entries after ID x were trimmed iff x < watermark),
and the cut points of a range.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import grpc

from xstream.client.argv import encode
from xstream.client.tls import client_tls
from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc

from .options import TlsFiles

MAX_MESSAGE = 256 << 20
_lock = threading.Lock()
_stubs: dict[tuple[str, TlsFiles | None], pb_grpc.StreamsStub] = {}


class NodeError(RuntimeError):
    """A node answered with an error line, or could not be reached."""


def stub(address: str, tls: TlsFiles | None = None) -> pb_grpc.StreamsStub:
    with _lock:
        s = _stubs.get((address, tls))
        if s is None:
            options = [
                ("grpc.max_receive_message_length", MAX_MESSAGE),
                ("grpc.max_send_message_length", MAX_MESSAGE),
            ]
            if tls is None:
                channel = grpc.insecure_channel(address, options=options)
            else:
                creds = client_tls(True, tls.ca, tls.cert, tls.key)
                assert creds is not None
                channel = grpc.secure_channel(address, creds.credentials(), options=options)
            s = _stubs[(address, tls)] = pb_grpc.StreamsStub(channel)
        return s


def execute(
    address: str, *words: str | bytes | int, timeout: float = 30.0, tls: TlsFiles | None = None
) -> pb.Value:
    """Run one command on `address`; its Value, or NodeError with Redis's error line."""
    return send(address, *words, timeout=timeout, tls=tls).value()


def send(
    address: str, *words: str | bytes | int, timeout: float = 30.0, tls: TlsFiles | None = None
) -> Pending:
    """Start one command on `address` and return at once: its `Pending` reply."""
    call = stub(address, tls).Execute.future(
        pb.Command(argv=[encode(w) for w in words]), timeout=timeout
    )
    return Pending(address, call)


class Pending:
    """A command sent and not yet answered (gRPC's future for it)."""

    def __init__(self, address: str, call: grpc.Future[pb.Reply]) -> None:
        self.address = address  # the node it was sent to
        self.call = call  # gRPC's future of its pb.Reply

    def value(self) -> pb.Value:
        """Wait for the reply: its Value, or NodeError with Redis's error line."""
        try:
            reply: pb.Reply = self.call.result()
        except grpc.RpcError as e:
            detail = e.details() if hasattr(e, "details") else str(e)
            raise NodeError(f"{self.address}: {detail}") from None
        if reply.WhichOneof("outcome") == "error":
            raise NodeError(f"{self.address}: {reply.error}")
        return reply.value

    def cancel(self) -> None:
        """Drop the call if it is still running (nothing if it is answered)."""
        self.call.cancel()


@dataclass(frozen=True)
class StreamState:
    exists: bool
    last_id: str = "0-0"
    length: int = 0
    first_id: str = "0-0"
    max_trimmed: str = "0-0"
    end_id: str = "0-0"
    splits: tuple[str, ...] = ()
    counts: tuple[int, ...] = (0,)


def splits(
    address: str,
    key: str,
    start: str,
    end: str,
    parts: int = 1,
    limit: int | None = None,
    tls: TlsFiles | None = None,
) -> StreamState:
    """XSPLITS on one node: cut points of `[start, end]` (XRANGE syntax) and stream state."""
    words: list[str | int] = ["XSPLITS", key, start, end, parts]
    if limit is not None:
        words += ["LIMIT", limit]
    value = execute(address, *words, tls=tls)
    kind = value.WhichOneof("kind")
    if kind == "null":
        return StreamState(exists=False)
    fields = _map(value)
    return StreamState(
        exists=True,
        last_id=fields["last-generated-id"].bulk.decode(),
        length=fields["length"].integer,
        first_id=fields["first-entry-id"].bulk.decode(),
        max_trimmed=fields["max-trimmed-entry-id"].bulk.decode(),
        end_id=fields["end-id"].bulk.decode(),
        splits=tuple(v.bulk.decode() for v in fields["splits"].array.items),
        counts=tuple(v.integer for v in fields["counts"].array.items),
    )


def _map(value: pb.Value) -> dict[str, pb.Value]:
    kind = value.WhichOneof("kind")
    if kind == "map":
        return {k.decode(): v for k, v in zip(value.map.keys, value.map.values, strict=True)}
    if kind == "array":  # RESP2-style flat pairs
        items = list(value.array.items)
        return {items[i].bulk.decode(): items[i + 1] for i in range(0, len(items), 2)}
    raise NodeError(f"unexpected XSPLITS reply kind {kind!r}")


def state(address: str, key: str, tls: TlsFiles | None = None) -> StreamState:
    """The stream's metadata only (an empty range: no node is walked)."""
    return splits(address, key, "+", "+", tls=tls)
