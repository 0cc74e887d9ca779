"""XLEN, XRANGE, XREVRANGE and XREAD: pure reads, no effects.

XREAD answers at once when any stream has entries after its ID. Otherwise, with BLOCK, it
returns a BlockSpec: the keys to watch, an absolute deadline and the argv to re-execute, with
`$` rewritten to the concrete last ID as Redis does, so a retry never spins on new data.
"""

from __future__ import annotations

from typing import Final

from ..context import BlockSpec, Ctx
from ..errors import StreamError, syntax_error
from ..ids import MAX_ID, MIN_ID, StreamID, parse_interval, parse_strict, string2ll
from ..reply import NULL_ARRAY, PairMap, Reply
from ..stream import Stream
from .args import cstr, parse_ll, word

_INT64_MAX: Final = (1 << 63) - 1


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
    if ctx.entries != "lists" and not rev:
        return s.range_encoded(start, end, max(count, 0), ctx.entries)
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


class ReadOptions:
    """XREAD / XREADGROUP options, parsed as Redis's xreadCommand does. A plain class, not a
    dataclass: mypyc compiles its construction, not dataclass's generated __init__."""

    count: int = 0  # 0 = no limit
    deadline: int | None = None  # BLOCK deadline (absolute ms, 0 = forever), None = no BLOCK
    streams_at: int = 0  # index of the first key after STREAMS
    group: bytes | None = None
    consumer: bytes = b""
    noack: bool = False
    claim_min_idle: int | None = None  # XREADGROUP CLAIM (8.4)


def parse_read_options(ctx: Ctx, xreadgroup: bool) -> ReadOptions:
    argv = ctx.argv
    o = ReadOptions()
    i = 1
    while i < len(argv):
        more = len(argv) - i - 1
        w = word(argv[i])
        if w == b"block" and more:
            i += 1
            o.deadline = parse_block(argv[i], ctx.now_ms)
        elif w == b"count" and more:
            i += 1
            o.count = max(parse_ll(argv[i]), 0)
        elif w == b"streams" and more:
            o.streams_at = i + 1
            if (len(argv) - o.streams_at) % 2:
                what = "an ID or '>'" if xreadgroup else "an ID, '+', or '$'"
                name = "xreadgroup" if xreadgroup else "xread"
                raise StreamError(
                    f"Unbalanced '{name}' list of streams: for each stream key {what} "
                    "must be specified."
                )
            break
        elif (w == b"group" and more >= 2) or w == b"noack" or (w == b"claim" and more):
            if not xreadgroup:
                raise StreamError(
                    f"The {w.upper().decode()} option is only supported by XREADGROUP. "
                    "You called XREAD instead."
                )
            if w == b"group":
                o.group, o.consumer = argv[i + 1], argv[i + 2]
                i += 2
            elif w == b"noack":
                o.noack = True
            else:
                i += 1
                idle = string2ll(argv[i])
                if idle is None:
                    raise StreamError("min-idle-time is not an integer or out of range")
                if idle < 0:
                    raise StreamError("min-idle-time must be a positive integer")
                o.claim_min_idle = idle
        else:
            raise syntax_error()
        i += 1
    if not o.streams_at:
        raise syntax_error()
    if xreadgroup and o.group is None:
        raise StreamError("Missing GROUP option for XREADGROUP")
    return o


def _before_last_entry(s: Stream | None) -> StreamID:
    """XREAD's `+`: just below the last live entry, so that entry is read (redis#13632, 8.0+;
    7.4 used last_id - 1 and missed a last entry that XDEL had exposed). An empty stream
    waits after its last_id, a missing key after 0-0."""
    if s is None:
        return MIN_ID
    if not s.length:
        return s.last_id
    before = last_valid_id(s).decr()
    assert before is not None  # a live entry is at least 0-1
    return before


def xread(ctx: Ctx) -> Reply:
    argv = ctx.argv
    o = parse_read_options(ctx, xreadgroup=False)
    count, deadline, streams_at = o.count, o.deadline, o.streams_at
    n = (len(argv) - streams_at) // 2
    keys = argv[streams_at : streams_at + n]
    after: list[StreamID] = []
    resolved = list(argv)
    for k, key in enumerate(keys):
        s = ctx.keyspace.stream(key)
        arg = argv[streams_at + n + k]
        special = cstr(arg)  # Redis compares these with strcmp
        if special == b"$":
            after.append(s.last_id if s is not None else MIN_ID)
            resolved[streams_at + n + k] = after[-1].encode()
        elif special == b"+":
            after.append(_before_last_entry(s))
        elif special == b">":
            raise StreamError(
                "The > ID can be specified only when calling XREADGROUP using the "
                "GROUP <group> <consumer> option."
            )
        else:
            after.append(parse_strict(arg))
    out = PairMap()
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
