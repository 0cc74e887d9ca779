"""Snapshots: every database as bytes, listpack nodes written as they are (as RDB does).

    +----------+---------+----------------------------------+------+------------------+
    | XSTRSNAP | ver u16 | record ... record                | 0xFF | blake2b-16 of    |
    | (magic)  |         |                                  | end  | everything before|
    +----------+---------+----------------------------------+------+------------------+

    select db       0xFE | db u32 (version 3+; RDB's SELECTDB): the records after it, up to
                    the next one, are that database's keys; before any, db 0's. Written
                    before each non-empty database's keys, in increasing db order
    expiry          0xFC | unix ms i64 (version 4+; RDB's EXPIRETIME_MS): the time the key of
                    the record right after it expires at
    setting record  0x03 | name | value                     (version 3+: CONFIG SET's
                    stream settings, settings.py; name and decimal value as key/value)
    list record     0x04 | key | count u32 | count x element   (version 4+)
    set record      0x05 | key | count u32 | count x member    (version 4+; members sorted)
    string record   0x01 | key | value                      (key/value: u32 length + bytes)
    stream record   0x02 | key | length u64 | entries_added u64 | last_id 16 | first_id 16 |
                    max_deleted_entry_id 16 | max_trimmed_entry_id 16 (version 2+) |
                    idmp_duration u32 | idmp_maxsize u32 |
                    iids_added u64 | iids_duplicates u64 | nodes u64 |
                    nodes x (master ID 16 | u32 length | listpack bytes) |
                    groups u32 | per group: name | last_id 16 | entries_read i64 |
                      consumers u32 x (name | seen_time i64 | active_time i64) |
                      pel u32 x (ID 16 | delivery_time i64 | delivery_count i64 | owner)
                      nacked u32 x ID 16 (the NACK zone, in release order)
                    (owner: a consumer name, or u32 0xFFFFFFFF for a released entry) |
                    idmp records u32 x (pid | iid | entry ID 16), oldest first

Setting records come first, one per value CONFIG SET changed (none: the node's flags
apply), so a snapshot of a node nobody reconfigured holds only keys. All integers are
big-endian; IDs are their 16-byte rax keys. `dump_chunks` yields the snapshot
in pieces of about `chunk_size` bytes (node bytes are never copied into an intermediate
object), which is what a full resync streams. `restore` checks magic, version, length and
checksum before parsing, then checks every node's structure; a corrupt, truncated or
unknown-version snapshot (or one naming a database the engine does not have) raises
SnapshotError and leaves the engine untouched. Versions 1 and 2 (no databases) load into db 0;
versions 1 to 3 have no expiry records.
"""

from __future__ import annotations

import hashlib
import struct
from collections import deque
from collections.abc import Iterator
from typing import Final, Protocol

from . import listpack as lp_
from . import node, settings
from .digest import check_stream
from .errors import SnapshotError, StreamError
from .groups import ConsumerGroup
from .ids import StreamID
from .keyspace import Keyspace, Value
from .settings import Settings
from .stream import Stream

MAGIC: Final = b"XSTRSNAP"
VERSION: Final = 4  # 2 added max_trimmed_entry_id, 3 databases and setting records, 4 expiry, list
# and set records; 1 to 3 still load
_TYPE_STRING: Final = 1
_TYPE_STREAM: Final = 2
_TYPE_SETTING: Final = 3
_TYPE_LIST: Final = 4
_TYPE_SET: Final = 5
_EXPIRY: Final = 0xFC
_SELECT_DB: Final = 0xFE
_END: Final = 0xFF
_SUM_SIZE: Final = 16
_HDR: Final = struct.Struct(">8sH")
_U32: Final = struct.Struct(">I")
_I64: Final = struct.Struct(">q")
_NO_OWNER: Final = b"\xff\xff\xff\xff"
_META: Final = struct.Struct(">QQ16s16s16s16sIIQQQ")
_META_V1: Final = struct.Struct(">QQ16s16s16sIIQQQ")


class _Protocol(Protocol):  # the Engine's shape, without importing engine.py (no cycle)
    dbs: list[Keyspace]
    foreign_layout: bool
    settings: Settings


def dump_chunks(engine: _Protocol, chunk_size: int = 1 << 20) -> Iterator[bytes]:
    """The snapshot in pieces of roughly `chunk_size` bytes."""
    h = hashlib.blake2b(digest_size=_SUM_SIZE)
    buf: list[bytes] = [_HDR.pack(MAGIC, VERSION)]
    for name, n in sorted(engine.settings.values.items()):
        text = b"%d" % n
        buf.append(bytes((_TYPE_SETTING,)) + _U32.pack(len(name)) + name)
        buf.append(_U32.pack(len(text)) + text)
    size = sum(map(len, buf))
    for db, key, value in _records(engine.dbs):
        if key is None:
            parts = [bytes((_SELECT_DB,)), _U32.pack(db)]
        else:
            assert value is not None
            parts = _key_record(engine.dbs[db].expires.get(key), key, value)
        for p in parts:
            buf.append(p)
            size += len(p)
        if isinstance(value, Stream):
            for nkey, lp in value.nodes():
                buf.append(nkey + _U32.pack(len(lp)))
                buf.append(bytes(lp))
                size += 20 + len(lp)
                if size >= chunk_size:
                    chunk = b"".join(buf)
                    h.update(chunk)
                    yield chunk
                    buf, size = [], 0
            tail = _groups(value) + _idmp(value)
            buf.append(tail)
            size += len(tail)
    buf.append(bytes((_END,)))
    chunk = b"".join(buf)
    h.update(chunk)
    yield chunk + h.digest()


def _key_record(when: int | None, key: bytes, value: Value) -> list[bytes]:
    """A key's record (a stream's up to its nodes), after its expiry record if it has one."""
    parts = [] if when is None else [bytes((_EXPIRY,)), _I64.pack(when)]
    if isinstance(value, bytes):
        parts += [bytes((_TYPE_STRING,)), _U32.pack(len(key)), key, _U32.pack(len(value)), value]
    elif isinstance(value, deque):
        parts += [bytes((_TYPE_LIST,)), _U32.pack(len(key)), key, _U32.pack(len(value))]
        parts += [_U32.pack(len(item)) + item for item in value]
    elif isinstance(value, set):
        parts += [bytes((_TYPE_SET,)), _U32.pack(len(key)), key, _U32.pack(len(value))]
        parts += [_U32.pack(len(member)) + member for member in sorted(value)]
    else:
        parts += [bytes((_TYPE_STREAM,)), _U32.pack(len(key)), key, _stream_meta(value)]
    return parts


def _records(dbs: list[Keyspace]) -> Iterator[tuple[int, bytes | None, Value | None]]:
    """(db, None, None) where a database starts, then (db, key, value) for each of its keys."""
    for db, keyspace in enumerate(dbs):
        if len(keyspace):
            yield db, None, None
            for key in sorted(keyspace):
                yield db, key, keyspace.data[key]


def _groups(s: Stream) -> bytes:
    parts = [_U32.pack(len(s.cgroups))]
    for name in sorted(s.cgroups):
        g = s.cgroups[name]
        parts += [_U32.pack(len(name)), name, g.last_id.key(), _I64.pack(g.entries_read)]
        parts.append(_U32.pack(len(g.consumers)))
        for cname in sorted(g.consumers):
            c = g.consumers[cname]
            parts += [
                _U32.pack(len(cname)),
                cname,
                _I64.pack(c.seen_time),
                _I64.pack(c.active_time),
            ]
        parts.append(_U32.pack(len(g.pel)))
        for entry_id, nack in g.pel.items():
            parts += [entry_id.key(), _I64.pack(nack.delivery_time), _I64.pack(nack.delivery_count)]
            if nack.consumer is None:
                parts.append(_NO_OWNER)
            else:
                parts += [_U32.pack(len(nack.consumer.name)), nack.consumer.name]
        parts.append(_U32.pack(len(g.nacked)))
        parts += [entry_id.key() for entry_id in g.nacked]
    return b"".join(parts)


def _idmp(s: Stream) -> bytes:
    parts = [_U32.pack(len(s.idmp_order))]
    for (pid, iid), entry_id in s.idmp_order.items():
        parts += [_U32.pack(len(pid)), pid, _U32.pack(len(iid)), iid, entry_id.key()]
    return b"".join(parts)


def copy_value(value: Value) -> Value:
    """A deep copy of a value made through its snapshot form (COPY's): a stream keeps its
    entries and node layout, metadata, groups with their consumers, PELs and NACK zone, and
    its IDMP history."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, deque):
        return deque(value)
    if isinstance(value, set):
        return set(value)
    parts = [_stream_meta(value)]
    for nkey, lp in value.nodes():
        parts += [nkey, _U32.pack(len(lp)), bytes(lp)]
    data = b"".join([*parts, _groups(value), _idmp(value)])
    copy, end = _stream(memoryview(data), 0, False, VERSION)
    assert end == len(data)
    copy.foreign_nodes = value.foreign_nodes  # the same nodes: built under the same limits
    return copy


def dump(engine: _Protocol) -> bytes:
    return b"".join(dump_chunks(engine))


def _stream_meta(s: Stream) -> bytes:
    return _META.pack(
        s.length,
        s.entries_added,
        s.last_id.key(),
        s.first_id.key(),
        s.max_deleted_entry_id.key(),
        s.max_trimmed_entry_id.key(),
        s.idmp_duration,
        s.idmp_maxsize,
        s.iids_added,
        s.iids_duplicates,
        len(s.rax),
    )


def restore(engine: _Protocol, data: bytes, deep: bool = False) -> None:
    """Replace the engine's databases and CONFIG SET values with the snapshot's, or raise
    SnapshotError."""
    engine.dbs[:], values = load_all(data, deep, len(engine.dbs))
    engine.foreign_layout = True
    engine.settings.load(values)


def load(data: bytes, deep: bool = False, databases: int = 16) -> list[Keyspace]:
    """Parse and verify a snapshot into `databases` new keyspaces (see load_all)."""
    return load_all(data, deep, databases)[0]


def load_all(
    data: bytes, deep: bool = False, databases: int = 16
) -> tuple[list[Keyspace], dict[bytes, int]]:
    """Parse and verify a snapshot: `databases` new keyspaces, and the setting values it
    carries.

    The checksum vouches for the bytes; structure is checked cheaply (headers, counters,
    node order, length), or fully with `deep` (every element and backlen, as check_integrity).
    """
    hdr = _HDR.size
    if len(data) < hdr + 1 + _SUM_SIZE:
        raise SnapshotError("snapshot truncated: shorter than its header and checksum")
    magic, version = _HDR.unpack_from(data)
    if magic != MAGIC:
        raise SnapshotError("not an xstream snapshot (bad magic)")
    if version not in (1, 2, 3, VERSION):
        raise SnapshotError(f"unsupported snapshot version {version} (this build reads {VERSION})")
    body, checksum = data[:-_SUM_SIZE], data[-_SUM_SIZE:]
    if hashlib.blake2b(body, digest_size=_SUM_SIZE).digest() != checksum:
        raise SnapshotError("snapshot checksum mismatch: the file is corrupt or truncated")
    try:
        return _parse(memoryview(body), hdr, deep, version, databases)
    except (struct.error, ValueError, IndexError, AssertionError) as e:
        raise SnapshotError(f"snapshot structure is invalid: {e}") from None


def _parse(
    body: memoryview, pos: int, deep: bool, version: int, databases: int
) -> tuple[list[Keyspace], dict[bytes, int]]:
    dbs = [Keyspace() for _ in range(databases)]
    db, ks = 0, dbs[0]
    values: dict[bytes, int] = {}
    when: int | None = None  # the expiry record's time, for the next key
    while True:
        kind = body[pos]
        pos += 1
        if kind == _EXPIRY and version >= 4 and when is None:
            (when,) = _I64.unpack_from(body, pos)
            pos += 8
            continue
        if when is not None and kind not in (_TYPE_STRING, _TYPE_STREAM, _TYPE_LIST, _TYPE_SET):
            raise ValueError("an expiry record not followed by a key")
        if kind == _END:
            if pos != len(body):
                raise ValueError("bytes after the end marker")
            return dbs, values
        if kind == _SELECT_DB and version >= 3:
            (n,) = _U32.unpack_from(body, pos)
            pos += 4
            if n >= databases:
                raise ValueError(f"db {n} is beyond this engine's {databases} databases")
            if n < db or (n == db and len(ks)):
                raise ValueError(f"db {n} out of order")
            db, ks = n, dbs[n]
            continue
        key, pos = _bytes(body, pos)
        if kind == _TYPE_SETTING and version >= 3:
            raw, pos = _bytes(body, pos)
            values[key] = _setting(key, raw)
            continue
        if key in ks.data:
            raise ValueError(f"duplicate key {key!r}")
        if kind == _TYPE_STRING:
            value, pos = _bytes(body, pos)
            ks.set(key, value, when)
        elif kind == _TYPE_STREAM:
            s, pos = _stream(body, pos, deep, version)
            ks.set(key, s, when)
        elif kind == _TYPE_LIST and version >= 4:
            (count,) = _U32.unpack_from(body, pos)
            items: deque[bytes] = deque()
            pos += 4
            for _ in range(count):
                item, pos = _bytes(body, pos)
                items.append(item)
            ks.set(key, items, when)
        elif kind == _TYPE_SET and version >= 4:
            members, pos = _members(body, pos)
            ks.set(key, members, when)
        else:
            raise ValueError(f"unknown record type {kind}")
        when = None


def _setting(name: bytes, raw: bytes) -> int:
    if name not in settings.SETTINGS:
        raise ValueError(f"unknown setting {name!r}")
    try:
        return settings.parse(name, raw)
    except StreamError as e:
        raise ValueError(f"setting {name!r}: {e.message}") from None


def _bytes(body: memoryview, pos: int) -> tuple[bytes, int]:
    (n,) = _U32.unpack_from(body, pos)
    end = pos + 4 + n
    if end > len(body):
        raise ValueError("record overruns the snapshot")
    return bytes(body[pos + 4 : end]), end


def _members(body: memoryview, pos: int) -> tuple[set[bytes], int]:
    """A set record's count and members; a repeated member is a damaged snapshot."""
    (count,) = _U32.unpack_from(body, pos)
    pos += 4
    members: set[bytes] = set()
    for _ in range(count):
        member, pos = _bytes(body, pos)
        members.add(member)
    if len(members) != count:
        raise ValueError("a set record repeats a member")
    return members, pos


def _stream(body: memoryview, pos: int, deep: bool, version: int) -> tuple[Stream, int]:
    meta_struct = _META if version >= 2 else _META_V1
    meta = list(meta_struct.unpack_from(body, pos))
    pos += meta_struct.size
    s = Stream()
    if version >= 2:
        s.max_trimmed_entry_id = StreamID.from_key(meta.pop(5))
    s.length, s.entries_added = meta[0], meta[1]
    s.last_id = StreamID.from_key(meta[2])
    s.first_id = StreamID.from_key(meta[3])
    s.max_deleted_entry_id = StreamID.from_key(meta[4])
    s.idmp_duration, s.idmp_maxsize, s.iids_added, s.iids_duplicates = meta[5:9]
    prev = b""
    live_total = 0
    for _ in range(meta[9]):
        nkey = bytes(body[pos : pos + 16])
        if len(nkey) != 16 or nkey <= prev:
            raise ValueError("node keys out of order")
        prev = nkey
        lp_bytes, pos = _bytes(body, pos + 16)
        lp = bytearray(lp_bytes)
        live_total += _check_node(lp)
        s.rax.insert(nkey, lp)
    if live_total != s.length:
        raise ValueError(f"stream length {s.length} != live entries {live_total}")
    pos = _load_groups(body, pos, s)
    (nrecords,) = _U32.unpack_from(body, pos)
    pos += 4
    for _ in range(nrecords):
        pid, pos = _bytes(body, pos)
        iid, pos = _bytes(body, pos)
        s.idmp.setdefault(pid, {})[iid] = s.idmp_order[(pid, iid)] = StreamID.from_key(
            bytes(body[pos : pos + 16])
        )
        pos += 16
    if deep:
        check_stream(s)
    return s, pos


def _load_groups(body: memoryview, pos: int, s: Stream) -> int:
    (ngroups,) = _U32.unpack_from(body, pos)
    pos += 4
    for _ in range(ngroups):
        name, pos = _bytes(body, pos)
        last_id = StreamID.from_key(bytes(body[pos : pos + 16]))
        (entries_read,) = _I64.unpack_from(body, pos + 16)
        g = ConsumerGroup(name, last_id, entries_read, s.cgroups_ref)
        if name in s.cgroups:
            raise ValueError(f"duplicate group {name!r}")
        s.cgroups[name] = g
        (nconsumers,) = _U32.unpack_from(body, pos + 24)
        pos += 28
        for _ in range(nconsumers):
            cname, pos = _bytes(body, pos)
            seen, active = _I64.unpack_from(body, pos)[0], _I64.unpack_from(body, pos + 8)[0]
            pos += 16
            if cname in g.consumers:
                raise ValueError(f"duplicate consumer {cname!r}")
            g.create_consumer(cname, seen).active_time = active
        (npel,) = _U32.unpack_from(body, pos)
        pos += 4
        for _ in range(npel):
            entry_id = StreamID.from_key(bytes(body[pos : pos + 16]))
            time, count = _I64.unpack_from(body, pos + 16)[0], _I64.unpack_from(body, pos + 24)[0]
            pos += 32
            owner = None
            if bytes(body[pos : pos + 4]) == _NO_OWNER:
                pos += 4
            else:
                oname, pos = _bytes(body, pos)
                owner = g.consumers.get(oname)
                if owner is None:
                    raise ValueError(f"PEL entry owned by unknown consumer {oname!r}")
            if entry_id in g.pel:
                raise ValueError(f"duplicate PEL entry {entry_id}")
            g.add_pending(entry_id, owner, time, count)
        (nnacked,) = _U32.unpack_from(body, pos)
        pos += 4
        order = [
            StreamID.from_key(bytes(body[pos + 16 * k : pos + 16 * k + 16])) for k in range(nnacked)
        ]
        pos += 16 * nnacked
        if set(order) != set(g.nacked) or len(order) != len(g.nacked):
            raise ValueError(f"group {name!r} NACK zone disagrees with its PEL")
        g.nacked = dict.fromkeys(order)
    return pos


def _check_node(lp: bytearray) -> int:
    """Cheap structural checks of one node; returns its live count."""
    if len(lp) < lp_.HEADER_SIZE + 1 or lp_.total_bytes(lp) != len(lp) or lp[-1] != lp_.EOF_BYTE:
        raise ValueError("listpack header or end byte is wrong")
    live, deleted, _ = node.counts(lp)
    if live < 0 or deleted < 0 or live + deleted == 0:
        raise ValueError("node counters are invalid")
    return live
