"""Snapshots: every database as bytes, listpack nodes written as they are (as RDB does).

    +----------+---------+----------------------------------+------+------------------+
    | XSTRSNAP | ver u16 | record ... record                | 0xFF | CRC-32 u32 of    |
    | (magic)  |         |                                  | end  | everything before|
    +----------+---------+----------------------------------+------+------------------+
                         (versions 1 to 4: a blake2b-16 digest instead of the CRC-32)

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
big-endian; IDs are their 16-byte rax keys.

Writing: `captured` takes the state of one moment as the body's parts (full nodes by
reference: bytes never change; the rest written out), `pieces` joins them into pieces of
about `chunk_size` bytes as they are asked for, node bytes copied once, straight into the
piece; `body_chunks` is the two; `sealed` hashes pieces as they pass and adds the checksum;
`dump_chunks` is all three (what a snapshot file holds). A full sync captures at once and
joins and seals the pieces while sending: no copy of the whole data set is ever held.

Reading is snapload.py's Loader, which takes the pieces as they come (a full sync loads
while it receives); `restore`/`load_all` check magic, version, length and checksum of whole
bytes first, then parse with it. A corrupt, truncated or unknown-version snapshot (or one
naming a database the engine does not have) raises SnapshotError and leaves the engine
untouched. Versions 1 and 2 (no databases) load into db 0; versions 1 to 3 have no expiry
records. Version 5 differs from 4 only in its checksum: zlib's CRC-32 (4 bytes) sums a
snapshot several times faster than blake2b-16 did, on both ends of a full sync; like RDB's
CRC-64 it guards against damage, not forgery, and the structure checks stay. Files of
versions 1 to 4 load as they did (tests/unit/fixtures/snapshot-v4.xsnap, written by the build
before); a build older than version 5 refuses a version 5 snapshot in one line ("unsupported
snapshot version"), so replicas are upgraded before their primary, as with Redis's RDB.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Final, Protocol

from .errors import SnapshotError
from .keyspace import Keyspace, Value
from .settings import Settings
from .snapload import (
    BLAKE2B_SIZE,
    CRC_SIZE,
    END,
    EXPIRY,
    HDR,
    MAGIC,
    META,
    NO_OWNER,
    SELECT_DB,
    TYPE_LIST,
    TYPE_SET,
    TYPE_SETTING,
    TYPE_STREAM,
    TYPE_STRING,
    VERSION,
    VERSIONS,
    Loader,
    sum_size,
)
from .stream import Stream

_U32: Final = struct.Struct(">I")
_I64: Final = struct.Struct(">q")


class _Protocol(Protocol):  # the Engine's shape, without importing engine.py (no cycle)
    dbs: list[Keyspace]
    foreign_layout: bool
    settings: Settings


def dump_chunks(engine: _Protocol, chunk_size: int = 1 << 20) -> Iterator[bytes]:
    """The snapshot in pieces of roughly `chunk_size` bytes, its checksum the last piece: the
    state when the first piece is taken (body_chunks captures it then)."""
    return sealed(body_chunks(engine, chunk_size))


def sealed(body: Iterable[bytes]) -> Iterator[bytes]:
    """The pieces of `body` (body_chunks), then the checksum over them (CRC_SIZE bytes)."""
    crc = 0
    for chunk in body:
        crc = zlib.crc32(chunk, crc)
        yield chunk
    yield crc.to_bytes(CRC_SIZE, "big")


def body_chunks(engine: _Protocol, chunk_size: int = 1 << 20) -> Iterator[bytes]:
    """Everything but the checksum, in pieces of roughly `chunk_size` bytes (the state when
    the first is asked for: `captured`, then `pieces`)."""
    yield from pieces(captured(engine), chunk_size)


def captured(engine: _Protocol) -> list[bytes]:
    """Everything but the checksum as the parts of the body, in order: the state of this
    moment, taken without copying what cannot change. A full node is held as bytes, never
    changed in place (a change puts a bytearray copy in the rax instead, stream.py): it is
    taken by reference; a node still writable (a tail) is copied; every other record is
    written out now. Cheap next to the body's size: one reference or one small header a node."""
    parts: list[bytes] = [HDR.pack(MAGIC, VERSION)]
    for name, n in sorted(engine.settings.values.items()):
        text = b"%d" % n
        parts.append(bytes((TYPE_SETTING,)) + _U32.pack(len(name)) + name)
        parts.append(_U32.pack(len(text)) + text)
    for db, key, value in _records(engine.dbs):
        if key is None:
            parts += [bytes((SELECT_DB,)), _U32.pack(db)]
            continue
        assert value is not None
        parts += _key_record(engine.dbs[db].expires.get(key), key, value)
        if isinstance(value, Stream):
            parts += _stream_body(value)
    parts.append(bytes((END,)))
    return parts


def _stream_body(s: Stream) -> list[bytes]:
    """A stream record after its metadata: each node (master ID and length, then the
    listpack: a full node by reference, a writable one copied), then groups and IDMP."""
    parts: list[bytes] = []
    for nkey, lp in s.nodes():
        parts.append(nkey + _U32.pack(len(lp)))
        parts.append(lp if type(lp) is bytes else bytes(lp))
    parts.append(_groups(s) + _idmp(s))
    return parts


def pieces(parts: list[bytes], chunk_size: int = 1 << 20) -> Iterator[bytes]:
    """`parts` joined into pieces of roughly `chunk_size` bytes, each when it is asked for;
    the list is emptied as they go (a node dropped from the state since is freed once its
    piece was taken)."""
    parts.reverse()
    while parts:
        buf: list[bytes] = []
        size = 0
        while parts and size < chunk_size:
            part = parts.pop()
            buf.append(part)
            size += len(part)
        yield b"".join(buf)


def _key_record(when: int | None, key: bytes, value: Value) -> list[bytes]:
    """A key's record (a stream's up to its nodes), after its expiry record if it has one."""
    parts = [] if when is None else [bytes((EXPIRY,)), _I64.pack(when)]
    if isinstance(value, bytes):
        parts += [bytes((TYPE_STRING,)), _U32.pack(len(key)), key, _U32.pack(len(value)), value]
    elif isinstance(value, deque):
        parts += [bytes((TYPE_LIST,)), _U32.pack(len(key)), key, _U32.pack(len(value))]
        parts += [_U32.pack(len(item)) + item for item in value]
    elif isinstance(value, set):
        parts += [bytes((TYPE_SET,)), _U32.pack(len(key)), key, _U32.pack(len(value))]
        parts += [_U32.pack(len(member)) + member for member in sorted(value)]
    else:
        parts += [bytes((TYPE_STREAM,)), _U32.pack(len(key)), key, _stream_meta(value)]
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
                parts.append(NO_OWNER)
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
    data = b"".join([_stream_meta(value), *_stream_body(value)])
    copy = Loader(1, hashed=False).stream_of(data)
    copy.foreign_nodes = value.foreign_nodes  # the same nodes: built under the same limits
    return copy


def dump(engine: _Protocol) -> bytes:
    return b"".join(dump_chunks(engine))


def _stream_meta(s: Stream) -> bytes:
    return META.pack(
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


def restore_from(engine: _Protocol, loader: Loader, crc: int | None = None) -> None:
    """The same from a Loader fed every piece (`Loader(len(engine.dbs))`): SnapshotError,
    and the engine untouched, unless it finishes whole with its checksum matching (`crc`:
    the CRC-32 the caller summed, for a `Loader(crc_given=True)`)."""
    assert len(loader.dbs) == len(engine.dbs)
    engine.dbs[:], values = loader.finish(crc)
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
    hdr = HDR.size
    if len(data) < hdr:
        raise SnapshotError("snapshot truncated: shorter than its header and checksum")
    magic, version = HDR.unpack_from(data)
    if magic != MAGIC:
        raise SnapshotError("not an xstream snapshot (bad magic)")
    if version not in VERSIONS:
        raise SnapshotError(f"unsupported snapshot version {version} (this build reads {VERSION})")
    size = sum_size(version)
    if len(data) < hdr + 1 + size:
        raise SnapshotError("snapshot truncated: shorter than its header and checksum")
    view = memoryview(data)
    if _checksum(version, view[:-size]) != view[-size:]:
        raise SnapshotError("snapshot checksum mismatch: the file is corrupt or truncated")
    loader = Loader(databases, deep, hashed=False)  # checked just above, before any parsing
    loader.feed(data)
    return loader.finish()


def _checksum(version: int, body: memoryview) -> bytes:
    if version >= 5:
        return zlib.crc32(body).to_bytes(CRC_SIZE, "big")
    return hashlib.blake2b(body, digest_size=BLAKE2B_SIZE).digest()
