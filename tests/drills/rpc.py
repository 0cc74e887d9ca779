"""Raw gRPC calls to one node, keeping what a Client hides: the epoch the node answered at
(the `xstream-epoch` trailer), and Redis's error line verbatim.

    ch = channel("127.0.0.1:32768", credentials)     # TLS: the certificate names the user
    answer = execute(ch, [b"XADD", b"s", b"*", b"v", b"1"], acks="quorum", timeout=3.0)
    answer.value  (an engine Reply: bytes, int, list ...)   answer.epoch
    raises CommandError(line, epoch) for an error reply, grpc.RpcError for a broken call

The drills read each node's own state through these (a Client may route reads to the
primary), and the writers write through them, to know who acknowledged what at which epoch.
`seen_epoch` is sent as the `xstream-epoch` request metadata, so a stale primary refuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import grpc

from xstream.engine.reply import Reply
from xstream.protocol import EPOCH_KEY, ERROR_MARK, MAX_MESSAGE, from_value
from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc

ACKS = {"leader": pb.ACKS_LEADER, "quorum": pb.ACKS_QUORUM, "all": pb.ACKS_ALL}


@dataclass(frozen=True)
class Answer:
    value: Reply  # the engine's reply
    epoch: int  # the answering node's epoch (0 if the trailer was missing)


class CommandError(Exception):
    """The node answered with a Redis error line (nothing went wrong on the wire)."""

    def __init__(self, line: str, epoch: int) -> None:
        super().__init__(line)
        self.line = line
        self.epoch = epoch


def channel(address: str, credentials: grpc.ChannelCredentials | None = None) -> grpc.Channel:
    """Over TLS with `credentials` (a client certificate naming the user the calls run as)."""
    options = [
        ("grpc.max_receive_message_length", MAX_MESSAGE),
        ("grpc.max_send_message_length", MAX_MESSAGE),
    ]
    if credentials is None:
        return grpc.insecure_channel(address, options=options)
    return grpc.secure_channel(address, credentials, options=options)


def _epoch(trailers: Any) -> int:
    for key, value in trailers or ():
        if key == EPOCH_KEY and str(value).isdigit():
            return int(value)
    return 0


def execute(
    ch: grpc.Channel,
    argv: list[bytes],
    *,
    acks: str | None = None,
    acks_timeout_ms: int = 0,
    timeout: float = 3.0,
    seen_epoch: int = 0,
) -> Answer:
    """One command; acks=None sends no write concern (reads)."""
    concern = None if acks is None else pb.WriteConcern(acks=ACKS[acks], timeout_ms=acks_timeout_ms)
    meta = ((EPOCH_KEY, str(seen_epoch)),) if seen_epoch else ()
    stub = pb_grpc.StreamsStub(ch)
    try:
        reply, call = stub.Execute.with_call(
            pb.Command(argv=argv, concern=concern), timeout=timeout, metadata=meta
        )
    except grpc.RpcError as e:
        trailers = e.trailing_metadata()
        if ERROR_MARK in tuple(trailers or ()):
            raise CommandError(e.details() or "ERR", _epoch(trailers)) from None
        raise
    return Answer(from_value(reply.value), _epoch(call.trailing_metadata()))


def not_sent(e: grpc.RpcError) -> bool:
    """True when the call certainly never reached a server (so nothing was applied)."""
    if e.code() != grpc.StatusCode.UNAVAILABLE:
        return False
    text = (e.details() or "").lower()
    return any(s in text for s in ("failed to connect", "connection refused", "no route"))


def info(ch: grpc.Channel, timeout: float = 1.0) -> pb.InfoReply:
    reply: pb.InfoReply = pb_grpc.AdminStub(ch).Info(pb.InfoRequest(), timeout=timeout)
    return reply


def digest(ch: grpc.Channel, timeout: float = 5.0) -> pb.DigestReply:
    reply: pb.DigestReply = pb_grpc.AdminStub(ch).Digest(pb.DigestRequest(), timeout=timeout)
    return reply
