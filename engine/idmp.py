"""Idempotent producers (Redis 8.6 IDMP): remembered (producer, idempotent ID) -> entry ID.

    Stream.idmp        pid -> {iid -> entry ID}, each producer's records oldest first
    Stream.idmp_order  (pid, iid) -> entry ID over all producers, oldest first

A record's time is its entry's ms (IDMP appends always use `*`, whose ms is the clock, or the
last ID's ms when the clock is behind), so a replica derives it from the shipped ID and never
reads a clock. A record expires once `time + idmp_duration * 1000 <= now`; each producer keeps
at most `idmp_maxsize` records (the oldest go first).

Redis expires records from a cron on each node with its own clock, and ships duplicates as
`XADD ... *`, so its replicas can append twice (propagation.md B6). Here the primary expires
records only while executing an IDMP XADD, at that command's `now_ms`, and ships the cut as
the internal `XIDMPEXPIRE key now-ms`; duplicates ship with the original ID.
"""

from __future__ import annotations

import struct
from typing import Final

from xxhash import xxh3_128_intdigest

from .ids import StreamID
from .stream import Stream

_LONG: Final = struct.Struct("<q")  # a C long on the 64-bit little-endian hosts Redis runs on
_HALVES: Final = struct.Struct("<QQ")  # XXH128_hash_t: low64, then high64
_MASK64: Final = (1 << 64) - 1


def auto_iid(fields: list[bytes], values: list[bytes]) -> bytes:
    """IDMPAUTO's idempotent ID: Redis 8.8's createIdempotencyHash, byte for byte, so that an
    IID a DUMP carries between Redis and xstream still matches the same entry's fields.

    Each pair is hashed on its own with XXH3-128 over `field | len(field) | value` (the length
    as the 8-byte little-endian C long Redis feeds it); the pairs' 64-bit halves are combined
    both by sum and by xor (order-independent: the same fields in another order are a
    duplicate), then mixed, and the IID is the 16 bytes of Redis's XXH128_hash_t in memory:

        low = sum(lows) ^ rotl(xor(highs), 1)     high = sum(highs) ^ rotl(xor(lows), 1)
        +-------------------+-------------------+
        | low, 8 bytes LE   | high, 8 bytes LE  |
        +-------------------+-------------------+

    The effect ships the computed IID (`IDMP pid iid`): replicas and replay never hash.
    """
    sum_lo = sum_hi = xor_lo = xor_hi = 0
    for f, v in zip(fields, values, strict=True):
        pair = xxh3_128_intdigest(b"".join((f, _LONG.pack(len(f)), v)))
        lo = pair & _MASK64
        hi = pair >> 64
        sum_lo += lo
        sum_hi += hi
        xor_lo ^= lo
        xor_hi ^= hi
    low = (sum_lo & _MASK64) ^ _rotl1(xor_hi)
    high = (sum_hi & _MASK64) ^ _rotl1(xor_lo)
    return _HALVES.pack(low, high)


def _rotl1(x: int) -> int:
    return ((x << 1) | (x >> 63)) & _MASK64


def lookup(s: Stream, pid: bytes, iid: bytes) -> StreamID | None:
    records = s.idmp.get(pid)
    return records.get(iid) if records is not None else None


def record(s: Stream, pid: bytes, iid: bytes, entry_id: StreamID) -> None:
    """Remember (pid, iid) -> entry_id, evicting the producer's oldest beyond idmp_maxsize."""
    records = s.idmp.setdefault(pid, {})
    records[iid] = entry_id
    order = s.idmp_order
    newest = next(reversed(order.values())) if order else None
    order[(pid, iid)] = entry_id
    if newest is not None and entry_id.ms < newest.ms:
        _resort(s)
    while len(records) > s.idmp_maxsize:
        oldest = next(iter(records))
        del records[oldest]
        del s.idmp_order[(pid, oldest)]


def _resort(s: Stream) -> None:
    """Keep idmp_order in time order after an out-of-order XIDMPRECORD."""
    ordered = sorted(s.idmp_order.items(), key=lambda kv: kv[1].ms)
    s.idmp_order = dict(ordered)


def expire(s: Stream, now_ms: int) -> int:
    """Forget records whose window ended at or before now_ms; returns how many."""
    window = s.idmp_duration * 1000
    gone = 0
    order = s.idmp_order
    while order:
        (pid, iid), entry_id = next(iter(order.items()))
        if entry_id.ms + window > now_ms:
            break
        del order[(pid, iid)]
        records = s.idmp[pid]
        del records[iid]
        if not records:
            del s.idmp[pid]
        gone += 1
    return gone


def live_counts(s: Stream, now_ms: int) -> tuple[int, int]:
    """(producers, records) not yet expired at now_ms, for XINFO STREAM."""
    window = s.idmp_duration * 1000
    pids = set()
    n = 0
    for (pid, _), entry_id in s.idmp_order.items():
        if entry_id.ms + window > now_ms:
            pids.add(pid)
            n += 1
    return len(pids), n


def clear(s: Stream) -> None:
    s.idmp.clear()
    s.idmp_order.clear()
