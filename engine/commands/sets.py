"""Sets, as far as a stream service needs them: a third non-stream type, so that type checks
against sets are real (Redis's consumer-group suite SADDs to a key and reads it as a stream).

    SADD key member [member ...]   how many were new; effect: SADD key <the new members>, none
                                   if nothing was added (Redis propagates only a dirty write)
    SREM key member [member ...]   how many were removed; effect: SREM key <those members>;
                                   removing the last member deletes the key, as Redis does
    SMEMBERS key                   the members, sorted (Redis answers in hash order, which no
                                   client may rely on; sorted keeps replies deterministic)
    SISMEMBER key member           1 or 0
    SCARD key                      the count, 0 if missing

A set is a Python set of members (keyspace.SetValue).
"""

from __future__ import annotations

from ..context import Ctx
from ..errors import wrong_type
from ..keyspace import SetValue
from ..reply import Reply, ReplySet


def _set(ctx: Ctx, key: bytes) -> SetValue | None:
    v = ctx.keyspace.get(key)
    if v is None or isinstance(v, set):
        return v
    raise wrong_type()


def _distinct(members: list[bytes]) -> list[bytes]:
    """The members in argument order, each once."""
    return list(dict.fromkeys(members))


def sadd(ctx: Ctx) -> Reply:
    key = ctx.argv[1]
    members = _set(ctx, key)
    if members is None:
        members = set()
        ctx.keyspace.set(key, members)
    added = [m for m in _distinct(ctx.argv[2:]) if m not in members]
    members.update(added)
    if added:
        ctx.propagate([b"SADD", key, *added])
        ctx.touch(key)
    return len(added)


def srem(ctx: Ctx) -> Reply:
    key = ctx.argv[1]
    members = _set(ctx, key)
    if members is None:
        return 0
    removed = [m for m in _distinct(ctx.argv[2:]) if m in members]
    members.difference_update(removed)
    if not members:
        ctx.keyspace.delete(key)
    if removed:
        ctx.propagate([b"SREM", key, *removed])
        ctx.touch(key)
    return len(removed)


def smembers(ctx: Ctx) -> Reply:
    members = _set(ctx, ctx.argv[1])
    return ReplySet() if members is None else ReplySet(sorted(members))


def sismember(ctx: Ctx) -> Reply:
    members = _set(ctx, ctx.argv[1])
    return int(members is not None and ctx.argv[2] in members)


def scard(ctx: Ctx) -> Reply:
    members = _set(ctx, ctx.argv[1])
    return 0 if members is None else len(members)
