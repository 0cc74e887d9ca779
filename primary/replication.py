"""The Replication service on the primary: one bidirectional stream per replica.

    replica -> primary   Hello(replid, offset, name, address), then Ack(offset) continuously
    primary -> replica   Continue | FullSync, SnapshotChunk..., SnapshotEnd; then Records and,
                         when idle, a Ping every second

Partial resync when the replica's (replid, offset) is in this primary's history and backlog;
otherwise a full sync: a snapshot taken at once (consistent at one offset) streamed in ~1 MiB
chunks, then the records from its offset. Records messages carry runs of the byte stream,
up to ~1 MiB each, never one message per command. A replica whose position falls out of the
backlog while it is being served is disconnected (it reconnects and full-syncs).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import grpc

from xstream.server.logs import slog
from xstream.server.metrics import METRICS
from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc

from .primary import Primary, ReplicaLink

CHUNK = 1 << 20
PING_EVERY = 1.0


class ReplicationService(pb_grpc.ReplicationServicer):
    def __init__(self, primary: Primary) -> None:
        self.primary = primary

    async def Sync(  # noqa: N802 (gRPC method name)
        self, request_iterator: AsyncIterator[pb.ReplicaMessage], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.PrimaryMessage]:
        first = await anext(request_iterator, None)
        if first is None or first.WhichOneof("kind") != "hello":
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the first message must be hello")
            return
        p = self.primary
        hello = first.hello
        link = p.attach(hello)
        acks = asyncio.create_task(self._read_acks(request_iterator, link))
        try:
            if p.can_continue(hello.replid, hello.offset):
                pos = hello.offset
                p.partial_syncs += 1
                METRICS.partial_syncs.inc()
                slog("partial_resync", replica=link.name, offset=pos, backlog=p.offset - pos)
                yield pb.PrimaryMessage(resume=pb.Continue(replid=p.replid, offset=pos))
            else:
                link.ack_offset = 0
                offset, chunks = p.sync_snapshot()
                async for msg in self._full_sync(link, hello, offset, chunks):
                    yield msg
                pos = offset
            link.state = "online"
            async for msg in self._records(link, pos):
                yield msg
        finally:
            acks.cancel()
            p.detach(link)
            slog("replica_detached", replica=link.name, ack_offset=link.ack_offset)

    async def _full_sync(
        self, link: ReplicaLink, hello: pb.Hello, offset: int, chunks: list[bytes]
    ) -> AsyncIterator[pb.PrimaryMessage]:
        p = self.primary
        t0 = time.monotonic()
        size = sum(map(len, chunks))
        p.full_syncs += 1
        METRICS.full_syncs.inc()
        slog(
            "full_resync_start",
            replica=link.name,
            asked_replid=hello.replid,
            asked_offset=hello.offset,
            offset=offset,
            bytes=size,
            chunks=len(chunks),
        )
        yield pb.PrimaryMessage(full_sync=pb.FullSync(replid=p.replid, offset=offset, size=size))
        sent = 0
        step = max(1, len(chunks) // 10)
        for i, chunk in enumerate(chunks):
            yield pb.PrimaryMessage(chunk=pb.SnapshotChunk(data=chunk))
            sent += len(chunk)
            if (i + 1) % step == 0 or i + 1 == len(chunks):
                slog("full_resync_progress", replica=link.name, sent=sent, bytes=size)
        yield pb.PrimaryMessage(snapshot_end=pb.SnapshotEnd())
        slog(
            "full_resync_sent",
            replica=link.name,
            offset=offset,
            seconds=round(time.monotonic() - t0, 3),
        )

    async def _records(self, link: ReplicaLink, pos: int) -> AsyncIterator[pb.PrimaryMessage]:
        p = self.primary
        last_sent = time.monotonic()
        while True:
            backlog = p.backlog
            if pos < backlog.start:
                slog("replica_fell_out_of_backlog", level="warning", replica=link.name, pos=pos)
                return
            data = backlog.read(pos, CHUNK)
            ack_now = bool(p.acks_wanted())
            if data:
                committed = p.commit_times.first_after(pos) or time.time()
                yield pb.PrimaryMessage(
                    records=pb.Records(
                        start=pos,
                        data=data,
                        time_ms=int(committed * 1000),
                        primary_offset=p.offset,
                        ack_now=ack_now,
                    )
                )
                pos += len(data)
                last_sent = time.monotonic()
                continue
            wait = PING_EVERY - (time.monotonic() - last_sent)
            if wait > 0 and not (ack_now and p.getack):
                await p.new_data.wait(wait)
                continue
            p.getack = False
            yield pb.PrimaryMessage(
                ping=pb.Ping(
                    primary_offset=p.offset, time_ms=int(time.time() * 1000), ack_now=ack_now
                )
            )
            last_sent = time.monotonic()

    async def _read_acks(
        self, request_iterator: AsyncIterator[pb.ReplicaMessage], link: ReplicaLink
    ) -> None:
        async for msg in request_iterator:
            if msg.WhichOneof("kind") == "ack":
                if link.state == "sync":
                    continue
                self.primary.on_ack(link, msg.ack.offset, msg.ack.lag_ms)
