"""Who a gRPC call is, and whether it may run: the node's ACL users (node/acl.py) at the edge.

    principal(acl, context)    the call's User:
                               metadata `xstream-user` (+ `xstream-password`): that user, if
                                 the password is right (else WRONGPASS);
                               else a verified TLS client certificate: the user named as its
                                 CN, if one exists and is on (no password: the CA vouched);
                               else the default user, if it needs no password (else NOAUTH)
    authorize(acl, ctx, argv)  the principal, or StreamError NOPERM (logged in ACL LOG)
    Guard                      a server interceptor: every Admin and Replication method is
                               checked as a pseudo-command (METHODS) before it runs; Streams
                               methods check their own argvs (service.py), keys included.

Errors are StreamErrors with Redis's lines; wire.status_code maps NOAUTH and WRONGPASS to
UNAUTHENTICATED and NOPERM to PERMISSION_DENIED. Passwords are compared hashed, never logged.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import grpc

from xstream.engine.errors import StreamError
from xstream.node.acl import NOAUTH, WRONGPASS, Acl, User, auth_denial
from xstream.protocol import PASSWORD_KEY, USER_KEY

from . import wire

# Admin and Replication methods as the commands ACL rules name (aclcats.py's pseudo-commands).
METHODS: dict[str, list[bytes]] = {
    "/xstream.v1.Admin/Info": [b"info"],
    "/xstream.v1.Admin/Replicas": [b"role"],
    "/xstream.v1.Admin/Wait": [b"wait"],
    "/xstream.v1.Admin/Snapshot": [b"save"],
    "/xstream.v1.Admin/Digest": [b"debug", b"digest"],
    "/xstream.v1.Admin/Promote": [b"failover"],
    "/xstream.v1.Admin/ReplicaOf": [b"replicaof"],
    "/xstream.v1.Replication/Sync": [b"sync"],
}


class HasAcl(Protocol):
    @property
    def acl(self) -> Acl: ...


def _metadata(context: Any) -> dict[str, str | bytes]:
    return dict(context.invocation_metadata() or ())


def _certificate_name(context: Any) -> str:
    """The CN of the call's verified client certificate; "" without one."""
    auth = context.auth_context() or {}
    names = auth.get("x509_common_name") or []
    return names[0].decode("utf-8", "replace") if names else ""


def _text(value: str | bytes) -> bytes:
    return value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value


def principal(acl: Acl, context: Any) -> User:
    meta = _metadata(context)
    if USER_KEY in meta:
        name = _text(meta[USER_KEY]).decode("utf-8", "surrogateescape")
        user = acl.authenticate(name, _text(meta.get(PASSWORD_KEY, b"")))
        if user is None:
            _note(acl, context, name, auth_denial())
            raise StreamError(WRONGPASS, "WRONGPASS")
        return user
    cert = acl.users.get(_certificate_name(context))
    if cert is not None and cert.enabled:
        return cert
    if not acl.requires_auth():
        return acl.default
    raise StreamError(NOAUTH, "NOAUTH")


def authorize(acl: Acl, context: Any, argv: list[bytes]) -> User:
    """The call's user, if it may run argv; else StreamError (NOAUTH, WRONGPASS, NOPERM)."""
    user = principal(acl, context)
    denial = acl.check(user, argv)
    if denial is not None:
        _note(acl, context, user.name, denial)
        raise StreamError(denial.message, "NOPERM")
    return user


def _note(acl: Acl, context: Any, username: str, denial: Any) -> None:
    info = f"addr={context.peer()} user={username} grpc=1"
    acl.note(denial, username, "toplevel", info, time.time_ns() // 1_000_000)


async def refuse(context: Any, e: StreamError) -> None:
    """Abort the call with the error's status and Redis's line."""
    context.set_trailing_metadata((("xstream-error", "1"),))
    await context.abort(wire.status_code(e.line), wire.error_text(e.line))


def _guarded(behavior: Callable[..., Any], check: Callable[[Any], Awaitable[None]]) -> Any:
    if inspect.isasyncgenfunction(behavior):

        async def stream_out(request: Any, context: Any) -> AsyncIterator[Any]:
            await check(context)
            async for reply in behavior(request, context):
                yield reply

        return stream_out

    async def one_out(request: Any, context: Any) -> Any:
        await check(context)
        return await behavior(request, context)

    return one_out


class Guard(grpc.aio.ServerInterceptor):
    """Admin and Replication methods, each checked as its pseudo-command before it runs."""

    def __init__(self, served: HasAcl) -> None:
        self.served = served
        self._wrapped: dict[str, tuple[Any, Any]] = {}  # method -> (original, wrapped)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        argv = METHODS.get(method)
        if handler is None or argv is None:
            return handler
        cached = self._wrapped.get(method)
        if cached is not None and cached[0] is handler:
            return cached[1]

        async def check(context: Any) -> None:
            try:
                authorize(self.served.acl, context, argv)
            except StreamError as e:
                await refuse(context, e)

        for kind in ("unary_unary", "unary_stream", "stream_unary", "stream_stream"):
            behavior = getattr(handler, kind)
            if behavior is not None:
                wrapped = handler._replace(**{kind: _guarded(behavior, check)})
                self._wrapped[method] = (handler, wrapped)
                return wrapped
        return handler
