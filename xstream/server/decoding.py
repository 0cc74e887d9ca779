"""Request decoding at the gRPC edge: a request that does not parse is INVALID_ARGUMENT.

grpc.aio decodes a request with the method's deserializer before any servicer runs, and an
exception there becomes `UNKNOWN "Unexpected <class ...>"`: a client cannot tell its own
malformed bytes from a server bug. `Decoding` (a server interceptor, so it covers every
service on the server: Streams, Admin, Replication, health, reflection) takes the decoding
over: the handler receives raw bytes and decodes them itself, and a payload that does not
parse aborts the call with

    INVALID_ARGUMENT  <method>: undecodable request: <the parser's message>

A stream of requests is decoded message by message; the abort happens where the servicer
reads the bad one (a call already answered partly is ended there). Nothing else changes:
the call fails alone, the server keeps serving. Replies: a servicer may return a message or
its bytes, already serialized (long replies, chunked.py); bytes pass the serializer as they
are. Handlers that are plain functions (run in a
thread by grpc.aio) keep grpc's own decoding: this server has none.

A method may be given its own decoder (`Decoding(decoders)`, by full method name): Ingest's
reads IngestBatch's wire form itself (engine/ingestwire.py), in place of protobuf's parser;
its ValueError is an undecodable request like any other.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import grpc
from google.protobuf.message import DecodeError

Decode = Callable[[bytes], Any]
Handler = Any  # grpc.RpcMethodHandler, a namedtuple (its fields are replaced below)


async def _decoded(raw: bytes, decode: Decode, method: str, context: Any) -> Any:
    """`decode(raw)`, or the call aborted with INVALID_ARGUMENT."""
    try:
        return decode(raw)
    except (DecodeError, ValueError) as e:  # ValueError: invalid UTF-8 in a string field
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{method}: undecodable request: {e}")


async def _decoded_stream(
    raws: AsyncIterator[bytes], decode: Decode, method: str, context: Any
) -> AsyncIterator[Any]:
    async for raw in raws:
        yield await _decoded(raw, decode, method, context)


def _single(behavior: Callable[..., Any], decode: Decode, method: str) -> Callable[..., Any]:
    """The behavior of a method with one request, decoding it first."""
    if inspect.isasyncgenfunction(behavior):

        async def stream_out(raw: bytes, context: Any) -> AsyncIterator[Any]:
            async for reply in behavior(await _decoded(raw, decode, method, context), context):
                yield reply

        return stream_out

    async def one_out(raw: bytes, context: Any) -> Any:
        return await behavior(await _decoded(raw, decode, method, context), context)

    return one_out


def _streamed(behavior: Callable[..., Any], decode: Decode, method: str) -> Callable[..., Any]:
    """The behavior of a method with a request stream, decoding each message as it is read."""
    if inspect.isasyncgenfunction(behavior):

        async def stream_out(raws: AsyncIterator[bytes], context: Any) -> AsyncIterator[Any]:
            async for reply in behavior(_decoded_stream(raws, decode, method, context), context):
                yield reply

        return stream_out

    async def one_out(raws: AsyncIterator[bytes], context: Any) -> Any:
        return await behavior(_decoded_stream(raws, decode, method, context), context)

    return one_out


def _passing(serialize: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
    """A response serializer that lets bytes already serialized (chunked.py) through."""

    def encode(message: Any) -> bytes:
        return message if type(message) is bytes else serialize(message)

    return encode


def decoding(handler: Handler, method: str, decoder: Decode | None = None) -> Handler:
    """`handler` taking raw bytes and decoding them itself, with `decoder` if given, else
    protobuf's deserializer (unchanged if it cannot), and returning messages or their bytes."""
    if handler.request_deserializer is None:
        return handler
    decode = decoder or handler.request_deserializer
    if handler.response_serializer is not None:
        handler = handler._replace(response_serializer=_passing(handler.response_serializer))
    for kind, wrap in (
        ("unary_unary", _single),
        ("unary_stream", _single),
        ("stream_unary", _streamed),
        ("stream_stream", _streamed),
    ):
        behavior = getattr(handler, kind)
        if behavior is None:
            continue
        if not (inspect.iscoroutinefunction(behavior) or inspect.isasyncgenfunction(behavior)):
            return handler
        return handler._replace(request_deserializer=None, **{kind: wrap(behavior, decode, method)})
    return handler


class Decoding(grpc.aio.ServerInterceptor):
    """Every method's handler, decoding its requests itself (one wrapper per method, kept)."""

    def __init__(self, decoders: Mapping[str, Decode] | None = None) -> None:
        self._wrapped: dict[str, tuple[Handler, Handler]] = {}  # method -> (original, wrapped)
        self._decoders = decoders or {}  # method -> its own decoder, in place of protobuf's

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        method = handler_call_details.method
        cached = self._wrapped.get(method)
        if cached is not None and cached[0] is handler:
            return cached[1]
        wrapped = decoding(handler, method, self._decoders.get(method))
        self._wrapped[method] = (handler, wrapped)
        return wrapped
