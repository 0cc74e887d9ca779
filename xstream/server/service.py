"""The gRPC edge: Streams and Admin servicers over a Node, and the server that hosts them.

Servicers only translate (wire.py) and call the node; a StreamError becomes a gRPC status
whose details are Redis's error line, with trailing metadata `xstream-error: 1` so clients can
tell a command's error from a transport failure (and, on a replica, `xstream-primary`).
`create_server` builds a server with health checking and reflection (grpcurl works) and
returns it with its bound port (port 0 picks a free one); a request that does not decode is
INVALID_ARGUMENT on every service (decoding.py). Reflection's servicer (grpc_reflection and
the descriptor protos it loads: ~2% of a starting node's instructions) is built at the first
reflection call, not at start-up (`LazyReflection`).

The servicers reach the node through a `Served` (host.Host): the node changes role in place
(promotion, demotion), and every call uses the node of the moment. Epochs at the edge: every
Streams reply (and error) carries the node's epoch in trailing metadata `xstream-epoch`; a
request may carry the highest epoch its client has seen in the same key, and a primary
refuses writes from a client that has seen a newer epoch than its own (it is stale).
Databases: a request's commands run in the database its metadata `xstream-db` names (0
without it; a bad index fails the request with SELECT's error line).
Argument bounds: the node floor never measures arguments; each edge bounds what it decodes.
Here every argv taken out of a request is held to proto-max-bulk-len (Limits.check_args,
Redis's "Protocol error: invalid bulk length" line) before the node sees it: a command fails
alone (a Pipeline's in its place, the others run; an Ingest batch ends the stream).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, NamedTuple, Protocol

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from xstream import protocol
from xstream.engine import StreamError, ingestwire
from xstream.engine.reply import EntryForm, Reply
from xstream.node import slices
from xstream.node.acl import Acl
from xstream.node.base import Argv, Node
from xstream.node.concern import Acks, WriteConcern
from xstream.node.stats import STATS
from xstream.node.store import DiskFault
from xstream.protocol import DB_KEY, EPOCH_KEY, MAX_MESSAGE, OFFSET_KEY, PRIMARY_KEY
from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc

from . import chunked, wire
from .decoding import Decoding
from .grpcauth import Guard, authorize

Context = grpc.aio.ServicerContext[Any, Any]
# grpc_reflection's reflection.SERVICE_NAME (the name its generated code registers).
REFLECTION = "grpc.reflection.v1alpha.ServerReflection"


class Served(Protocol):
    """What a server serves: the node of the moment, and the changes of its role."""

    @property
    def node(self) -> Node: ...

    async def promote(self, epoch: int) -> Node: ...

    async def replicaof(self, primary: str, epoch: int = 0) -> Node: ...

    @property
    def acl(self) -> Acl: ...


def _metadata_int(context: Context, key: str) -> int:
    for k, v in context.invocation_metadata() or ():
        if k == key:
            try:
                return int(v)
            except ValueError:
                return 0
    return 0


def _client_offset(context: Context) -> int:
    return _metadata_int(context, OFFSET_KEY)


def _db(node: Node, context: Context) -> int:
    """The request's database (metadata `xstream-db`, default 0), or SELECT's errors."""
    for k, v in context.invocation_metadata() or ():
        if k == DB_KEY:
            return node.engine.check_db(v.encode() if isinstance(v, str) else v)
    return 0


def _epoch_meta(node: Node) -> tuple[str, str]:
    return (EPOCH_KEY, str(node.epoch))


def _concern(msg: Any) -> WriteConcern | None:
    """The request's write concern in plain terms (None: the default, acks=leader)."""
    if not msg.HasField("concern"):
        return None
    return _plain_concern(msg.concern)


def _plain_concern(c: pb.WriteConcern) -> WriteConcern:
    return WriteConcern(Acks(protocol.acks_name(c.acks)), c.timeout_ms)  # unknown: quorum


class IngestRequest(NamedTuple):
    """One IngestBatch as the Ingest methods take it (`read_ingest`)."""

    key: bytes
    counts: list[int]
    elements: list[bytes]  # the request's own list: the engine may keep its items
    concern: WriteConcern | None


def read_ingest(raw: bytes) -> IngestRequest:
    """Ingest's decoder (the Decoding interceptor's, for Ingest and IngestOne): the message's
    wire form read by engine/ingestwire.py, not protobuf's parser (an element becomes one
    bytes object, not two: ~2,500 instructions an entry of three fields fewer); its
    WriteConcern, small, by protobuf. ValueError or DecodeError: undecodable."""
    batch = ingestwire.read(raw)
    concern = None
    if batch.has_concern():
        concern = _plain_concern(pb.WriteConcern.FromString(b"".join(batch.concern_parts)))
    return IngestRequest(batch.key, batch.counts, batch.elements, concern)


_STREAMS = pb.DESCRIPTOR.services_by_name["Streams"].full_name
INGEST_DECODERS = {f"/{_STREAMS}/Ingest": read_ingest, f"/{_STREAMS}/IngestOne": read_ingest}


async def abort(node: Node, context: Context, e: StreamError) -> None:
    STATS.error(e.line)
    meta = [protocol.ERROR_MARK, (OFFSET_KEY, str(node.offset)), _epoch_meta(node)]
    primary = getattr(node, "primary_address", "")
    if primary:
        meta.append((PRIMARY_KEY, primary))
    context.set_trailing_metadata(tuple(meta))
    await context.abort(wire.status_code(e.line), wire.error_text(e.line))


class StreamsService(pb_grpc.StreamsServicer):
    def __init__(self, served: Served) -> None:
        self.served = served

    @property
    def node(self) -> Node:
        return self.served.node

    async def _run(
        self,
        argv: Argv,
        context: Context,
        concern: WriteConcern | None = None,
        entries: EntryForm = "lists",
    ) -> tuple[Reply, int]:
        node = self.node
        STATS.command()
        try:
            authorize(self.served.acl, context, argv)
            node.check_client_epoch(_metadata_int(context, EPOCH_KEY), [argv])
            client_offset, db = _client_offset(context), _db(node, context)
            node.limits.check_args(argv)
            out = await node.execute(argv, concern, client_offset, db, entries=entries)
        except StreamError as e:
            await abort(node, context, e)
            raise  # unreachable: abort raises
        context.set_trailing_metadata((_epoch_meta(node),))
        return out

    async def Execute(self, request: pb.Command, context: Any) -> pb.Reply | bytes:  # noqa: N802
        argv = list(request.argv)
        with self._long_read(argv) as may_be_long:
            # a long forward XRANGE's entries come as pb.Entries (chunked.py, protocol.py)
            entries: EntryForm = "protobuf" if may_be_long else "lists"
            reply, offset = await self._run(argv, context, _concern(request), entries)
            if may_be_long and chunked.is_long(reply):
                out: pb.Reply | bytes = await chunked.reply(reply, offset)
            else:
                out = pb.Reply(value=protocol.to_value(reply), offset=offset)
            del reply  # freed before collections resume (slices.gc_paused)
        return out

    def _long_read(self, argv: Argv) -> AbstractContextManager[bool]:
        """Whether `argv` is a read that may be long (slices.py); if so, the GC is held off
        until its reply is encoded (in chunks, chunked.py, when it is long)."""
        if argv and slices.slices_for(argv, self.node.limits):
            return slices.gc_paused()
        return contextlib.nullcontext(False)

    async def Pipeline(self, request: pb.PipelineRequest, context: Any) -> pb.PipelineReply:  # noqa: N802
        argvs = [list(c.argv) for c in request.commands]
        node = self.node
        STATS.command(len(argvs))
        try:
            for argv in argvs:
                authorize(self.served.acl, context, argv)
            node.check_client_epoch(_metadata_int(context, EPOCH_KEY), argvs)
            db = _db(node, context)
            bounded, refused = _within_bounds(node.limits, argvs)
            results, offset = await node.pipeline(
                bounded, _concern(request), _client_offset(context), db
            )
            results = _in_place(results, refused)
        except StreamError as e:  # the pipeline's own acks (or a stale primary)
            await abort(node, context, e)
            raise
        context.set_trailing_metadata((_epoch_meta(node),))
        for r in results:
            if isinstance(r, StreamError):
                STATS.error(r.line)
        replies = [
            pb.Reply(error=wire.error_text(r.line))
            if isinstance(r, StreamError)
            else pb.Reply(value=protocol.to_value(r))
            for r in results
        ]
        return pb.PipelineReply(replies=replies, offset=offset)

    async def Ingest(  # noqa: N802
        self, request_iterator: AsyncIterator[IngestRequest], context: Any
    ) -> pb.IngestReply:
        return await self._ingest(request_iterator, context)

    async def IngestOne(self, request: IngestRequest, context: Any) -> pb.IngestReply:  # noqa: N802
        return await self._ingest(_alone(request), context)

    async def _ingest(self, batches: AsyncIterator[IngestRequest], context: Any) -> pb.IngestReply:
        """Each batch as one record of `XADD key *`s; the first error ends the stream (earlier
        batches stay); settled once, at the end, with the first batch's concern."""
        out = pb.IngestReply()
        concern: WriteConcern | None = None
        node = self.node
        client_epoch = _metadata_int(context, EPOCH_KEY)
        async for batch in batches:
            if out.batches == 0:
                concern = batch.concern
            STATS.command()
            try:
                elements = batch.elements
                node.limits.check_args([batch.key])  # as check_args([key, *elements])
                if node.limits.proto_max_bulk_len < MAX_MESSAGE:  # else none can be longer:
                    node.limits.check_args(elements)  # gRPC refused a message that large
                authorize(self.served.acl, context, [b"xadd", batch.key, b"*"])
                node.check_client_epoch(client_epoch)
                db = _db(node, context)
                counts = batch_counts(batch.counts, elements)
                ids = await node.ingest_batch(batch.key, elements, counts, db)
            except StreamError as e:
                STATS.error(e.line)
                out.error = wire.error_text(e.line)
                break
            if ids:
                first, last = ids
                out.first_ids.append(first.decode())
                out.last_ids.append(last.decode())
            out.entries += len(counts)
            out.batches += 1
        try:
            await node.settle(node.offset, concern)
        except StreamError as e:
            out.error = out.error or wire.error_text(e.line)
        out.offset = node.offset
        context.set_trailing_metadata((_epoch_meta(node),))
        return out

    async def XAdd(self, request: pb.XAddRequest, context: Any) -> pb.XAddReply:  # noqa: N802
        reply, offset = await self._run(wire.xadd_argv(request), context, _concern(request))
        return pb.XAddReply(id=reply.decode() if isinstance(reply, bytes) else "", offset=offset)

    async def XRange(  # noqa: N802
        self, request: pb.XRangeRequest, context: Any
    ) -> pb.EntriesReply | bytes:
        argv = wire.xrange_argv(request)
        with self._long_read(argv) as may_be_long:
            reply, _ = await self._run(argv, context)
            if may_be_long and chunked.is_long(reply):
                out: pb.EntriesReply | bytes = await chunked.entries_reply(reply)
            else:
                out = pb.EntriesReply(entries=wire.entries(reply))
            del reply
        return out

    async def XRead(self, request: pb.XReadRequest, context: Any) -> pb.StreamsReply | bytes:  # noqa: N802
        argv = wire.xread_argv(request)
        with self._long_read(argv) as may_be_long:
            reply, offset = await self._run(argv, context)
            if may_be_long and chunked.is_long(reply):
                out: pb.StreamsReply | bytes = await chunked.streams_reply(reply, offset)
            else:
                out = pb.StreamsReply(streams=wire.streams(reply), offset=offset)
            del reply
        return out

    async def XReadGroup(  # noqa: N802
        self, request: pb.XReadGroupRequest, context: Any
    ) -> pb.StreamsReply:
        argv = wire.xreadgroup_argv(request)
        reply, offset = await self._run(argv, context, _concern(request))
        return pb.StreamsReply(streams=wire.streams(reply), offset=offset)

    async def _count(self, argv: Argv, context: Any, concern: Any = None) -> pb.CountReply:
        reply, offset = await self._run(argv, context, concern)
        assert isinstance(reply, int)
        return pb.CountReply(count=reply, offset=offset)

    async def XLen(self, request: pb.KeyRequest, context: Any) -> pb.CountReply:  # noqa: N802
        return await self._count(wire.xlen_argv(request), context)

    async def XDel(self, request: pb.XDelRequest, context: Any) -> pb.CountReply:  # noqa: N802
        return await self._count(wire.xdel_argv(request), context, _concern(request))

    async def XTrim(self, request: pb.XTrimRequest, context: Any) -> pb.CountReply:  # noqa: N802
        return await self._count(wire.xtrim_argv(request), context, _concern(request))

    async def XAck(self, request: pb.XAckRequest, context: Any) -> pb.CountReply:  # noqa: N802
        return await self._count(wire.xack_argv(request), context, _concern(request))

    async def _reply(self, argv: Argv, context: Any, concern: Any = None) -> pb.Reply:
        reply, offset = await self._run(argv, context, concern)
        return pb.Reply(value=protocol.to_value(reply), offset=offset)

    async def XGroup(self, request: pb.XGroupRequest, context: Any) -> pb.Reply:  # noqa: N802
        return await self._reply(wire.xgroup_argv(request), context, _concern(request))

    async def XPending(self, request: pb.XPendingRequest, context: Any) -> pb.Reply:  # noqa: N802
        return await self._reply(wire.xpending_argv(request), context)

    async def XClaim(self, request: pb.XClaimRequest, context: Any) -> pb.Reply:  # noqa: N802
        return await self._reply(wire.xclaim_argv(request), context, _concern(request))

    async def XAutoClaim(self, request: pb.XAutoClaimRequest, context: Any) -> pb.Reply:  # noqa: N802
        return await self._reply(wire.xautoclaim_argv(request), context, _concern(request))

    async def XInfo(self, request: pb.XInfoRequest, context: Any) -> pb.Reply:  # noqa: N802
        return await self._reply(wire.xinfo_argv(request), context)

    async def XSetId(self, request: pb.XSetIdRequest, context: Any) -> pb.Reply:  # noqa: N802
        return await self._reply(wire.xsetid_argv(request), context, _concern(request))


def _within_bounds(
    limits: slices.Limits, argvs: list[Argv]
) -> tuple[list[Argv], dict[int, StreamError]]:
    """A pipeline's commands whose every argument is within proto-max-bulk-len, and the
    refusal of each other one by its place (an over-long command runs nothing, so the others
    run as if it had not been sent)."""
    refused: dict[int, StreamError] = {}
    for i, argv in enumerate(argvs):
        try:
            limits.check_args(argv)
        except StreamError as e:
            refused[i] = e
    if not refused:
        return argvs, refused
    return [argv for i, argv in enumerate(argvs) if i not in refused], refused


def _in_place(
    results: list[Reply | StreamError], refused: dict[int, StreamError]
) -> list[Reply | StreamError]:
    """The results of a pipeline's bounded commands with each refusal back in its place."""
    if not refused:
        return results
    ran = iter(results)
    return [refused[i] if i in refused else next(ran) for i in range(len(results) + len(refused))]


async def _alone(batch: IngestRequest) -> AsyncIterator[IngestRequest]:
    yield batch


def batch_counts(counts: list[int], elements: list[bytes]) -> list[int]:
    """An IngestBatch's counts (entry i: the next counts[i] of its elements), checked to add
    up to its elements; the engine cuts them itself (Engine.xadd_flat)."""
    if sum(counts) != len(elements):
        raise StreamError("Ingest batch: counts do not add up to the number of elements")
    return counts


def info_reply(info: dict[str, Any]) -> pb.InfoReply:
    out = pb.InfoReply()
    for k, v in info.items():
        if k == "history":
            out.history.extend(protocol.epoch_entries(v))
        elif k == "replicas":
            for r in v:
                out.replicas.add(
                    name=r["name"],
                    address=r["address"],
                    ack_offset=r["ack_offset"],
                    lag_offset=r["lag_offset"],
                    lag_ms=r["lag_ms"],
                    state=r["state"],
                )
        elif k in pb.InfoReply.DESCRIPTOR.fields_by_name:
            setattr(out, k, v)
    return out


class AdminService(pb_grpc.AdminServicer):
    def __init__(self, served: Served) -> None:
        self.served = served

    @property
    def node(self) -> Node:
        return self.served.node

    async def Info(self, request: pb.InfoRequest, context: Any) -> pb.InfoReply:  # noqa: N802
        return info_reply(self.node.info())

    async def Replicas(self, request: pb.InfoRequest, context: Any) -> pb.InfoReply:  # noqa: N802
        return info_reply(self.node.info())

    async def Wait(self, request: pb.WaitRequest, context: Any) -> pb.WaitReply:  # noqa: N802
        try:
            n = await self.node.wait_replicas(
                request.numreplicas, request.timeout_ms, request.offset or self.node.offset
            )
        except StreamError as e:
            await abort(self.node, context, e)
            raise
        return pb.WaitReply(replicas=n)

    async def Snapshot(self, request: pb.SnapshotRequest, context: Any) -> pb.SnapshotReply:  # noqa: N802
        try:
            offset, size = await self.node.snapshot_now()
        except (DiskFault, OSError) as e:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"snapshot failed: {e}")
            raise
        return pb.SnapshotReply(offset=offset, bytes=size)

    async def Digest(self, request: pb.DigestRequest, context: Any) -> pb.DigestReply:  # noqa: N802
        return pb.DigestReply(digest=self.node.engine.digest().hex(), offset=self.node.offset)

    async def Promote(self, request: pb.PromoteRequest, context: Any) -> pb.PromoteReply:  # noqa: N802
        try:
            node = await self.served.promote(request.epoch)
        except ValueError as e:  # not a transition this node can make now
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(e))
            raise
        info = node.info()
        return pb.PromoteReply(epoch=node.epoch, replid=info["replid"], offset=node.offset)

    async def ReplicaOf(  # noqa: N802
        self, request: pb.ReplicaOfRequest, context: Any
    ) -> pb.ReplicaOfReply:
        try:
            node = await self.served.replicaof(request.primary, request.epoch)
        except ValueError as e:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(e))
            raise
        return pb.ReplicaOfReply(role=node.info()["role"], offset=node.offset, epoch=node.epoch)


Registrar = Callable[[grpc.aio.Server], None]


def create_server(
    served: Served,
    address: str,
    extra: Sequence[tuple[Registrar, str]] = (),
    credentials: grpc.ServerCredentials | None = None,
) -> tuple[grpc.aio.Server, int]:
    """A gRPC server for `served` on `address` (host:port; port 0 = any free port), over TLS
    with `credentials` (tlsgrpc.py); it sets the node's `health` servicer."""
    server = grpc.aio.server(
        interceptors=[Decoding(INGEST_DECODERS), Guard(served)],
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE),
            ("grpc.max_send_message_length", MAX_MESSAGE),
            ("grpc.so_reuseport", 0),
        ],
    )
    pb_grpc.add_StreamsServicer_to_server(StreamsService(served), server)
    pb_grpc.add_AdminServicer_to_server(AdminService(served), server)
    names = [
        pb.DESCRIPTOR.services_by_name["Streams"].full_name,
        pb.DESCRIPTOR.services_by_name["Admin"].full_name,
    ]
    for register, name in extra:
        register(server)
        names.append(name)
    checker = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    names.append(health_pb2.DESCRIPTOR.services_by_name["Health"].full_name)
    names.append(REFLECTION)
    server.add_generic_rpc_handlers((LazyReflection(names),))
    if credentials is None:
        port = server.add_insecure_port(address)
    else:
        port = server.add_secure_port(address, credentials)
    if port == 0:
        raise OSError(f"cannot bind {address}")
    served.node.health = checker
    return server, port


class LazyReflection(grpc.GenericRpcHandler):
    """gRPC reflection of the services `names`, as grpc_reflection's
    enable_server_reflection serves it on an asyncio server, its servicer built (and its
    modules imported) at the first call of the reflection service."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)
        self.handler: grpc.GenericRpcHandler | None = None

    def service(
        self, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        method: str = handler_call_details.method
        if not method.startswith(f"/{REFLECTION}/"):
            return None
        if self.handler is None:
            self.handler = _reflection_handler(self.names)
        return self.handler.service(handler_call_details)


def _reflection_handler(names: list[str]) -> grpc.GenericRpcHandler:
    """The handler reflection_pb2_grpc.add_ServerReflectionServicer_to_server registers."""
    from grpc_reflection.v1alpha import reflection, reflection_pb2  # noqa: PLC0415 (above)

    servicer = reflection.aio.ReflectionServicer(names)
    info = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
    )
    return grpc.method_handlers_generic_handler(REFLECTION, {"ServerReflectionInfo": info})
