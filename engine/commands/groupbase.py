"""Helpers shared by the consumer-group commands: lookups with Redis's errors, consumer
touch-ups, and the effects that make group state replay exactly.

Effects of group commands (documented in one place; replay never consults a clock):

    XCLAIM key group consumer 0 id TIME t RETRYCOUNT n FORCE JUSTID LASTID last-id
        one per entry put into or re-assigned in a PEL (deliveries, claims, history reads),
        with the exact delivery time and count (Redis's own form; replayed without clamping
        TIME and without touching consumer times)
    XACK key group id ...
        PEL entries dropped because their stream entry is gone (XCLAIM/XAUTOCLAIM cleanup)
    XGROUP SETID key group id ENTRIESREAD n
        the group's last delivered ID and read counter after a `>` read or a LASTID raise
    XSETCONSUMER key group consumer SEEN seen-time ACTIVE active-time      (internal)
        the consumer's exact times after any command that created or touched it; creates
        it if missing. Redis has no such command: its replicas take these times from their
        own clocks (propagation.md B4, B5), xstream's do not.
"""

from __future__ import annotations

from typing import Final

from ..context import Argv, Ctx
from ..errors import StreamError
from ..groups import Consumer, ConsumerGroup, Nack
from ..ids import StreamID
from ..stream import Stream

_INT64_MAX: Final = (1 << 63) - 1


def ctext(b: bytes) -> str:
    """An argument as Redis's `%s` prints it in an error line: up to its first NUL, CR and LF
    turned into spaces; bytes that are not UTF-8 survive (surrogateescape, as resp.py
    encodes error lines back)."""
    text = b.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
    return text.replace("\r", " ").replace("\n", " ")


def bumped(count: int) -> int:
    """A delivery count plus one, staying at INT64_MAX (Redis 8.8 saturates every delivery
    count increment there: XNACK FATAL sets it, and earlier Redis wrapped to INT64_MIN)."""
    return count + 1 if count < _INT64_MAX else _INT64_MAX


def nogroup(key: bytes, group: bytes, suffix: str = "") -> StreamError:
    return StreamError(
        f"No such key '{ctext(key)}' or consumer group '{ctext(group)}'{suffix}", "NOGROUP"
    )


def no_such_group(key: bytes, group: bytes) -> StreamError:
    """XGROUP's and XINFO CONSUMERS' NOGROUP (group first, then key)."""
    return StreamError(
        f"No such consumer group '{ctext(group)}' for key name '{ctext(key)}'", "NOGROUP"
    )


def stream_and_group(ctx: Ctx, key: bytes, name: bytes) -> tuple[Stream, ConsumerGroup]:
    """Key and group or NOGROUP (WRONGTYPE first), as XPENDING/XCLAIM/XAUTOCLAIM check."""
    s = ctx.keyspace.stream(key)
    g = s.cgroups.get(name) if s is not None else None
    if s is None or g is None:
        raise nogroup(key, name)
    return s, g


def touch_consumer(ctx: Ctx, g: ConsumerGroup, name: bytes) -> Consumer:
    """Look up or create a consumer and mark it seen now (never from a clock on replay)."""
    c = g.consumer(name)
    if c is None:
        c = g.create_consumer(name, ctx.now_ms if not ctx.replicated else 0)
    if not ctx.replicated:
        c.seen_time = ctx.now_ms
    return c


def consumer_effect(key: bytes, g: ConsumerGroup, c: Consumer) -> Argv:
    return [
        b"XSETCONSUMER",
        key,
        g.name,
        c.name,
        b"SEEN",
        b"%d" % c.seen_time,
        b"ACTIVE",
        b"%d" % c.active_time,
    ]


def claim_effect(
    key: bytes, g: ConsumerGroup, c: Consumer, entry_id: StreamID, nack: Nack, last_id: StreamID
) -> Argv:
    return [
        b"XCLAIM",
        key,
        g.name,
        c.name,
        b"0",
        entry_id.encode(),
        b"TIME",
        b"%d" % nack.delivery_time,
        b"RETRYCOUNT",
        b"%d" % nack.delivery_count,
        b"FORCE",
        b"JUSTID",
        b"LASTID",
        last_id.encode(),
    ]


def delivery_effect(
    key: bytes, group: bytes, consumer: bytes, entry_id: bytes, time: bytes, last_id: bytes
) -> Argv:
    """claim_effect of an entry a `>` read delivers (delivery count 1), its parts encoded once
    per read by the caller. WARNING: claim_effect's form; a change to one is a change to both."""
    return [
        b"XCLAIM",
        key,
        group,
        consumer,
        b"0",
        entry_id,
        b"TIME",
        time,
        b"RETRYCOUNT",
        b"1",
        b"FORCE",
        b"JUSTID",
        b"LASTID",
        last_id,
    ]


def setid_effect(key: bytes, g: ConsumerGroup) -> Argv:
    return [
        b"XGROUP",
        b"SETID",
        key,
        g.name,
        g.last_id.encode(),
        b"ENTRIESREAD",
        b"%d" % g.entries_read,
    ]
