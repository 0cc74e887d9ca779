"""Lists, as far as a stream service needs them: a second non-stream type, so that type checks
against lists are real (Redis's test suites push to a key a reader waits on as a stream).

    LPUSH/RPUSH key element [element ...]   the length after; effect: the command itself
    LPOP/RPOP key [count]                   the element, nil if missing; with a count, an
                                            array of at most count elements (empty for 0),
                                            a null array if missing. Effect: LPOP/RPOP key
                                            [n], n the number popped (nothing when none)
    LLEN key, LRANGE key start stop         as Redis's
    BLPOP/BRPOP key [key ...] timeout       the first non-empty list's [key, element]; else
                                            block (BlockSpec waiting for a list) until a push
                                            or the timeout (seconds, a float; 0 = forever):
                                            nil. Effect: LPOP/RPOP key, as Redis propagates

A list is a deque of elements; popping the last element deletes the key, as Redis does.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Final

from ..context import BlockSpec, Ctx
from ..errors import StreamError, wrong_arity, wrong_type
from ..ids import string2ll
from ..keyspace import ListValue
from ..reply import NULL_ARRAY, Reply
from .args import parse_ll


def _list(ctx: Ctx, key: bytes) -> ListValue | None:
    v = ctx.keyspace.get(key)
    if v is None or isinstance(v, deque):
        return v
    raise wrong_type()


def _push(ctx: Ctx, left: bool) -> Reply:
    key = ctx.argv[1]
    items = _list(ctx, key)
    if items is None:
        items = deque()
        ctx.keyspace.set(key, items)
    if left:
        items.extendleft(ctx.argv[2:])
    else:
        items.extend(ctx.argv[2:])
    ctx.propagate(list(ctx.argv))
    ctx.signal(key)
    ctx.touch(key)
    return len(items)


def lpush(ctx: Ctx) -> Reply:
    return _push(ctx, left=True)


def rpush(ctx: Ctx) -> Reply:
    return _push(ctx, left=False)


_COUNT_RANGE: Final = "value is out of range, must be positive"


def _pop(ctx: Ctx, left: bool) -> Reply:
    argv = ctx.argv
    if len(argv) > 3:
        raise wrong_arity(argv[0].decode("utf-8", "replace").lower())
    count = None
    if len(argv) == 3:  # parsed before the key is looked at, as Redis does
        count = string2ll(argv[2])
        if count is None or count < 0:
            raise StreamError(_COUNT_RANGE)
    key = argv[1]
    items = _list(ctx, key)
    if items is None:
        return None if count is None else NULL_ARRAY
    if count is None:
        return _pop_n(ctx, key, items, 1, left)[0]
    return _pop_n(ctx, key, items, count, left) if count else []


def _pop_n(ctx: Ctx, key: bytes, items: ListValue, count: int, left: bool) -> list[Reply]:
    """Pop up to `count` (> 0) elements from a non-empty list; the effect names the count
    popped when the command had one."""
    n = min(count, len(items))
    popped: list[Reply] = [items.popleft() if left else items.pop() for _ in range(n)]
    if not items:
        ctx.keyspace.delete(key)
    effect = [ctx.argv[0].upper(), key]
    if len(ctx.argv) == 3:
        effect.append(b"%d" % n)
    ctx.propagate(effect)
    ctx.touch(key)
    return popped


def lpop(ctx: Ctx) -> Reply:
    return _pop(ctx, left=True)


def rpop(ctx: Ctx) -> Reply:
    return _pop(ctx, left=False)


def llen(ctx: Ctx) -> Reply:
    items = _list(ctx, ctx.argv[1])
    return 0 if items is None else len(items)


def lrange(ctx: Ctx) -> Reply:
    items = _list(ctx, ctx.argv[1])
    start, stop = parse_ll(ctx.argv[2]), parse_ll(ctx.argv[3])
    if items is None:
        return []
    n = len(items)
    start = max(0, start + n if start < 0 else start)
    stop = stop + n if stop < 0 else min(stop, n - 1)
    if start > stop:
        return []
    return [items[i] for i in range(start, stop + 1)]


def blpop(ctx: Ctx) -> Reply:
    return _blocking_pop(ctx, left=True)


def brpop(ctx: Ctx) -> Reply:
    return _blocking_pop(ctx, left=False)


def _blocking_pop(ctx: Ctx, left: bool) -> Reply:
    argv = ctx.argv
    deadline = _timeout(argv[-1], ctx.now_ms)
    keys = argv[1:-1]
    for key in keys:
        items = _list(ctx, key)
        if items:
            item = items.popleft() if left else items.pop()
            if not items:
                ctx.keyspace.delete(key)
            ctx.propagate([b"LPOP" if left else b"RPOP", key])
            ctx.touch(key)
            return [key, item]
    ctx.block = BlockSpec(list(keys), deadline, list(argv), waits_for="list")
    return NULL_ARRAY


def _timeout(arg: bytes, now_ms: int) -> int:
    """BLPOP's timeout (seconds, a float) as an absolute deadline in ms; 0 waits forever."""
    try:
        seconds = float(arg)
    except ValueError:
        raise StreamError("timeout is not a float or out of range") from None
    if not math.isfinite(seconds):
        raise StreamError("timeout is not a float or out of range")
    if seconds < 0:
        raise StreamError("timeout is negative")
    return 0 if seconds == 0 else now_ms + max(1, int(seconds * 1000))
