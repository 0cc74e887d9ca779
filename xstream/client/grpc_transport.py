"""The gRPC transport: a Client's link to an xstream cluster.

Writes go to the primary; reads go to the primary, or with `read_from="replica"` round-robin
to the replicas (listed, or discovered from the primary's Admin.Info), falling back to the
primary when no replica answers. Every write reply carries the primary's replication
offset; the transport remembers the highest as this client's session offset, which WAIT
waits for (Redis's per-connection WAIT).

Retries (`retries`, backoff doubling from `retry_backoff` s): a read is retried when the
node is unavailable; a write only when the call never reached a server (connection refused
or no route), since a write that may have been applied must not be applied twice (use XADD
with an explicit ID or IDMP to make a write safe to retry yourself). A command's error is
never retried: it raises `ResponseError` with Redis's text. `acks` ("leader", "quorum",
"all") and `acks_timeout_ms` set the write concern of every write.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from itertools import count
from typing import Any, TypeVar

import grpc

from xstream.engine.api import format_ids
from xstream.engine.ids import parse_strict
from xstream.engine.reply import Reply
from xstream.server import wire
from xstream.server.service import MAX_MESSAGE, OFFSET_KEY
from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc

from .errors import ConnectionError, ResponseError, TimeoutError, error_from_line

Argv = list[bytes]
T = TypeVar("T")
_ACKS = {"leader": pb.ACKS_LEADER, "quorum": pb.ACKS_QUORUM, "all": pb.ACKS_ALL}
INGEST_BATCH = 4096  # entries per streamed Ingest message


def _not_sent(e: grpc.RpcError) -> bool:
    """True when the call certainly never reached a server."""
    if e.code() != grpc.StatusCode.UNAVAILABLE:
        return False
    text = (e.details() or "").lower()
    return any(s in text for s in ("failed to connect", "connection refused", "no route"))


def _block_timeout(argv: Argv, default: float) -> float | None:
    """A deadline that outlives a BLOCK (None for BLOCK 0: wait forever)."""
    words = [a.upper() for a in argv]
    if b"BLOCK" in words:
        i = words.index(b"BLOCK")
        try:
            ms = int(argv[i + 1])
        except (IndexError, ValueError):
            return default
        return None if ms == 0 else ms / 1000 + default
    return default


class GrpcTransport:
    def __init__(
        self,
        host: str = "localhost",
        port: int = 7700,
        *,
        read_from: str = "primary",
        replicas: Sequence[str] | None = None,
        acks: str = "leader",
        acks_timeout_ms: int = 0,
        timeout: float = 30.0,
        retries: int = 3,
        retry_backoff: float = 0.05,
    ) -> None:
        if read_from not in ("primary", "replica"):
            raise ValueError("read_from must be 'primary' or 'replica'")
        if acks not in _ACKS:
            raise ValueError("acks must be 'leader', 'quorum' or 'all'")
        self.primary = f"{host}:{port}"
        self.read_from = read_from
        self.replicas: list[str] | None = list(replicas) if replicas is not None else None
        self.concern = pb.WriteConcern(acks=_ACKS[acks], timeout_ms=acks_timeout_ms)
        self.timeout = timeout
        self.retries = retries
        self.retry_backoff = retry_backoff
        self.last_offset = 0  # the session offset: the highest offset a write returned
        self._channels: dict[str, grpc.Channel] = {}
        self._rr = count()

    # ------------------------------------------------------------ plumbing

    def _channel(self, address: str) -> grpc.Channel:
        ch = self._channels.get(address)
        if ch is None:
            ch = self._channels[address] = grpc.insecure_channel(
                address,
                options=[
                    ("grpc.max_receive_message_length", MAX_MESSAGE),
                    ("grpc.max_send_message_length", MAX_MESSAGE),
                ],
            )
        return ch

    def _read_targets(self) -> list[str]:
        if self.read_from == "primary":
            return [self.primary]
        if self.replicas is None:
            self.replicas = self._discover()
        if not self.replicas:
            return [self.primary]
        i = next(self._rr) % len(self.replicas)
        return [*self.replicas[i:], *self.replicas[:i], self.primary]

    def _discover(self) -> list[str]:
        info = self._call(
            [self.primary],
            lambda ch: pb_grpc.AdminStub(ch).Info(pb.InfoRequest(), timeout=self.timeout),
            write=False,
        )
        return [r.address for r in info.replicas if r.state == "online"]

    def _call(self, targets: list[str], fn: Callable[[grpc.Channel], T], *, write: bool) -> T:
        delay = self.retry_backoff
        last: grpc.RpcError | None = None
        for attempt in range(self.retries + 1):
            for address in targets:
                try:
                    return fn(self._channel(address))
                except grpc.RpcError as e:
                    trailer = dict(e.trailing_metadata() or ())
                    if trailer.get(wire.ERROR_MARK[0]):
                        if write and trailer.get(OFFSET_KEY, "").isdigit():
                            self.last_offset = max(self.last_offset, int(trailer[OFFSET_KEY]))
                        raise error_from_line(e.details() or "ERR") from None
                    if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                        raise TimeoutError(f"{address}: {e.details()}") from None
                    last = e
                    if write and not _not_sent(e):
                        raise ConnectionError(
                            f"{address}: {e.code().name}: {e.details()} (the write may or may "
                            "not have been applied)"
                        ) from None
            if attempt < self.retries:
                time.sleep(delay)
                delay *= 2
        assert last is not None
        raise ConnectionError(f"{targets[0]}: {last.code().name}: {last.details()}") from None

    def _metadata(self, argv: Argv) -> tuple[tuple[str, str], ...]:
        if argv and argv[0].upper() == b"WAIT" and self.last_offset:
            return ((OFFSET_KEY, str(self.last_offset)),)
        return ()

    # ------------------------------------------------------------ Transport

    def execute(self, argv: Argv, *, write: bool) -> Reply:
        cmd = pb.Command(argv=argv, concern=self.concern if write else None)
        timeout = _block_timeout(argv, self.timeout)
        meta = self._metadata(argv)
        targets = [self.primary] if write else self._read_targets()
        reply: pb.Reply = self._call(
            targets,
            lambda ch: pb_grpc.StreamsStub(ch).Execute(cmd, timeout=timeout, metadata=meta),
            write=write,
        )
        if write:
            self.last_offset = max(self.last_offset, reply.offset)
        return wire.from_value(reply.value)

    def execute_many(self, argvs: Sequence[Argv], *, write: bool) -> list[Reply | ResponseError]:
        req = pb.PipelineRequest(
            commands=[pb.Command(argv=a) for a in argvs], concern=self.concern if write else None
        )
        blocking = [_block_timeout(a, self.timeout) for a in argvs]
        timeout = None if None in blocking else max([self.timeout, *blocking])  # type: ignore[type-var]
        targets = [self.primary] if write else self._read_targets()
        reply: pb.PipelineReply = self._call(
            targets,
            lambda ch: pb_grpc.StreamsStub(ch).Pipeline(req, timeout=timeout),
            write=write,
        )
        if write:
            self.last_offset = max(self.last_offset, reply.offset)
        out: list[Reply | ResponseError] = []
        for r in reply.replies:
            if r.WhichOneof("outcome") == "error":
                out.append(error_from_line(r.error))
            else:
                out.append(wire.from_value(r.value))
        return out

    def xadd_many(self, key: bytes, entries: Sequence[Sequence[bytes]]) -> list[bytes]:
        batches = [entries[i : i + INGEST_BATCH] for i in range(0, len(entries), INGEST_BATCH)]

        def requests() -> Any:
            for i, batch in enumerate(batches):
                msg = pb.IngestBatch(
                    key=key,
                    counts=[len(fv) for fv in batch],
                    elements=[x for fv in batch for x in fv],
                )
                if i == 0:
                    msg.concern.CopyFrom(self.concern)
                yield msg

        reply: pb.IngestReply = self._call(
            [self.primary],
            lambda ch: pb_grpc.StreamsStub(ch).Ingest(requests(), timeout=self.timeout),
            write=True,
        )
        self.last_offset = max(self.last_offset, reply.offset)
        if reply.error and reply.batches == 0:
            raise error_from_line(reply.error)
        ids: list[bytes] = []
        for first, batch in zip(reply.first_ids, batches, strict=False):
            ids += format_ids(parse_strict(first.encode()), len(batch))
        if reply.error:
            raise error_from_line(reply.error)
        return ids

    def wait(self, numreplicas: int, timeout_ms: int) -> int:
        req = pb.WaitRequest(
            numreplicas=numreplicas, timeout_ms=timeout_ms, offset=self.last_offset
        )
        reply: pb.WaitReply = self._call(
            [self.primary],
            lambda ch: pb_grpc.AdminStub(ch).Wait(req, timeout=None),
            write=False,
        )
        return reply.replicas

    def close(self) -> None:
        for ch in self._channels.values():
            ch.close()
        self._channels.clear()

    def __repr__(self) -> str:
        return f"GrpcTransport(primary={self.primary!r}, read_from={self.read_from!r})"
