"""xstream's Python client: redis-py's stream API over an xstream node.

    from xstream.client import Client
    r = Client("localhost", 7700, decode_responses=True)   # was: redis.Redis(...)
    r.xadd("s", {"f": "v"}); r.xrange("s"); r.xreadgroup("g", "c", {"s": ">"})

Method names, arguments, client-side checks (DataError) and reply values are redis-py 8.1's
under RESP2 (`protocol=2`) for both `decode_responses` settings; server errors raise
`ResponseError` subclasses whose `str()` is redis-py's. The node is reached through a
`Transport` (transport.py): gRPC by default, or any object given as `transport=` (tests use
`EngineTransport`, an in-process engine).

Failover (grpc_transport.py): `Client(host, port, nodes=["h2:7700", "h3:7700"])` finds the
primary among the seeds (any node will do as `host`) and, for up to `failover_timeout` seconds,
sends a write again across a failover when it certainly was not applied, or when it is
idempotent (an XADD with IDMP; `idempotent_xadd=True` adds IDMP to every `XADD *`). Reads never
go backwards for one client, replicas included (`read_from="replica"`). Without `nodes` the
client talks to `host:port` alone, as redis-py does (a replica answers writes with READONLY).

Invariant: a Client holds no per-command state; `_call(argv, parse, write=...)` sends one
argv and answers `parse(to_python(reply))`, raising the reply's error instead if it is one.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any

from .argv import Argv
from .commands import StreamCommands
from .exceptions import (
    AckTimeoutError,
    BusyLoadingError,
    ConnectionError,
    DataError,
    LeaseLostError,
    NoPermissionError,
    OutOfMemoryError,
    ReadOnlyError,
    RedisError,
    ResponseError,
    TimeoutError,
    TryAgainError,
    XstreamError,
    error_from_line,
)
from .pipeline import Pipeline
from .shapes import Parse, to_python
from .transport import EngineTransport, Transport

__all__ = [
    "AckTimeoutError",
    "BusyLoadingError",
    "Client",
    "ConnectionError",
    "DataError",
    "EngineTransport",
    "LeaseLostError",
    "NoPermissionError",
    "OutOfMemoryError",
    "Pipeline",
    "ReadOnlyError",
    "RedisError",
    "ResponseError",
    "TimeoutError",
    "Transport",
    "TryAgainError",
    "XstreamError",
    "error_from_line",
]


class Client(StreamCommands):
    """A connection to an xstream node or cluster, redis-py style.

    `nodes`: more seed nodes ("host:port"); given (even empty), the client fails over.
    `failover_timeout`: seconds to keep looking for a primary and sending a write again.
    `idempotent_xadd`: stamp every `XADD *` with `IDMP <client's producer> <n>`, so any XADD
    may be sent again after an unknown outcome without being appended twice.
    `transport`: send through this Transport instead of building a gRPC one; then no other
    keyword arguments are accepted. Otherwise `GrpcTransport(host, port, **kwargs)` (see
    grpc_transport.py: read_from, replicas, acks, acks_timeout_ms, timeout, retries, ...).
    """

    def __init__(
        self,
        host: str = "localhost",
        port: int = 7700,
        *,
        decode_responses: bool = False,
        encoding: str = "utf-8",
        encoding_errors: str = "strict",
        transport: Transport | None = None,
        nodes: Sequence[str] | None = None,
        failover_timeout: float = 10.0,
        idempotent_xadd: bool = False,
        **kwargs: Any,
    ) -> None:
        if transport is None:
            from .grpc_transport import GrpcTransport  # noqa: PLC0415 (gRPC only when used)

            transport = GrpcTransport(
                host,
                port,
                nodes=nodes,
                failover_timeout=failover_timeout,
                idempotent_xadd=idempotent_xadd,
                **kwargs,
            )
        elif kwargs or nodes is not None or idempotent_xadd:
            given = [*kwargs, *(["nodes"] if nodes is not None else [])]
            given += ["idempotent_xadd"] if idempotent_xadd else []
            raise TypeError(f"unexpected arguments with transport=: {', '.join(sorted(given))}")
        self.transport: Transport = transport
        self.decode_responses = decode_responses
        self.encoding = encoding
        self.encoding_errors = encoding_errors

    def _call(self, argv: Argv, parse: Parse, *, write: bool) -> Any:
        raw = self.transport.execute(argv, write=write)
        return parse(to_python(raw, self.decode_responses, self.encoding, self.encoding_errors))

    def _xadd_many(self, key: bytes, entries: Sequence[Sequence[bytes]]) -> list[bytes]:
        return self.transport.xadd_many(key, entries)

    def pipeline(self, transaction: bool = False, shard_hint: Any = None) -> Pipeline:
        """A non-transactional pipeline (see pipeline.py). MULTI/EXEC is not supported:
        transaction=True raises DataError."""
        if transaction:
            raise DataError(
                "MULTI/EXEC transactions are not supported: use pipeline(transaction=False)"
            )
        return Pipeline(
            self.transport,
            decode_responses=self.decode_responses,
            encoding=self.encoding,
            encoding_errors=self.encoding_errors,
        )

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} transport={self.transport!r}>"
