"""XREADGROUP: new entries (`>`), a consumer's history (explicit ID), NOACK and CLAIM.

Order of work, as Redis: parse options; check every key (WRONGTYPE, NOGROUP) and every ID
left to right; then serve each stream. The consumer is created on first use and marked seen
on every call, even when nothing is returned. A `>` read delivers entries after the group's
last_id, adds them to the PELs (unless NOACK) and advances last_id / entries_read; a history
read re-delivers the consumer's own pending entries after the ID (bumping their count and
time; an entry gone from the stream shows as `[id, nil]`). CLAIM first takes PEL entries idle
for at least min-idle (released entries first, then oldest delivery), then new ones; every
entry then carries [id, fields, idle-before, count-before].

Effects (groupbase.py): an XCLAIM with TIME/RETRYCOUNT per PEL entry created or changed,
history reads included (Redis ships nothing for those: propagation.md B3), XGROUP SETID when
last_id moved, and XSETCONSUMER with the consumer's exact times.
"""

from __future__ import annotations

from typing import Final

from ..context import BlockSpec, Ctx
from ..errors import StreamError
from ..groups import Consumer, ConsumerGroup
from ..ids import MAX_ID, StreamID, parse_strict
from ..lag import advance
from ..reply import NULL_ARRAY, PairMap, Reply
from ..stream import Stream
from .args import cstr
from .groupbase import (
    bumped,
    claim_effect,
    consumer_effect,
    delivery_effect,
    nogroup,
    setid_effect,
)
from .read import ReadOptions, last_valid_id, parse_read_options

_MEANINGLESS: Final = (
    "The {0} ID is meaningless in the context of XREADGROUP: you want to read the history of "
    "this consumer by specifying a proper ID, or use the > ID to get new messages. The {0} ID "
    "would just return an empty result set."
)
_NEW: Final = None  # the `>` ID


def xreadgroup(ctx: Ctx) -> Reply:
    argv = ctx.argv
    o = parse_read_options(ctx, xreadgroup=True)
    assert o.group is not None
    n = (len(argv) - o.streams_at) // 2
    keys = argv[o.streams_at : o.streams_at + n]
    targets: list[tuple[bytes, Stream, ConsumerGroup, StreamID | None]] = []
    for k, key in enumerate(keys):
        s = ctx.keyspace.stream(key)
        ctx.keyspace.note_read(s is not None)  # Redis looks each stream up as a read, twice
        g = s.cgroups.get(o.group) if s is not None else None
        if s is None or g is None:
            raise nogroup(key, o.group, " in XREADGROUP with GROUP option")
        arg = cstr(argv[o.streams_at + n + k])  # Redis compares these with strcmp
        if arg in (b"$", b"+"):
            raise StreamError(_MEANINGLESS.format(arg.decode()))
        after = _NEW if arg == b">" else parse_strict(arg)
        # Redis encodes `>` as the maximum ID, so an explicit max ID reads new entries too
        targets.append((key, s, g, _NEW if after == MAX_ID else after))
    out = PairMap()
    for key, s, g, after in targets:
        ctx.keyspace.note_read(True)
        served = _serve(ctx, o, key, s, g, after)
        if served is not None:
            out.append([key, served])
    if out:
        return out
    if o.deadline is not None:
        rerun_at = 0 if o.claim_min_idle is None else _claimable_at(ctx, o, targets)
        ctx.block = BlockSpec(list(keys), o.deadline, list(argv), rerun_at, on_nokey=True)
    return NULL_ARRAY


POLL_MS: Final = 100  # Redis checks claim timeouts from its event loop, idle at hz 10: every 100 ms


def _claimable_at(
    ctx: Ctx, o: ReadOptions, targets: list[tuple[bytes, Stream, ConsumerGroup, StreamID | None]]
) -> int:
    """When a blocked CLAIM read must look again: its oldest pending entry (over every key,
    entries gone from the stream skipped) plus min-idle; with no pending entry, min-idle from
    now, as Redis re-checks (never sooner than POLL_MS, so an idle wait does not spin)."""
    assert o.claim_min_idle is not None
    times = [t for _, s, g, _ in targets if (t := _oldest_delivery(s, g)) is not None]
    if not times:
        return ctx.now_ms + max(o.claim_min_idle, POLL_MS)
    return min(times) + o.claim_min_idle


def _oldest_delivery(s: Stream, g: ConsumerGroup) -> int | None:
    for time, entry_id in g.by_time():
        if s.get(entry_id) is not None:
            return time
    return None


def _serve(
    ctx: Ctx, o: ReadOptions, key: bytes, s: Stream, g: ConsumerGroup, after: StreamID | None
) -> list[Reply] | None:
    existing = g.consumer(o.consumer)
    c = existing or g.create_consumer(o.consumer, ctx.now_ms)
    c.seen_time = ctx.now_ms
    if after is not None:
        entries: list[Reply] | None = _history(ctx, key, s, g, c, after, o.count)
        ctx.dirty = existing is None  # a history read changes only delivery metadata
    else:
        entries = _new(ctx, o, key, s, g, c)
    ctx.propagate(consumer_effect(key, g, c))
    return entries


def _history(
    ctx: Ctx, key: bytes, s: Stream, g: ConsumerGroup, c: Consumer, after: StreamID, count: int
) -> list[Reply]:
    out: list[Reply] = []
    for entry_id, nack in c.pel.after(after):  # c.pel itself does not change here
        if count and len(out) >= count:
            break
        fields = s.get(entry_id)
        if fields is None:
            out.append([entry_id.encode(), NULL_ARRAY])
            continue
        g.deliver(entry_id, nack, ctx.now_ms)
        nack.delivery_count = bumped(nack.delivery_count)
        out.append([entry_id.encode(), fields])  # type: ignore[list-item]
        ctx.propagate(claim_effect(key, g, c, entry_id, nack, g.last_id))
    return out


def _new(
    ctx: Ctx, o: ReadOptions, key: bytes, s: Stream, g: ConsumerGroup, c: Consumer
) -> list[Reply] | None:
    now = ctx.now_ms
    last_before = g.last_id
    claimed: list[Reply] = []
    if o.claim_min_idle is not None:
        claimed = _claim_idle(ctx, o, key, s, g, c, last_before)
    room = o.count - len(claimed) if o.count else 0
    fresh: list[Reply] = []
    has_new = bool(s.length) and last_valid_id(s) > g.last_id
    if has_new and (room > 0 or not o.count):
        start = g.last_id.incr()
        assert start is not None
        now_b, last_b = b"%d" % now, last_before.encode()  # every delivery's, in its effect
        ids: list[StreamID] = []
        items = s.range(start, MAX_ID, room, ids=ids)
        for item, entry_id in zip(items, ids, strict=True):
            eid_bytes, fields = item
            assert isinstance(eid_bytes, bytes)
            advance(s, g, entry_id)
            if not o.noack:
                nack = g.pel.get(entry_id)
                if nack is None:
                    g.add_pending(entry_id, c, now, 1)
                else:
                    g.assign(entry_id, nack, c)
                    g.deliver(entry_id, nack, now)
                    nack.delivery_count = 1
                c.active_time = now
                ctx.propagate(delivery_effect(key, g.name, c.name, eid_bytes, now_b, last_b))
            row: list[Reply] = [eid_bytes, fields]  # type: ignore[list-item]
            if o.claim_min_idle is not None:
                row += [0, 0]
            fresh.append(row)
    if g.last_id != last_before:
        ctx.propagate(setid_effect(key, g))
    if not claimed and not fresh:
        return None
    return claimed + fresh


def _claim_idle(
    ctx: Ctx,
    o: ReadOptions,
    key: bytes,
    s: Stream,
    g: ConsumerGroup,
    c: Consumer,
    last_id: StreamID,
) -> list[Reply]:
    """CLAIM: idle PEL entries first, released (unowned) ones before owned, oldest first."""
    assert o.claim_min_idle is not None
    now = ctx.now_ms
    candidates = list(g.nacked)
    for time, entry_id in g.by_time():
        if now - time < o.claim_min_idle:
            break
        candidates.append(entry_id)
    out: list[Reply] = []
    for entry_id in candidates:
        if o.count and len(out) >= o.count:
            break
        nack = g.pel.get(entry_id)
        assert nack is not None
        fields = s.get(entry_id)
        if fields is None:
            continue
        idle = max(now - nack.delivery_time, 0) if nack.consumer is not None else -1
        before = nack.delivery_count
        g.assign(entry_id, nack, c)
        g.deliver(entry_id, nack, now)
        nack.delivery_count = bumped(nack.delivery_count)
        c.active_time = now
        out.append([entry_id.encode(), fields, idle, before])  # type: ignore[list-item]
        ctx.propagate(claim_effect(key, g, c, entry_id, nack, last_id))
    return out
