"""The Replication service on the primary: one bidirectional stream per replica.

    replica -> primary   Hello(replid, offset, epoch, history, ...), then Ack(offset) continuously
    primary -> replica   Continue | FullSync (with the users), SnapshotChunk..., SnapshotEnd;
                         then Records and, when idle, a Ping every second; each carries the
                         primary's epoch

Only a primary serves (the service is on every node: a replica can be promoted in place); a
Hello with a higher epoch than the primary's deposes it, and a deposed primary serves no one
(FAILED_PRECONDITION). Partial resync when the replica's (replid, offset) is in this primary's
history and backlog, at the point where its log stops agreeing with ours by epoch (it may cut
back a divergent tail first: Primary.resume_point); otherwise a full sync: a snapshot taken
at once (consistent at one offset: snapshot.captured, full nodes by reference, so the primary
never holds a copy of its data set) joined into ~1 MiB chunks as they are streamed, then the
records from its offset. Records messages carry runs of the byte stream, up to ~256 KiB each
(a replica acks between two, so a long run does not hold its ack back), never one message per
command: under a stream of small writes a sender sends at most one message per COALESCE
(2 ms), so that each message, and each wake-up and log write on the replica, carries many
records; a message that asks for an ack (a write or WAIT waiting for acks, or room in the
flow window: flow.py) goes at once. A replica whose position falls out of the backlog while
it is being served is disconnected (it reconnects and full-syncs).

Hostile or broken peers (peers.py): a Hello with an empty or absurd name or an address that
is not HOST:PORT, any message after it but an Ack, an Ack beyond the offset sent on its link,
or a message that does not decode: the call is closed with INVALID_ARGUMENT and the reason,
logged (`replica_refused`, `replica_protocol_error`), and the link detached; nothing else is
affected. The sender records what it hands over (`ReplicaLink.sent`) *before* each message
goes out, so a replica's honest ack can never be above it. A replica that reconnects gets a
new link that replaces its old one; the old call ends at its sender's next step.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc

from xstream import protocol
from xstream.clock import now_ms
from xstream.engine import snapshot
from xstream.engine.snapload import CRC_SIZE
from xstream.node import epochs
from xstream.node.base import Node
from xstream.node.logs import slog
from xstream.node.metrics import METRICS
from xstream.node.store import DiskFault
from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc

from . import peers
from .primary import Primary, ReplicaLink

Context = grpc.aio.ServicerContext[Any, Any]

CHUNK = 256 << 10  # bytes of records per message (at least one commit's)
SNAPSHOT_PIECE = 1 << 20  # bytes of a full sync's snapshot per message (about)
PING_EVERY = 1.0
COALESCE = 0.002  # seconds: a sender sends a short run at most this often (ack_now: at once)
COALESCE_BYTES = 256 << 10  # a run this long goes at once


def hello_of(msg: pb.Hello) -> peers.Hello:
    """The plain Hello (ValueError if its epoch history is not one)."""
    return peers.Hello(
        name=msg.name,
        address=msg.address,
        replid=msg.replid,
        offset=msg.offset,
        log_start=msg.log_start,
        epoch=msg.epoch,
        history=epochs.history_of(protocol.epoch_pairs(msg.history)),
    )


_CHUNK = protocol.field_number(pb.PrimaryMessage, "chunk")
_CHUNK_DATA = protocol.field_number(pb.SnapshotChunk, "data")


def chunk_message(data: bytes) -> bytes:
    """PrimaryMessage(chunk=SnapshotChunk(data=data)), serialized: the piece copied once,
    behind its two field headers (the message built, then serialized, copied it twice; the
    server's serializer lets bytes through, server/decoding.py)."""
    return b"".join(protocol.framed(_CHUNK, protocol.framed(_CHUNK_DATA, [data])))


class ReplicationService(pb_grpc.ReplicationServicer):
    def __init__(self, serving: Callable[[], Node]) -> None:
        self.serving = serving  # the node served now (it may change role in place)

    async def _primary_for(self, hello: peers.Hello, context: Context) -> Primary | None:
        """The primary that will serve this Hello, or None once the call is aborted."""
        p = self.serving()
        if not isinstance(p, Primary) or p.closed:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "not a primary")
            return None
        verdict = epochs.on_hello(p.epochs, hello.epoch)
        if verdict is epochs.HelloVerdict.STEP_DOWN:
            p.step_down(hello.epoch, f"replica {hello.name} has seen epoch {hello.epoch}")
        if verdict is not epochs.HelloVerdict.SERVE:
            slog("replica_refused", level="warning", replica=hello.name, epoch=hello.epoch,
                 own_epoch=p.epochs.epoch, leader_epoch=p.epochs.leader_epoch)  # fmt: skip
            await context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"deposed primary: epoch {p.epochs.epoch} is newer than its epoch "
                f"{p.epochs.leader_epoch}",
            )
            return None
        return p

    async def Sync(  # noqa: N802 (gRPC method name)
        self,
        request_iterator: AsyncIterator[pb.ReplicaMessage],
        context: Context,
    ) -> AsyncIterator[pb.PrimaryMessage | bytes]:
        first = await anext(request_iterator, None)
        raw = first.hello if first is not None else pb.Hello()
        try:
            if first is None or first.WhichOneof("kind") != "hello":
                raise peers.PeerError("the first message must be hello")
            peers.check_hello(raw.name, raw.address)
            hello = hello_of(raw)
        except ValueError as e:  # PeerError, or not an epoch history
            await self._refuse(context, raw, str(e))
            return
        p = await self._primary_for(hello, context)
        if p is None:
            return
        behind = p.check_replica_behind(hello)
        if behind:
            slog("replica_refused", level="error", replica=hello.name, reason=behind)
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, behind)
            return
        point = p.resume_point(hello)
        link = p.attach(hello)
        acks = asyncio.create_task(self._read_acks(request_iterator, link, p, context))
        try:
            if point is not None:
                pos = link.ack_offset = link.sent = point
                p.partial_syncs += 1
                METRICS.partial_syncs.inc()
                slog("partial_resync", replica=link.name, offset=pos, backlog=p.offset - pos,
                     cut_back=hello.offset - pos)  # fmt: skip
                yield pb.PrimaryMessage(
                    resume=pb.Continue(
                        replid=p.replid,
                        offset=pos,
                        epoch=p.epochs.epoch,
                        history=protocol.epoch_entries(p.epochs.history),
                    )
                )
            else:
                link.ack_offset = 0
                built = time.monotonic()
                offset, parts, users = p.sync_snapshot()
                built = time.monotonic() - built
                try:  # fsync=always: only a durable state is shipped
                    await p.store.durable(offset)
                except DiskFault as e:
                    await context.abort(grpc.StatusCode.UNAVAILABLE, f"primary's disk: {e}")
                    return
                async for msg in self._full_sync(p, link, hello, offset, parts, users, built):
                    yield msg
                pos = offset
            link.state = "online"
            async for msg in self._records(p, link, pos, acks):
                yield msg
        finally:
            acks.cancel()
            p.detach(link)
            slog("replica_detached", replica=link.name, ack_offset=link.ack_offset)

    @staticmethod
    async def _refuse(context: Context, hello: pb.Hello, why: str) -> None:
        slog("replica_refused", level="warning", replica=hello.name[: peers.MAX_NAME],
             address=hello.address[:80], error=why)  # fmt: skip
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, why)

    async def _full_sync(
        self,
        p: Primary,
        link: ReplicaLink,
        hello: peers.Hello,
        offset: int,
        parts: list[bytes],
        users: bytes,
        built: float,
    ) -> AsyncIterator[pb.PrimaryMessage | bytes]:
        """FullSync, the snapshot's pieces (joined from `parts` as they go, snapshot.pieces;
        `built` seconds to capture them, logged), SnapshotEnd."""
        t0 = time.monotonic()
        size = sum(map(len, parts)) + CRC_SIZE
        chunks = max(1, -(-size // SNAPSHOT_PIECE))
        p.full_syncs += 1
        METRICS.full_syncs.inc()
        slog(
            "full_resync_start",
            replica=link.name,
            asked_replid=hello.replid,
            asked_offset=hello.offset,
            offset=offset,
            bytes=size,
            chunks=chunks,
            build_seconds=round(built, 3),
        )
        link.sent = offset
        yield pb.PrimaryMessage(
            full_sync=pb.FullSync(
                replid=p.replid,
                offset=offset,
                size=size,
                epoch=p.epochs.epoch,
                history=protocol.epoch_entries(p.epochs.history),
                users=users,
            )
        )
        sent = 0
        step = max(1, chunks // 10)
        for i, chunk in enumerate(snapshot.sealed(snapshot.pieces(parts, SNAPSHOT_PIECE))):
            yield chunk_message(chunk)
            sent += len(chunk)
            if (i + 1) % step == 0 or sent == size:
                slog("full_resync_progress", replica=link.name, sent=sent, bytes=size)
        yield pb.PrimaryMessage(snapshot_end=pb.SnapshotEnd())
        slog(
            "full_resync_sent",
            replica=link.name,
            offset=offset,
            seconds=round(time.monotonic() - t0, 3),
        )

    async def _records(
        self, p: Primary, link: ReplicaLink, pos: int, reader: asyncio.Task[None]
    ) -> AsyncIterator[pb.PrimaryMessage]:
        """Records from `pos` on, until the role ends, the link is replaced or its reader
        stops (the replica's side ended, or it broke the protocol and the call is closed)."""
        last_sent = time.monotonic()
        epoch = p.epochs.epoch
        answered = p.getacks  # the GETACKs this sender has pinged for
        while True:
            if p.closed or p.epochs.deposed or reader.done() or not p.serves(link):
                slog("replica_link_closed", replica=link.name, pos=pos, deposed=p.epochs.deposed,
                     replaced=not p.serves(link))  # fmt: skip
                return
            shippable = p.shippable()
            data = await p.stream_from(pos, CHUNK, shippable)
            if data is None:  # a snapshot superseded the log it was reading
                slog("replica_fell_out_of_backlog", level="warning", replica=link.name, pos=pos)
                return
            if p.closed or not p.serves(link):  # while the log was read
                continue
            backlog = p.backlog
            ack_now = bool(p.acks_wanted())
            if data:
                hold = last_sent + COALESCE - time.monotonic()
                if hold > 0 and len(data) < COALESCE_BYTES and not ack_now:
                    await asyncio.sleep(hold)  # more commits join this message
                    continue
                committed = p.commit_times.first_after(pos) or time.time()
                link.sent = pos + len(data)  # before it goes out: its ack may come at once
                ack_now = ack_now or p.pacer.wants_ack(link)
                yield pb.PrimaryMessage(
                    records=pb.Records(
                        start=pos,
                        data=data,
                        time_ms=int(committed * 1000),
                        primary_offset=p.offset,
                        ack_now=ack_now,
                        epoch=epoch,
                    )
                )
                pos += len(data)
                last_sent = time.monotonic()
                continue
            if shippable < backlog.end:  # fsync=always: wait for the group commit
                try:
                    await p.store.durable(backlog.end)
                except DiskFault:
                    await p.new_data.wait(PING_EVERY)  # rolled back: the backlog changed
                continue
            wait = PING_EVERY - (time.monotonic() - last_sent)
            if wait > 0 and not (ack_now and p.getacks != answered):
                await p.new_data.wait(wait)
                continue
            answered = p.getacks
            yield pb.PrimaryMessage(
                ping=pb.Ping(
                    primary_offset=p.offset,
                    time_ms=now_ms(),
                    ack_now=ack_now,
                    epoch=epoch,
                )
            )
            last_sent = time.monotonic()

    async def _read_acks(
        self,
        request_iterator: AsyncIterator[pb.ReplicaMessage],
        link: ReplicaLink,
        p: Primary,
        context: Context,
    ) -> None:
        """Count the replica's acks until its side ends; a protocol violation closes the call
        (from this task: the sender may be blocked on a send) and detaches the link."""
        try:
            async for msg in request_iterator:
                kind = msg.WhichOneof("kind")
                if kind != "ack":
                    raise peers.PeerError(f"unexpected {kind or 'empty'} message after hello")
                p.on_ack(link, msg.ack.offset, msg.ack.lag_ms)
        except peers.PeerError as e:
            self._violated(p, link, str(e))
            with contextlib.suppress(grpc.aio.AbortError):  # raised once the status is sent
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        except grpc.aio.AbortError:  # a message that did not decode (decoding.py closed it)
            self._violated(p, link, "undecodable message")
        except asyncio.CancelledError:
            # The same abort, seen as the call's end: on uvloop the call is cancelled while
            # decoding.py's abort is still sending its status.
            if context.code() is grpc.StatusCode.INVALID_ARGUMENT:
                self._violated(p, link, "undecodable message")
            raise

    @staticmethod
    def _violated(p: Primary, link: ReplicaLink, why: str) -> None:
        slog("replica_protocol_error", level="warning", replica=link.name, address=link.address,
             sent=link.sent, ack_offset=link.ack_offset, error=why)  # fmt: skip
        p.detach(link)
