"""The gRPC transport: a Client's link to an xstream cluster.

Writes go to the primary; reads go to the primary, or with `read_from="replica"` round-robin
to the replicas, falling back to the primary when no replica answers.

Two modes. Without `nodes` the transport talks to `host:port` as redis-py talks to one Redis:
a write a replica refuses raises its READONLY error. With `nodes` (extra seed "host:port"
strings; an empty list is enough) it fails over: the seeds are `host:port` plus `nodes`; the
primary is found by asking every seed's Admin.Info (failover.resolve), and calls that fail for
a failover are sent again, rediscovering first, for up to `failover_timeout` seconds (pauses
from `retry_backoff` s doubling to 0.2 s). Without `nodes`, `retries` bounds the tries instead.

With `nodes`, one try of a command or pipeline waits at most min(`timeout`, `failover_timeout`
/ 2) (at least 1 s; plus its BLOCK time), so a paused or cut-off primary does not hold a call
past the failover budget; `xadd_many` (bulk) keeps `timeout`.

Retry rules (failover.py, idempotence.py): a write is sent again when it certainly was not
applied (the call never reached a server; READONLY, when failing over), or when its outcome is
unknown (LEASELOST, ACKTIMEOUT, the link broke after sending, a deadline) only if it is
repeatable: an XADD with IDMP/IDMPAUTO, whose repeat answers the original ID. Other unknown
outcomes raise (ConnectionError / TimeoutError saying so, or the AckTimeoutError /
LeaseLostError line). `idempotent_xadd=True` stamps every `XADD *` with IDMP, so every XADD is
repeatable. A pipeline with writes is sent again only if all its commands are repeatable, or
every write in it answered READONLY. `xadd_many` is sent again only if it was not applied.
A command's own error (ERR, WRONGTYPE, NOREPLICAS, ...) is never retried.

Offsets and epochs, both from the nodes' replies:
- `last_offset`: the highest offset a write returned (the offset WAIT waits for, Redis's
  per-connection WAIT; an ACKTIMEOUT write is applied, so its offset counts too).
- `session_offset`: max(last_offset, offsets reported by the nodes read from). Every read
  carries it (`xstream-offset`); a replica answers only once it has applied that far, else it
  says TRYAGAIN and the read moves on to the next node, the primary last. So one client's
  reads never go backwards, across replicas and failovers: offsets continue across a
  failover (PSYNC2). After a failover that cut back a diverged tail an offset can be reused
  for other writes; those writes were never acknowledged by a quorum, so this is accepted,
  and a client that finds a new primary behind its session offset continues from the new
  primary's offset. A replica that was behind or out of reach is passed by for a second.
- `epoch`: the highest `xstream-epoch` in any reply's trailing metadata, sent with every
  call: a stale primary (one that has not heard of that epoch) refuses the writes.

`acks` ("leader", "quorum", "all") and `acks_timeout_ms` set the write concern of every write.
`ssl`, `ssl_ca_certs`, `ssl_certfile`, `ssl_keyfile` (redis-py's names, tls.py): TLS to every
node, with a client certificate when the nodes ask for one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from itertools import count
from typing import Any, TypeVar

import grpc

from xstream.client.exceptions import (
    ConnectionError,
    ResponseError,
    TimeoutError,
    XstreamError,
    error_from_line,
)
from xstream.engine.api import format_ids
from xstream.engine.ids import parse_strict
from xstream.engine.reply import Reply
from xstream.protocol import (
    EPOCH_KEY,
    ERROR_MARK,
    MAX_MESSAGE,
    OFFSET_KEY,
    PASSWORD_KEY,
    USER_KEY,
    from_value,
    write_concern,
)
from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc

from .failover import (
    Backoff,
    Failure,
    NodeView,
    Outcome,
    classify,
    next_node_for_read,
    refused_pipeline,
    resolve,
    retry_write,
)
from .idempotence import Stamper, changes_nothing, repeatable, repeatable_batch
from .ingestrows import EncodedRows, message
from .tls import StrPath, client_tls

Argv = list[bytes]
T = TypeVar("T")
Metadata = tuple[tuple[str, str], ...]
Call = Callable[[grpc.Channel], tuple[T, Any]]  # one RPC: (response, grpc call)
# WARNING: the Streams service's methods in proto/xstream/v1/xstream.proto; the requests
# are sent as bytes already (request_serializer=None).
INGEST_METHOD = "/xstream.v1.Streams/Ingest"
INGEST_ONE_METHOD = "/xstream.v1.Streams/IngestOne"
BACKOFF_CAP = 0.2  # seconds: the longest pause between tries (a failover takes ~2.5 s)
PROBE_TIMEOUT = 1.0  # seconds: an Admin.Info while looking for the primary
SKIP_REPLICA = 1.0  # seconds reads pass by a replica that was behind or out of reach
UNKNOWN_NOTE = "the outcome is unknown: the write may or may not have been applied"


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


def _metadata(pairs: Any) -> dict[str, Any]:
    """Metadata as a dict (grpc gives (key, value) pairs; grpc-stubs says `_Metadatum`s)."""
    return dict(pairs or ())


def _unique(addresses: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(a for a in addresses if a))


class GrpcTransport:
    def __init__(
        self,
        host: str = "localhost",
        port: int = 7700,
        *,
        nodes: Sequence[str] | None = None,
        failover_timeout: float = 10.0,
        idempotent_xadd: bool = False,
        read_from: str = "primary",
        replicas: Sequence[str] | None = None,
        acks: str = "leader",
        acks_timeout_ms: int = 0,
        timeout: float = 30.0,
        retries: int = 3,
        retry_backoff: float = 0.05,
        ssl: bool = False,
        ssl_ca_certs: StrPath | None = None,
        ssl_certfile: StrPath | None = None,
        ssl_keyfile: StrPath | None = None,
        username: str | None = None,
        password: str | None = None,
    ) -> None:
        if read_from not in ("primary", "replica"):
            raise ValueError("read_from must be 'primary' or 'replica'")
        if isinstance(nodes, str):
            raise TypeError("nodes must be a list of 'host:port' strings")
        # The ACL user every call runs as (redis-py's username=, password=; a password alone
        # is the default user's, as AUTH <password>); nothing: the node's default user.
        self._auth: Metadata = ()
        if username or password:
            self._auth = ((USER_KEY, username or "default"), (PASSWORD_KEY, password or ""))
        self.primary = f"{host}:{port}"  # where writes go: the primary of the moment
        self.failover = nodes is not None  # look for the primary among the seeds
        self.seeds = _unique([self.primary, *(nodes or ())])
        self.failover_timeout = failover_timeout
        self.stamper = Stamper() if idempotent_xadd else None
        self.read_from = read_from
        self.replicas: list[str] | None = list(replicas) if replicas is not None else None
        self._fixed_replicas = replicas is not None  # given: discovery leaves them alone
        self.concern = write_concern(acks, acks_timeout_ms)
        self.timeout = timeout
        # One try of a command or pipeline, failing over: a paused or cut-off primary must not
        # hold the client past its failover budget (xadd_many keeps `timeout`).
        self.try_timeout = (
            min(timeout, max(1.0, failover_timeout / 2)) if nodes is not None else timeout
        )
        self.retries = retries
        self.retry_backoff = retry_backoff
        self.epoch = 0  # the highest epoch any reply carried
        self.last_offset = 0  # the highest offset a write returned (WAIT's)
        self.session_offset = 0  # reads are answered from at least this offset
        self.resent = 0  # calls sent again after a failure (all kinds, for tests and metrics)
        self._surveyed = not self.failover  # the seeds were asked who is primary
        # TLS to every node (tls.py: redis-py's parameters); None = plaintext.
        self.tls = client_tls(ssl, ssl_ca_certs, ssl_certfile, ssl_keyfile)
        self._channels: dict[str, grpc.Channel] = {}
        self._rr = count()
        self._skip: dict[str, float] = {}  # replica -> monotonic time until reads pass it by
        self._ingest_one = True  # False once a node said IngestOne is UNIMPLEMENTED

    # ------------------------------------------------------------ plumbing

    def _channel(self, address: str) -> grpc.Channel:
        ch = self._channels.get(address)
        if ch is None:
            options = [
                ("grpc.max_receive_message_length", MAX_MESSAGE),
                ("grpc.max_send_message_length", MAX_MESSAGE),
            ]
            if self.tls is None:
                ch = grpc.insecure_channel(address, options=options)
            else:
                ch = grpc.secure_channel(address, self.tls.credentials(), options=options)
            self._channels[address] = ch
        return ch

    def _meta(self, offset: int = 0) -> Metadata:
        """Request metadata: the epoch seen, and an offset (WAIT's, or a read's floor)."""
        meta = list(self._auth)
        if self.epoch:
            meta.append((EPOCH_KEY, str(self.epoch)))
        if offset:
            meta.append((OFFSET_KEY, str(offset)))
        return tuple(meta)

    def _note_epoch(self, trailer: dict[str, Any]) -> None:
        value = str(trailer.get(EPOCH_KEY, ""))
        if value.isdigit():
            self.epoch = max(self.epoch, int(value))

    def _invoke(self, address: str, fn: Call[T]) -> T:
        response, call = fn(self._channel(address))
        self._note_epoch(_metadata(call.trailing_metadata()))
        return response

    def _failure(self, address: str, e: grpc.RpcError) -> Failure:
        trailer = _metadata(e.trailing_metadata())
        self._note_epoch(trailer)
        offset = str(trailer.get(OFFSET_KEY, ""))
        code = e.code()
        return Failure(
            address,
            code.name if code is not None else "UNKNOWN",
            e.details() or "",
            bool(trailer.get(ERROR_MARK[0])),
            int(offset) if offset.isdigit() else 0,
        )

    def _advance(self, offset: int, *, wrote: bool) -> None:
        if wrote:
            self.last_offset = max(self.last_offset, offset)
        self.session_offset = max(self.session_offset, self.last_offset, offset)

    def _backoff(self) -> Backoff:
        if not self._surveyed:  # the first call of a failing-over client: find the primary
            self.rediscover()
        if self.failover:
            deadline = time.monotonic() + self.failover_timeout
            return Backoff(self.retry_backoff, BACKOFF_CAP, deadline=deadline)
        return Backoff(self.retry_backoff, BACKOFF_CAP, tries=self.retries)

    def _pause(self, backoff: Backoff) -> bool:
        """Wait before the next try and look for the primary again; False: give up."""
        delay = backoff.pause(time.monotonic())
        if delay is None:
            return False
        time.sleep(delay)
        if self.failover:
            self.rediscover()
        self.resent += 1
        return True

    # ------------------------------------------------------------ finding the primary

    def rediscover(self) -> None:
        """Ask every seed who is primary (failover.resolve); follow what they say."""
        self._surveyed = True
        views = self._survey(self.seeds)
        if not views:
            return
        found = resolve(views)
        if found.primary is None and found.follow and found.follow not in self.seeds:
            self.seeds.append(found.follow)  # advertised: maybe reachable from here too
            views += self._survey([found.follow])
            found = resolve(views)
        if found.primary is not None:
            if found.primary != self.primary and found.epoch >= self.epoch:
                self._rebase(found.offset)
            self.primary = found.primary
            self.epoch = max(self.epoch, found.epoch)
        if not self._fixed_replicas:
            self.replicas = found.replicas

    def _rebase(self, offset: int) -> None:
        """A new primary at `offset`: a session offset past it saw a tail the failover cut
        back (never acknowledged by a quorum), which no node has now; continue from here
        rather than wait on replicas for an offset only new writes will reach."""
        self.session_offset = min(self.session_offset, offset)
        self.last_offset = min(self.last_offset, offset)

    def _survey(self, addresses: Sequence[str]) -> list[NodeView]:
        """Admin.Info of each address, asked all at once; the ones that answered."""
        probe = min(self.timeout, PROBE_TIMEOUT)
        asked = [
            (
                a,
                pb_grpc.AdminStub(self._channel(a)).Info.future(
                    pb.InfoRequest(), timeout=probe, metadata=self._auth
                ),
            )
            for a in addresses
        ]
        views = []
        for address, future in asked:
            try:
                info: pb.InfoReply = future.result()
            except grpc.RpcError:
                continue
            views.append(
                NodeView(address, info.role, info.epoch, info.deposed, info.primary, info.offset)
            )
        return views

    # ------------------------------------------------------------ writes

    def _write(
        self, fn: Call[T], *, repeatable: bool, refused: Callable[[T], bool] | None = None
    ) -> T:
        """Send a write to the primary, again while the retry rules allow (module comment).
        `refused(response)`: the reply says in-band that nothing was applied (READONLY)."""
        backoff = self._backoff()
        while True:
            address = self.primary
            try:
                response = self._invoke(address, fn)
            except grpc.RpcError as e:
                f = self._failure(address, e)
                outcome = classify(f)
                if f.prefix == "ACKTIMEOUT":  # applied: WAIT must cover it
                    self.last_offset = max(self.last_offset, f.offset)
                if not retry_write(outcome, repeatable=repeatable, failover=self.failover):
                    raise _write_error(f, outcome) from None
                if not self._pause(backoff):
                    raise _write_error(f, outcome) from None
                continue
            if refused is None or not refused(response) or not self.failover:
                return response
            if not self._pause(backoff):
                return response

    def execute_write(self, argv: Argv) -> pb.Reply:
        if self.stamper is not None:
            argv = self.stamper.stamp(argv)
        cmd = pb.Command(argv=argv, concern=self.concern)
        timeout = _block_timeout(argv, self.try_timeout)
        is_wait = argv[0].upper() == b"WAIT" if argv else False

        def call(ch: grpc.Channel) -> tuple[pb.Reply, Any]:
            meta = self._meta(self.last_offset if is_wait else 0)
            response, rpc = pb_grpc.StreamsStub(ch).Execute.with_call(
                cmd, timeout=timeout, metadata=meta
            )
            return response, rpc

        reply = self._write(call, repeatable=repeatable(argv))
        self._advance(reply.offset, wrote=not changes_nothing(argv))
        return reply

    # ------------------------------------------------------------ reads

    def _read_targets(self) -> list[str]:
        if self.read_from == "primary":
            return [self.primary]
        if self.replicas is None:
            if self.failover:
                self.rediscover()
            else:
                self.replicas = self._replicas_of_primary()
        now = time.monotonic()
        replicas = [
            r for r in self.replicas or () if r != self.primary and self._skip.get(r, 0) <= now
        ]
        if not replicas:
            return [self.primary]
        i = next(self._rr) % len(replicas)
        return [*replicas[i:], *replicas[:i], self.primary]

    def _replicas_of_primary(self) -> list[str]:
        def call(ch: grpc.Channel) -> tuple[pb.InfoReply, Any]:
            response, rpc = pb_grpc.AdminStub(ch).Info.with_call(
                pb.InfoRequest(), timeout=self.timeout, metadata=self._auth
            )
            return response, rpc

        info = self._read(call, primary_only=True)
        return [r.address for r in info.replicas if r.state == "online"]

    def _read(self, fn: Call[T], *, primary_only: bool = False) -> T:
        """Send a read to its nodes in turn, rounds of them while the retry rules allow."""
        backoff = self._backoff()
        while True:
            last: Failure | None = None
            for address in [self.primary] if primary_only else self._read_targets():
                try:
                    return self._invoke(address, fn)
                except grpc.RpcError as e:
                    last = self._failure(address, e)
                if not next_node_for_read(last, failover=self.failover):
                    raise _read_error(last) from None
                if address != self.primary:  # behind or out of reach: pass it by a while
                    self._skip[address] = time.monotonic() + SKIP_REPLICA
            assert last is not None
            if not self._pause(backoff):
                raise _read_error(last) from None

    def execute_read(self, argv: Argv) -> pb.Reply:
        cmd = pb.Command(argv=argv)
        timeout = _block_timeout(argv, self.try_timeout)

        def call(ch: grpc.Channel) -> tuple[pb.Reply, Any]:
            meta = self._meta(self.session_offset)
            response, rpc = pb_grpc.StreamsStub(ch).Execute.with_call(
                cmd, timeout=timeout, metadata=meta
            )
            return response, rpc

        reply = self._read(call)
        self._advance(reply.offset, wrote=False)
        return reply

    # ------------------------------------------------------------ Transport

    def execute(self, argv: Argv, *, write: bool) -> Reply:
        reply = self.execute_write(argv) if write else self.execute_read(argv)
        return from_value(reply.value)

    def execute_many(self, argvs: Sequence[Argv], *, write: bool) -> list[Reply | ResponseError]:
        if write and self.stamper is not None:
            argvs = [self.stamper.stamp(a) for a in argvs]
        req = pb.PipelineRequest(
            commands=[pb.Command(argv=a) for a in argvs], concern=self.concern if write else None
        )
        blocking = [_block_timeout(a, self.try_timeout) for a in argvs]
        timeout = None if None in blocking else max([self.try_timeout, *blocking])  # type: ignore[type-var]

        def call(ch: grpc.Channel) -> tuple[pb.PipelineReply, Any]:
            meta = self._meta(0 if write else self.session_offset)
            response, rpc = pb_grpc.StreamsStub(ch).Pipeline.with_call(
                req, timeout=timeout, metadata=meta
            )
            return response, rpc

        writes = [not changes_nothing(a) for a in argvs]

        def refused(reply: pb.PipelineReply) -> bool:
            return refused_pipeline(writes, [r.error or None for r in reply.replies])

        if write:
            reply = self._write(call, repeatable=repeatable_batch(argvs), refused=refused)
        else:
            reply = self._read(call)
        self._advance(reply.offset, wrote=write and any(writes))
        out: list[Reply | ResponseError] = []
        for r in reply.replies:
            if r.WhichOneof("outcome") == "error":
                out.append(error_from_line(r.error))
            else:
                out.append(from_value(r.value))
        return out

    def xadd_many(self, key: bytes, entries: Sequence[Sequence[bytes]]) -> list[bytes]:
        """The entries as IngestBatch messages written as bytes (ingestrows.py): one message
        by IngestOne (a unary call: grpcio's blocking stream call starts a thread per call),
        more, or to a node without IngestOne, as an Ingest stream."""
        chunks = EncodedRows.of_entries(entries).chunks
        concern = self.concern.SerializeToString()
        messages = [message(key, c, concern if i == 0 else None) for i, c in enumerate(chunks)]

        def call(ch: grpc.Channel) -> tuple[pb.IngestReply, Any]:
            meta = self._meta()
            if len(messages) == 1 and self._ingest_one:
                one: grpc.UnaryUnaryMultiCallable[bytes, pb.IngestReply] = ch.unary_unary(
                    INGEST_ONE_METHOD,
                    request_serializer=None,
                    response_deserializer=pb.IngestReply.FromString,
                )
                try:
                    response, rpc = one.with_call(messages[0], timeout=self.timeout, metadata=meta)
                    return response, rpc
                except grpc.RpcError as e:
                    if e.code() != grpc.StatusCode.UNIMPLEMENTED:
                        raise
                    self._ingest_one = False  # a node older than IngestOne: nothing ran
            stream: grpc.StreamUnaryMultiCallable[bytes, pb.IngestReply] = ch.stream_unary(
                INGEST_METHOD,
                request_serializer=None,
                response_deserializer=pb.IngestReply.FromString,
            )
            response, rpc = stream.with_call(iter(messages), timeout=self.timeout, metadata=meta)
            return response, rpc

        def refused(reply: pb.IngestReply) -> bool:
            return reply.batches == 0 and reply.error.startswith("READONLY ")

        reply = self._write(call, repeatable=False, refused=refused)
        self._advance(reply.offset, wrote=True)
        if reply.error and reply.batches == 0:
            raise error_from_line(reply.error)
        ids: list[bytes] = []
        for first, chunk in zip(reply.first_ids, chunks, strict=False):
            ids += format_ids(parse_strict(first.encode()), chunk.rows)
        if reply.error:
            raise error_from_line(reply.error)
        return ids

    def wait(self, numreplicas: int, timeout_ms: int) -> int:
        req = pb.WaitRequest(
            numreplicas=numreplicas, timeout_ms=timeout_ms, offset=self.last_offset
        )

        def call(ch: grpc.Channel) -> tuple[pb.WaitReply, Any]:
            response, rpc = pb_grpc.AdminStub(ch).Wait.with_call(
                req, timeout=None, metadata=self._meta()
            )
            return response, rpc

        reply = self._read(call, primary_only=True)
        return reply.replicas

    def close(self) -> None:
        for ch in self._channels.values():
            ch.close()
        self._channels.clear()

    def __repr__(self) -> str:
        seeds = f", seeds={self.seeds!r}" if self.failover else ""
        return f"GrpcTransport(primary={self.primary!r}, read_from={self.read_from!r}{seeds})"


# ---------------------------------------------------------------- errors raised


def _transport_error(f: Failure, note: str = "") -> XstreamError:
    text = f"{f.address}: {f.status}: {f.details}" + (f" ({note})" if note else "")
    if f.status == "DEADLINE_EXCEEDED":
        return TimeoutError(text)
    return ConnectionError(text)


def _write_error(f: Failure, outcome: Outcome) -> XstreamError:
    """What a write that will not be sent again raises."""
    if f.command_error:
        return error_from_line(f.details)  # ACKTIMEOUT / LEASELOST say the outcome themselves
    return _transport_error(f, UNKNOWN_NOTE if outcome is Outcome.UNKNOWN else "")


def _read_error(f: Failure) -> XstreamError:
    if f.command_error:
        return error_from_line(f.details)
    return _transport_error(f)
