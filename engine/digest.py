"""State digests and integrity checks.

`value_digest` hashes a key's *logical* state: for a stream its metadata and live entries in
order, never its node layout, so two engines with different node limits that applied the same
effects have equal digests; `databases_digest` covers every database. `check_integrity`
verifies every structural invariant of a stream (listpack headers and backlens, node counters,
entry order, master IDs, rax order, metadata against entries) and raises AssertionError naming
the first broken one.
"""

from __future__ import annotations

import hashlib
import struct
from collections import deque
from typing import Final

from . import listpack as lp_
from . import node
from .groups import ConsumerGroup, check_groups
from .ids import MAX_ID, MIN_ID, StreamID
from .keyspace import Keyspace, Value
from .stream import LISTPACK_MAX_SIZE, Stream

_U64: Final = struct.Struct(">Q")
_I64: Final = struct.Struct(">q")


def _chunk(b: bytes) -> bytes:
    return _U64.pack(len(b)) + b


def value_digest(value: Value) -> bytes:
    h = hashlib.blake2b(digest_size=20)
    if isinstance(value, bytes):
        h.update(b"string" + _chunk(value))
        return h.digest()
    if isinstance(value, deque):
        h.update(b"list" + b"".join(map(_chunk, value)))
        return h.digest()
    if isinstance(value, set):  # sorted: a set's digest does not depend on insertion order
        h.update(b"set" + b"".join(map(_chunk, sorted(value))))
        return h.digest()
    s = value
    h.update(b"stream")
    for n in (s.length, s.entries_added, s.idmp_duration, s.idmp_maxsize):
        h.update(_U64.pack(n))
    h.update(_U64.pack(s.iids_added) + _U64.pack(s.iids_duplicates))
    for (pid, iid), entry_id in s.idmp_order.items():
        h.update(b"idmp" + _chunk(pid) + _chunk(iid) + entry_id.key())
    for i in (s.last_id, s.first_id, s.max_deleted_entry_id, s.max_trimmed_entry_id):
        h.update(i.key())
    for eid, fv in s.range(MIN_ID, MAX_ID):
        assert isinstance(eid, bytes) and isinstance(fv, list)
        h.update(_chunk(eid) + _U64.pack(len(fv)) + b"".join(map(_chunk, fv)))
    for name in sorted(s.cgroups):
        _group_digest(h, s.cgroups[name])
    return h.digest()


def _group_digest(h: hashlib.blake2b, g: ConsumerGroup) -> None:
    """A group's last_id, entries_read, every PEL entry and every consumer with its times."""
    h.update(b"group" + _chunk(g.name) + g.last_id.key() + _I64.pack(g.entries_read))
    for entry_id, nack in g.pel.items():
        owner = nack.consumer.name if nack.consumer is not None else b""
        h.update(entry_id.key() + _chunk(owner))
        h.update(_I64.pack(nack.delivery_time) + _I64.pack(nack.delivery_count))
    h.update(b"nacked" + b"".join(i.key() for i in g.nacked))
    for name in sorted(g.consumers):
        c = g.consumers[name]
        h.update(b"consumer" + _chunk(name) + _I64.pack(c.seen_time) + _I64.pack(c.active_time))
        h.update(_U64.pack(len(c.pel)) + b"".join(i.key() for i, _ in c.pel.items()))


def keyspace_digest(keyspace: Keyspace) -> bytes:
    h = hashlib.blake2b(digest_size=20)
    for key in sorted(keyspace):
        h.update(_chunk(key) + value_digest(keyspace.data[key]))
        when = keyspace.expires.get(key)
        if when is not None:
            h.update(b"expires" + _I64.pack(when))
    return h.digest()


def databases_digest(dbs: list[Keyspace]) -> bytes:
    """Every non-empty database's index and keyspace digest: equal engines, equal digests,
    whatever their count of (empty) databases."""
    h = hashlib.blake2b(digest_size=20)
    for db, keyspace in enumerate(dbs):
        if len(keyspace):
            h.update(b"db" + _U64.pack(db) + keyspace_digest(keyspace))
    return h.digest()


def check_stream(s: Stream) -> None:
    """Assert every invariant of one stream."""
    s.rax.check()
    prev: StreamID | None = None
    live_total = 0
    first_live: StreamID | None = None
    for key, lp in s.nodes():
        master = StreamID.from_key(key)
        try:
            lp_.validate(lp)
        except ValueError as e:
            raise AssertionError(f"node {master}: {e}") from None
        live, deleted, _ = node.counts(lp)
        entries = node.scan(lp, master)
        assert entries, f"node {master} has no entries"
        assert entries[0][2] == master, f"node {master} starts with {entries[0][2]}"
        n_deleted = sum(1 for _, f, _ in entries if f & node.FLAG_DELETED)
        assert deleted == n_deleted, f"node {master}: deleted {deleted} != {n_deleted}"
        assert live == len(entries) - n_deleted, f"node {master}: live counter {live} is wrong"
        assert live > 0 or deleted > 0, f"node {master} is empty"
        for _, flags, eid in entries:
            assert flags & ~3 == 0, f"entry {eid}: unknown flags {flags}"
            assert prev is None or eid > prev, f"entry {eid} not after {prev}"
            prev = eid
            if not flags & node.FLAG_DELETED and first_live is None:
                first_live = eid
        live_total += live
    assert live_total == s.length, f"length {s.length} != live entries {live_total}"
    assert s.first_id == (first_live or MIN_ID), f"first_id {s.first_id} != {first_live}"
    assert prev is None or s.last_id >= prev, f"last_id {s.last_id} < entry {prev}"
    assert s.entries_added >= s.length, "entries_added below length"
    assert s.max_deleted_entry_id <= s.last_id, "max_deleted_entry_id above last_id"
    # No bound ties a group's entries_read to entries_added: ENTRIESREAD is capped when set,
    # but a counter set too high for its ID keeps counting on later reads (lag goes negative
    # in Redis too).
    check_groups(s.cgroups, s.cgroups_ref)
    tail = s._tail
    if tail is not None:
        last = s.rax.last()
        assert last is not None and last[0] == tail[0] and last[1] is tail[1], "stale tail"
        assert tail[3] == node.master_fields(tail[1])[0], "stale tail master fields"


def check_node_limits(s: Stream, max_bytes: int, max_entries: int) -> None:
    """Assert each node respects the limits it was filled under: at most max_entries entries
    (tombstones included), and its last entry was appended while the node was still below
    max_bytes (Redis opens a new node when `bytes + entry field/value bytes >= max_bytes`).

    Two bytes of slack cover the master's live/deleted counters changing width since.
    """
    limit = max_bytes if 0 < max_bytes <= LISTPACK_MAX_SIZE else LISTPACK_MAX_SIZE
    for key, lp in s.nodes():
        master = StreamID.from_key(key)
        entries = node.scan(lp, master)
        if max_entries:
            assert len(entries) <= max_entries, f"node {master} holds {len(entries)} entries"
        if len(entries) < 2:
            continue
        last_pos = entries[-1][0]
        before = last_pos + 1  # the node as it was: everything up to the entry, and 0xFF
        assert before - 2 + _raw_size(lp, last_pos) < limit, f"node {master} overfilled"


def _raw_size(lp: bytes | bytearray, pos: int) -> int:
    """Field and value bytes of the entry whose flags are at `pos`, as XADD received them."""
    els = lp_.decode_all(lp, pos)
    flags, nf_or_value = els[0], els[3]
    assert isinstance(flags, int)
    if flags & node.FLAG_SAMEFIELDS:
        fields, _ = node.master_fields(lp)
        parts = list(fields) + els[3 : 3 + len(fields)]
    else:
        assert isinstance(nf_or_value, int)
        parts = els[4 : 4 + 2 * nf_or_value]
    return sum(len(p) if isinstance(p, bytes) else len(b"%d" % p) for p in parts)


def check_keyspace(keyspace: Keyspace, limits: tuple[int, int] | None = None) -> None:
    """check_stream on every stream, and check_node_limits when `limits` is given (except on
    streams whose nodes another server built)."""
    assert keyspace.expires.keys() <= keyspace.data.keys(), "an expiry time without its key"
    listed = {(key, when) for when, key in keyspace.deadlines}
    assert keyspace.expires.items() <= listed, "an expiry time active expiry cannot find"
    for key, v in keyspace.data.items():
        if isinstance(v, Stream):
            try:
                check_stream(v)
                if limits is not None and not v.foreign_nodes:
                    check_node_limits(v, *limits)
            except AssertionError as e:
                raise AssertionError(f"key {key!r}: {e}") from None
