"""Key expiry, as Redis's expire.c: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT [NX|XX|GT|LT], TTL,
PTTL, EXPIRETIME, PEXPIRETIME, PERSIST. (How lookups treat keys past their time, and who
deletes them, is in keyspace.py and engine.py.)

Times are absolute unix ms (`when`); a key expires once `now_ms > when` (keyIsExpired). A
time already reached (`when <= now_ms`, checkAlreadyExpired) deletes the key at once, as
Redis does on a primary, and ships `DEL key`; otherwise the effect is `PEXPIREAT key when`,
whatever the command and its options were (the decision is made here, the replica only
stores the result). Replayed (`ctx.replicated`), a time in the past is stored, never acted
on: the primary's DEL comes after it.
"""

from __future__ import annotations

from typing import Final

from ..context import Ctx
from ..errors import StreamError
from ..reply import Reply
from .args import cstr, parse_ll, word

_LLONG_MAX: Final = (1 << 63) - 1
_FLAGS: Final = (b"nx", b"xx", b"gt", b"lt")


def expire_time_error(ctx: Ctx) -> StreamError:
    """addReplyErrorExpireTime."""
    name = ctx.argv[0].decode("utf-8", "replace").lower()
    return StreamError(f"invalid expire time in '{name}' command")


def expire(ctx: Ctx) -> Reply:
    return _expire(ctx, ctx.now_ms, 1000)


def pexpire(ctx: Ctx) -> Reply:
    return _expire(ctx, ctx.now_ms, 1)


def expireat(ctx: Ctx) -> Reply:
    return _expire(ctx, 0, 1000)


def pexpireat(ctx: Ctx) -> Reply:
    return _expire(ctx, 0, 1)


def _expire(ctx: Ctx, basetime: int, unit: int) -> Reply:
    """expireGenericCommand."""
    key = ctx.argv[1]
    flags = _flags(ctx.argv)
    when = parse_ll(ctx.argv[2])
    if unit == 1000:
        if when > _LLONG_MAX // 1000 or when < -(_LLONG_MAX // 1000):
            raise expire_time_error(ctx)
        when *= 1000
    if when > _LLONG_MAX - basetime:
        raise expire_time_error(ctx)
    when += basetime
    ks = ctx.keyspace
    if key not in ks:
        return 0
    if not _allowed(flags, when, ks.expire_at(key)):
        return 0
    ctx.touch(key)
    if when <= ctx.now_ms and not ctx.replicated:
        ks.delete(key)
        ctx.signal(key)
        ctx.propagate([b"DEL", key])
        return 1
    ks.set_expire(key, when)
    ctx.propagate([b"PEXPIREAT", key, b"%d" % when])
    return 1


def _flags(argv: list[bytes]) -> set[bytes]:
    """parseExtendedExpireArgumentsOrReply."""
    flags: set[bytes] = set()
    for arg in argv[3:]:
        w = word(arg)
        if w not in _FLAGS:
            raise StreamError(f"Unsupported option {cstr(arg).decode('utf-8', 'replace')}")
        flags.add(w)
    if b"nx" in flags and flags & {b"xx", b"gt", b"lt"}:
        raise StreamError("NX and XX, GT or LT options at the same time are not compatible")
    if {b"gt", b"lt"} <= flags:
        raise StreamError("GT and LT options at the same time are not compatible")
    return flags


def _allowed(flags: set[bytes], when: int, current: int | None) -> bool:
    """Whether NX/XX/GT/LT let `when` replace `current` (None: no expiry, an infinite TTL)."""
    if b"nx" in flags and current is not None:
        return False
    if b"xx" in flags and current is None:
        return False
    if b"gt" in flags and (current is None or when <= current):
        return False
    return not (b"lt" in flags and current is not None and when >= current)


def ttl(ctx: Ctx) -> Reply:
    return _ttl(ctx, ms=False, absolute=False)


def pttl(ctx: Ctx) -> Reply:
    return _ttl(ctx, ms=True, absolute=False)


def expiretime(ctx: Ctx) -> Reply:
    return _ttl(ctx, ms=False, absolute=True)


def pexpiretime(ctx: Ctx) -> Reply:
    return _ttl(ctx, ms=True, absolute=True)


def _ttl(ctx: Ctx, ms: bool, absolute: bool) -> Reply:
    """ttlGenericCommand: -2 for a missing key, -1 without expiry."""
    key = ctx.argv[1]
    ks = ctx.keyspace
    if key not in ks:
        return -2
    when = ks.expire_at(key)
    if when is None:
        return -1
    left = max(0, when if absolute else when - ctx.now_ms)
    return left if ms else (left + 500) // 1000


def persist(ctx: Ctx) -> Reply:
    key = ctx.argv[1]
    ks = ctx.keyspace
    if key not in ks or ks.expires.pop(key, None) is None:
        return 0
    ctx.touch(key)
    ctx.propagate([b"PERSIST", key])
    return 1
