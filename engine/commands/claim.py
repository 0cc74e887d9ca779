"""XPENDING, XCLAIM and XAUTOCLAIM: inspecting and moving pending entries.

XCLAIM parses IDs until the first word that is not one; the rest are options. A PEL entry whose
stream entry is gone is dropped (shipped as XACK); others pass the min-idle test (skipped for
entries FORCE just created) and move to the consumer with the new delivery time and count.
The consumer is created and marked seen even when nothing is claimed (Redis's replicas miss
that consumer: propagation.md B4; here XSETCONSUMER ships it).

Replayed (`ctx.replicated`), XCLAIM takes TIME as given (no clamp to a local clock) and leaves
consumer times to the XSETCONSUMER effect that follows it.
"""

from __future__ import annotations

from typing import Final

from ..context import Ctx
from ..errors import StreamError, syntax_error
from ..groups import Consumer, ConsumerGroup, Nack
from ..ids import MAX_ID, MIN_ID, StreamID, parse_interval, parse_strict
from ..reply import NULL_ARRAY, Reply
from ..stream import Stream
from .args import parse_ll, word
from .groupbase import (
    bumped,
    claim_effect,
    consumer_effect,
    ctext,
    setid_effect,
    stream_and_group,
    touch_consumer,
)

_LONG_MAX: Final = (1 << 63) - 1


def xpending(ctx: Ctx) -> Reply:
    argv = ctx.argv
    argc = len(argv)
    if argc != 3 and not 6 <= argc <= 9:
        raise syntax_error()
    min_idle = 0
    consumer_name: bytes | None = None
    start = end = MIN_ID
    count = 0
    if argc >= 6:
        at = 3
        if word(argv[3]) == b"idle":
            min_idle = parse_ll(argv[4])
            if argc < 8:
                raise syntax_error()
            at = 5
        count = max(parse_ll(argv[at + 2]), 0)
        start = parse_interval(argv[at], start=True)
        end = parse_interval(argv[at + 1], start=False)
        if at + 3 < argc:
            consumer_name = argv[at + 3]
    _, g = stream_and_group(ctx, argv[1], argv[2])
    if argc == 3:
        return _summary(g)
    pel = g.pel
    if consumer_name is not None:
        c = g.consumer(consumer_name)
        if c is None:
            return []
        pel = c.pel
    now = ctx.now_ms
    out: list[Reply] = []
    for entry_id, nack in pel.range(start, end):
        if len(out) >= count:
            break
        if min_idle and nack.consumer is not None and now - nack.delivery_time < min_idle:
            continue
        owner = nack.consumer.name if nack.consumer is not None else b""
        idle = max(now - nack.delivery_time, 0) if nack.consumer is not None else -1
        out.append([entry_id.encode(), owner, idle, nack.delivery_count])
    return out


def _summary(g: ConsumerGroup) -> Reply:
    first, last = g.pel.first(), g.pel.last()
    if first is None or last is None:
        return [0, None, None, NULL_ARRAY]
    owners: list[Reply] = [
        [name, b"%d" % len(g.consumers[name].pel)]
        for name in sorted(g.consumers)
        if len(g.consumers[name].pel)
    ]
    return [len(g.pel), first.encode(), last.encode(), owners]


def xclaim(ctx: Ctx) -> Reply:
    argv = ctx.argv
    key, name = argv[1], argv[3]
    s, g = stream_and_group(ctx, key, argv[2])
    min_idle = max(parse_ll(argv[4], "Invalid min-idle-time argument for XCLAIM"), 0)
    ids: list[StreamID] = []
    j = 5
    while j < len(argv):
        try:
            ids.append(parse_strict(argv[j]))
        except StreamError:
            break
        j += 1
    now = ctx.now_ms
    force = justid = False
    retrycount: int | None = None
    delivery: int | None = None
    last_id = MIN_ID
    while j < len(argv):
        more = len(argv) - 1 - j
        w = word(argv[j])
        if w == b"force":
            force = True
        elif w == b"justid":
            justid = True
        elif w == b"idle" and more:
            j += 1
            delivery = now - parse_ll(argv[j], "Invalid IDLE option argument for XCLAIM")
        elif w == b"time" and more:
            j += 1
            delivery = parse_ll(argv[j], "Invalid TIME option argument for XCLAIM")
        elif w == b"retrycount" and more:
            j += 1
            retrycount = parse_ll(argv[j], "Invalid RETRYCOUNT option argument for XCLAIM")
            if retrycount < 0 and not ctx.replicated:
                retrycount = None  # ignored, as Redis does; a shipped count is always exact
        elif w == b"lastid" and more:
            j += 1
            last_id = parse_strict(argv[j])
        else:
            raise StreamError(f"Unrecognized XCLAIM option '{ctext(argv[j])}'")
        j += 1
    raised = last_id > g.last_id
    if raised:
        g.last_id = last_id
    if delivery is None or (not ctx.replicated and not 0 <= delivery <= now):
        delivery = now
    c = touch_consumer(ctx, g, name)
    out: list[Reply] = []
    claimed_any = False
    for entry_id in ids:
        nack = g.pel.get(entry_id)
        if not _exists(s, entry_id):
            if nack is not None:
                g.remove_pending(entry_id)
                ctx.propagate([b"XACK", key, g.name, entry_id.encode()])
            continue
        if force and nack is None:
            nack = g.add_pending(entry_id, None, now, 1)
        if nack is None:
            continue
        if nack.consumer is not None and min_idle and now - nack.delivery_time < min_idle:
            continue
        _move(ctx, g, c, entry_id, nack, delivery, retrycount, justid)
        claimed_any = True
        out.append(entry_id.encode() if justid else _entry(s, entry_id))
        ctx.propagate(claim_effect(key, g, c, entry_id, nack, g.last_id))
    if raised and not claimed_any:
        ctx.propagate(setid_effect(key, g))
    ctx.propagate(consumer_effect(key, g, c))
    return out


def _exists(s: Stream, entry_id: StreamID) -> bool:
    return s.get(entry_id) is not None


def _entry(s: Stream, entry_id: StreamID) -> Reply:
    found = s.range(entry_id, entry_id, 1)
    assert found
    return found[0]  # type: ignore[return-value]


def _move(
    ctx: Ctx,
    g: ConsumerGroup,
    c: Consumer,
    entry_id: StreamID,
    nack: Nack,
    delivery: int,
    retrycount: int | None,
    justid: bool,
) -> None:
    g.assign(entry_id, nack, c)
    g.deliver(entry_id, nack, delivery)
    if retrycount is not None:
        nack.delivery_count = retrycount
    elif not justid:
        nack.delivery_count = bumped(nack.delivery_count)
    if not ctx.replicated:
        c.active_time = ctx.now_ms


def xautoclaim(ctx: Ctx) -> Reply:
    argv = ctx.argv
    key, name = argv[1], argv[3]
    min_idle = max(parse_ll(argv[4], "Invalid min-idle-time argument for XAUTOCLAIM"), 0)
    start = parse_interval(argv[5], start=True)
    count = 100
    justid = False
    j = 6
    while j < len(argv):
        more = len(argv) - 1 - j
        w = word(argv[j])
        if w == b"count" and more:
            count = parse_ll(argv[j + 1], "COUNT must be > 0")
            if not 1 <= count <= _LONG_MAX // 16:
                raise StreamError("COUNT must be > 0")
            j += 1
        elif w == b"justid":
            justid = True
        else:
            raise syntax_error()
        j += 1
    s, g = stream_and_group(ctx, key, argv[2])
    c = touch_consumer(ctx, g, name)
    now = ctx.now_ms
    attempts = count * 10
    claimed: list[Reply] = []
    deleted: list[Reply] = []
    cursor = MIN_ID
    # the entries examined, and the one after them (the cursor): no more of the PEL
    pending = list(g.pel.range(start, MAX_ID, attempts + 1))
    i = 0
    while attempts and count and i < len(pending):
        attempts -= 1
        entry_id, nack = pending[i]
        i += 1
        if not _exists(s, entry_id):
            g.remove_pending(entry_id)
            ctx.propagate([b"XACK", key, g.name, entry_id.encode()])
            deleted.append(entry_id.encode())
            count -= 1
            continue
        if min_idle and nack.consumer is not None and now - nack.delivery_time < min_idle:
            continue
        _move(ctx, g, c, entry_id, nack, now, None, justid)
        claimed.append(entry_id.encode() if justid else _entry(s, entry_id))
        count -= 1
        ctx.propagate(claim_effect(key, g, c, entry_id, nack, g.last_id))
    if i < len(pending):
        cursor = pending[i][0]
    ctx.propagate(consumer_effect(key, g, c))
    return [cursor.encode(), claimed, deleted]
