"""XLEN, XRANGE, XREVRANGE and XREAD: pure reads, no effects.

XREAD answers at once when any stream has entries after its ID. Otherwise, with BLOCK, it
returns a BlockSpec: the keys to watch, an absolute deadline and the argv to re-execute, with
`$` rewritten to the concrete last ID as Redis does, so a retry never spins on new data.
"""

from __future__ import annotations

from ..context import BlockSpec, Ctx
from ..errors import StreamError, syntax_error
from ..ids import MAX_ID, MIN_ID, StreamID, parse_interval, parse_strict
from ..reply import NULL_ARRAY, Reply
from ..stream import Stream
from .args import parse_ll, word

_INT64_MAX = (1 << 63) - 1


def xlen(ctx: Ctx) -> Reply:
    s = ctx.keyspace.stream(ctx.argv[1])
    return s.length if s is not None else 0


def xrange(ctx: Ctx) -> Reply:
    return _range(ctx, rev=False)


def xrevrange(ctx: Ctx) -> Reply:
    return _range(ctx, rev=True)


def _range(ctx: Ctx, rev: bool) -> Reply:
    argv = ctx.argv
    start = parse_interval(argv[3] if rev else argv[2], start=True)
    end = parse_interval(argv[2] if rev else argv[3], start=False)
    count = -1
    j = 4
    while j < len(argv):
        if word(argv[j]) == b"count" and j + 1 < len(argv):
            count = max(parse_ll(argv[j + 1]), 0)
            j += 2
        else:
            raise syntax_error()
    s = ctx.keyspace.stream(argv[1])
    if s is None:
        return []
    if count == 0:
        return NULL_ARRAY
    return s.range(start, end, max(count, 0), rev)  # type: ignore[return-value]


def last_valid_id(s: Stream) -> StreamID:
    """The last live entry's ID (streamLastValidID); 0-0 when there is none."""
    if not s.length:
        return MIN_ID
    return s.edge_id(first=False)


def parse_block(arg: bytes, now_ms: int) -> int:
    """BLOCK's value as an absolute deadline in ms (0 = forever), as getTimeoutFromObject."""
    t = parse_ll(arg, "timeout is not an integer or out of range")
    if t < 0:
        raise StreamError("timeout is negative")
    if t > 0:
        if t > _INT64_MAX - now_ms:
            raise StreamError("timeout is out of range")
        t += now_ms
    return t


def xread(ctx: Ctx) -> Reply:
    argv = ctx.argv
    count = 0
    deadline: int | None = None
    streams_at = 0
    i = 1
    while i < len(argv):
        more = len(argv) - i - 1
        w = word(argv[i])
        if w == b"block" and more:
            i += 1
            deadline = parse_block(argv[i], ctx.now_ms)
        elif w == b"count" and more:
            i += 1
            count = max(parse_ll(argv[i]), 0)
        elif w == b"streams" and more:
            streams_at = i + 1
            if (len(argv) - streams_at) % 2:
                raise StreamError(
                    "Unbalanced 'xread' list of streams: for each stream key an ID, '+', "
                    "or '$' must be specified."
                )
            break
        elif (w == b"group" and more >= 2) or w == b"noack" or (w == b"claim" and more):
            raise StreamError(
                f"The {w.upper().decode()} option is only supported by XREADGROUP. "
                "You called XREAD instead."
            )
        else:
            raise syntax_error()
        i += 1
    if not streams_at:
        raise syntax_error()
    n = (len(argv) - streams_at) // 2
    keys = argv[streams_at : streams_at + n]
    after: list[StreamID] = []
    resolved = list(argv)
    for k, key in enumerate(keys):
        s = ctx.keyspace.stream(key)
        arg = argv[streams_at + n + k]
        if arg == b"$":
            after.append(s.last_id if s is not None else MIN_ID)
            resolved[streams_at + n + k] = after[-1].encode()
        elif arg == b"+":
            last = last_valid_id(s) if s is not None else MIN_ID
            after.append(
                (last.decr() or MIN_ID)
                if s is not None and s.length
                else (s.last_id if s is not None else MIN_ID)
            )
        elif arg == b">":
            raise StreamError(
                "The > ID can be specified only when calling XREADGROUP using the "
                "GROUP <group> <consumer> option."
            )
        else:
            after.append(parse_strict(arg))
    out: list[Reply] = []
    for key, gt in zip(keys, after, strict=True):
        s = ctx.keyspace.stream(key)
        if s is None or not s.length or last_valid_id(s) <= gt:
            continue
        start = gt.incr()
        assert start is not None
        out.append([key, s.range(start, MAX_ID, count)])  # type: ignore[list-item]
    if out:
        return out
    if deadline is not None:
        ctx.block = BlockSpec(list(keys), deadline, resolved)
    return NULL_ARRAY
