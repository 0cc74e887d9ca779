"""The replica's link: one Replication.Sync stream to the primary at a time, reconnecting with
backoff, translating between its messages and the Replica's plain calls (replica.py).

    -> Hello                 Replica.hello()
    <- Continue              Replica.on_continue(replid, offset, epoch, history)
    <- FullSync              Replica.on_full_sync(replid, offset, epoch, history, users, size)
    <- SnapshotChunk ...     Replica.on_snapshot_piece(data): loaded and written as it comes
                             (data: a view of the message's bytes, not parsed by protobuf)
    <- SnapshotEnd           Replica.on_snapshot()
    <- Records               Replica.on_records(start, data, primary_offset, time_ms, ack_now)
    <- Ping                  Replica.on_ping(epoch, primary_offset, ack_now)
    -> Ack(offset, lag_ms)   whenever Replica.next_ack() says one is due

What ends a stream, and what follows: a disk fault (the watcher resumes the log, then the link
syncs again), an OSError writing replid.json or epoch.json (retried each second), Diverged
(the replid is forgotten: a full sync next), StalePrimary or a malformed history (retried,
logged, until the replica is re-pointed), the stream breaking (reconnect with backoff).

With `tls` (the node's own material, node/tls.py) the link dials the primary over TLS,
verifying it with the node's CA and showing the node's certificate (mutual TLS between
nodes); each connection takes the material of the moment, so rotated files apply at the next
reconnect.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc

from xstream import protocol
from xstream.node import epochs
from xstream.node.handshake import Hello
from xstream.node.logs import slog
from xstream.node.store import DiskFault
from xstream.node.tls import Tls
from xstream.protocol import MAX_MESSAGE
from xstream.v1 import xstream_pb2 as pb

from .replica import Diverged, Replica, StalePrimary

# The primary's ACL refused this node's user (--primary-user/--primary-password, or none).
_REFUSED = (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)
_SYNC = f"/{pb.DESCRIPTOR.services_by_name['Replication'].full_name}/Sync"
_CHUNK = protocol.field_number(pb.PrimaryMessage, "chunk")
_CHUNK_DATA = protocol.field_number(pb.SnapshotChunk, "data")


def _primary_message(raw: bytes) -> pb.PrimaryMessage | memoryview:
    """Sync's deserializer: a SnapshotChunk's data as a view of the message's bytes (a full
    sync's ~1 MiB pieces, neither parsed nor copied by protobuf: the loader copies each node
    once from it, the file writer writes it), any other message parsed."""
    data = protocol.unframed(raw, _CHUNK, _CHUNK_DATA)
    return data if data is not None else pb.PrimaryMessage.FromString(raw)


async def follow(
    replica: Replica, tls: Tls | None = None, auth: tuple[tuple[str, str], ...] = ()
) -> None:
    """Follow the replica's primary until `replica.stop_link()` (grpc.aio may turn a task's
    cancellation into a CANCELLED error, so the loop does not rely on CancelledError alone)."""
    backoff = 0.05
    replica.linking()
    while replica.linked:
        if replica.store.fault:  # the disk watcher resumes the log, then we sync again
            await asyncio.sleep(0.2)
            continue
        try:
            await _sync_once(replica, tls, auth)
            backoff = 0.05
        except DiskFault as e:
            slog("replica_link_stopped_disk", level="error", error=str(e))
        except OSError as e:  # replid.json or epoch.json not written (a full disk): retry
            slog("replica_link_stopped_disk", level="error", error=e.strerror or str(e))
            backoff = 1.0
        except Diverged as e:
            slog("replica_diverged", level="error", error=str(e))
            replica.diverged()
        except StalePrimary as e:
            slog("stale_primary", level="warning", primary=replica.primary_address, error=str(e))
            backoff = 1.0
        except ValueError as e:  # a malformed epoch history from the primary
            slog("bad_primary_message", level="error", error=str(e))
            backoff = 1.0
        except grpc.aio.AioRpcError as e:
            if e.code() in _REFUSED:  # every try, as Redis logs each refused handshake
                slog("link_refused", level="error", code=str(e.code()), details=e.details())
            elif replica.link != "down":
                slog("link_down", level="warning", code=str(e.code()), details=e.details())
            backoff = min(backoff * 2, 1.0)
        replica.link_stopped("")
        if replica.linked:
            await asyncio.sleep(backoff)


def _channel(address: str, tls: Tls | None) -> grpc.aio.Channel:
    options = [
        ("grpc.max_receive_message_length", MAX_MESSAGE),
        ("grpc.max_send_message_length", MAX_MESSAGE),
    ]
    if tls is None:
        return grpc.aio.insecure_channel(address, options=options)
    m = tls.material
    creds = grpc.ssl_channel_credentials(m.ca, m.key, m.cert)
    return grpc.aio.secure_channel(address, creds, options=options)


async def _sync_once(
    replica: Replica, tls: Tls | None, auth: tuple[tuple[str, str], ...] = ()
) -> None:
    """One Sync call; `auth`: the call metadata naming the ACL user this node replicates as
    (xstream-user, xstream-password: --primary-user/--primary-password), sent as given."""
    hello = replica.hello()
    async with _channel(replica.primary_address, tls) as channel:
        sync = channel.stream_stream(
            _SYNC,
            request_serializer=pb.ReplicaMessage.SerializeToString,
            response_deserializer=_primary_message,
        )
        call = sync(_outgoing(replica, hello), metadata=auth)
        async for msg in call:
            if not replica.linked:
                call.cancel()
                return
            if replica.store.fault:
                call.cancel()
                raise DiskFault(replica.store.fault)
            if type(msg) is memoryview:
                replica.on_snapshot_piece(msg)
                continue
            kind = msg.WhichOneof("kind")
            if kind == "records":
                r = msg.records
                replica.check_epoch(r.epoch)
                replica.on_records(r.start, r.data, r.primary_offset, r.time_ms, r.ack_now)
            elif kind == "ping":
                replica.on_ping(msg.ping.epoch, msg.ping.primary_offset, msg.ping.ack_now)
            elif kind == "resume":
                c = msg.resume
                await replica.on_continue(
                    c.replid, c.offset, c.epoch, epochs.history_of(protocol.epoch_pairs(c.history))
                )
            elif kind == "chunk":
                replica.on_snapshot_piece(msg.chunk.data)
            elif kind == "full_sync":
                f = msg.full_sync
                history = epochs.history_of(protocol.epoch_pairs(f.history))
                replica.on_full_sync(f.replid, f.offset, f.epoch, history, f.users, f.size)
            elif kind == "snapshot_end":
                replica.on_snapshot()


async def _outgoing(replica: Replica, hello: Hello) -> AsyncIterator[pb.ReplicaMessage]:
    yield pb.ReplicaMessage(
        hello=pb.Hello(
            replid=hello.replid,
            offset=hello.offset,
            name=hello.name,
            address=hello.address,
            epoch=hello.epoch,
            history=protocol.epoch_entries(hello.history),
            log_start=hello.log_start,
        )
    )
    replica.hello_sent()  # resumed once grpc wrote the Hello: the primary has it
    while True:
        ack = await replica.next_ack()
        if ack is None:
            return  # the own log failed; the link stops at its next message
        offset, lag_ms = ack
        yield pb.ReplicaMessage(ack=pb.Ack(offset=offset, lag_ms=lag_ms))
