"""Loading a snapshot (snapshot.py's format) fed in pieces, as a full sync receives it.

    loader = Loader(databases)
    loader.feed(piece) ... loader.feed(piece)      pieces of any size, down to one byte
    dbs, values = loader.finish()                   the keyspaces and CONFIG SET values

The loader parses the whole *items* the pieces fed so far hold and keeps the rest, so a
snapshot is loaded while it is still arriving. An item is the file header, one top-level
record (a stream's: up to its nodes), one stream node, or a stream's tail (its groups and
IDMP records). An item cut by a piece boundary is parsed again from its start once more bytes
have come, and no earlier than when the bytes held have doubled: a long item (a large PEL, a
long list) is parsed a logarithmic number of times, never once per piece.

    pieces    [ piece 0 ][ piece 1 ][ piece 2 ]...   consumed pieces are summed and dropped
    cursor         ^ (piece index, position)        the next byte to parse
    after the end marker: what is left is the checksum (CRC-32; blake2b-16 before version 5)

Each byte is checked once: magic and version as soon as the header is in; the structure of
every record and node as it is parsed (a node's listpack header, end byte and counters; node
keys increasing; live entries adding up to the stream's length; `deep` adds every element and
backlen, check_stream, as check_integrity does); the checksum over everything before it,
summed as the pieces are parsed and compared by `finish` (a version 5+ CRC-32 may be summed by
the caller instead, `crc_given`: a full sync sums it on its file writer's thread, off the
thread that parses). A node's bytes are
copied once, from the piece into the node's bytes. Nothing the loader builds is anyone
else's before `finish` returns: a corrupt, truncated or unknown snapshot raises SnapshotError
(from `feed` or `finish`) and a caller that adopts only a finished load is left untouched.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections import deque
from typing import Final

from . import listpack as lp_
from . import node, settings
from .digest import check_stream
from .errors import SnapshotError, StreamError
from .groups import ConsumerGroup
from .ids import StreamID
from .keyspace import Keyspace
from .stream import Stream

# WARNING: the format's constants, the same as snapshot.py's (which writes what this reads).
MAGIC: Final = b"XSTRSNAP"
VERSION: Final = 5  # 5: a CRC-32 closes the snapshot instead of a blake2b digest
VERSIONS: Final = (1, 2, 3, 4, 5)  # the versions this build reads
CRC_SIZE: Final = 4  # version 5+: zlib's CRC-32 of everything before it, big-endian
BLAKE2B_SIZE: Final = 16  # versions 1 to 4: blake2b-16 of everything before it
TYPE_STRING: Final = 1
TYPE_STREAM: Final = 2
TYPE_SETTING: Final = 3
TYPE_LIST: Final = 4
TYPE_SET: Final = 5
EXPIRY: Final = 0xFC
SELECT_DB: Final = 0xFE
END: Final = 0xFF
HDR: Final = struct.Struct(">8sH")
META: Final = struct.Struct(">QQ16s16s16s16sIIQQQ")
META_V1: Final = struct.Struct(">QQ16s16s16sIIQQQ")
NO_OWNER: Final = b"\xff\xff\xff\xff"
_KEY_TYPES: Final = (TYPE_STRING, TYPE_STREAM, TYPE_LIST, TYPE_SET)

# what the next item is
_HEAD: Final = 0  # the magic and version
_TOP: Final = 1  # a top-level record, or the end marker
_NODES: Final = 2  # the next node of the stream being loaded
_TAIL: Final = 3  # the groups and IDMP records of the stream being loaded
_DONE: Final = 4  # the end marker was read: only the checksum may follow


class _Short(Exception):  # noqa: N818 (a state of the loader, not an error)
    """The item being parsed runs past the bytes fed so far."""


class Loader:
    """One snapshot, loaded as its pieces are fed (see the module's comment)."""

    def __init__(
        self, databases: int = 16, deep: bool = False, hashed: bool = True, crc_given: bool = False
    ) -> None:
        self.deep = deep  # check every element of every stream too
        self.hashed = hashed  # False: the caller verified the checksum already
        self.crc_given = crc_given  # version 5+: the caller sums the CRC-32 (finish's `crc`)
        self.dbs = [Keyspace() for _ in range(databases)]  # what was loaded so far
        self.values: dict[bytes, int] = {}  # CONFIG SET values of setting records
        self.version = 0  # the snapshot's version, once its header is in
        self.size = 0  # bytes fed
        self._crc = 0  # the CRC-32 of the bytes parsed so far (version 5+) ...
        self._blake2b = hashlib.blake2b(digest_size=BLAKE2B_SIZE)  # ... or their digest
        self._pieces: list[memoryview] = []  # fed, from the cursor's piece on
        self._i = 0  # the cursor: index in _pieces ...
        self._pos = 0  # ... and position in that piece
        self._ahead = 0  # bytes fed after the cursor
        self._retry_at = 0  # an item cut short is not parsed again with fewer bytes ahead
        self._state = _HEAD
        self._db = 0  # the database records go to (SELECT_DB)
        self._when: int | None = None  # the expiry record's time, for the next key
        self._key = b""  # the stream being loaded: its key ...
        self._stream = Stream()  # ... the stream ...
        self._nodes_left = 0  # ... the nodes still to come ...
        self._prev = b""  # ... its last node key so far ...
        self._live = 0  # ... and the live entries of its nodes so far

    # ------------------------------------------------------------ feeding

    def feed(self, data: bytes | memoryview) -> None:
        """Take the next piece; parse what it completes. SnapshotError if it is not a
        snapshot this build reads, or its structure is wrong."""
        if not data:
            return
        self.size += len(data)
        self._pieces.append(memoryview(data))
        self._ahead += len(data)
        if self._ahead >= self._retry_at:
            self._run()

    def finish(self, crc: int | None = None) -> tuple[list[Keyspace], dict[bytes, int]]:
        """The loaded keyspaces and setting values, once every piece was fed. SnapshotError
        if the snapshot is truncated, has bytes after its end, or its checksum differs.
        `crc`: with `crc_given`, the CRC-32 the caller summed over every byte fed but the
        last CRC_SIZE (a version 5+ snapshot's checksum is compared with it; an older one's
        digest was summed here all the same)."""
        self._retry_at = 0
        self._run()
        size = sum_size(self.version)
        if self._state != _DONE or self._ahead < size:
            raise SnapshotError("snapshot truncated: it ends before its end marker and checksum")
        if self._ahead > size:
            raise SnapshotError("snapshot structure is invalid: bytes after the end marker")
        if self.hashed and bytes(self._take(size)) != self._checksum(crc):
            raise SnapshotError("snapshot checksum mismatch: the file is corrupt or truncated")
        return self.dbs, self.values

    def _sum(self, view: memoryview) -> None:
        """Add parsed bytes to the checksum (a CRC-32 the caller sums: nothing to add)."""
        if not self.hashed:
            return
        if self.version >= 5:
            if not self.crc_given:
                self._crc = zlib.crc32(view, self._crc)
        else:
            self._blake2b.update(view)

    def _checksum(self, crc: int | None) -> bytes:
        if self.version >= 5:
            if self.crc_given:
                if crc is None:
                    raise SnapshotError("snapshot checksum not summed (Loader(crc_given=True))")
                return crc.to_bytes(CRC_SIZE, "big")
            return self._crc.to_bytes(CRC_SIZE, "big")
        return self._blake2b.digest()

    def _run(self) -> None:
        """Parse items until the bytes fed run out (the item cut short waits) or the end."""
        while self._state != _DONE:
            i, pos, ahead = self._i, self._pos, self._ahead
            try:
                self._step()
            except _Short:
                self._i, self._pos, self._ahead = i, pos, ahead
                self._retry_at = 2 * ahead + 1
                break
            except (struct.error, ValueError, IndexError, AssertionError) as e:
                raise SnapshotError(f"snapshot structure is invalid: {e}") from None
            if self._i:  # pieces parsed through, never parsed again
                for piece in self._pieces[: self._i]:
                    self._sum(piece)
                del self._pieces[: self._i]
                self._i = 0
        if self._state == _DONE and self._pieces and self._pos:  # the checksum is what is left
            self._sum(self._pieces[0][: self._pos])
            self._pieces[0] = self._pieces[0][self._pos :]
            self._pos = 0

    def _step(self) -> None:
        state = self._state
        if state == _NODES:
            self._node()
        elif state == _TOP:
            self._record()
        elif state == _TAIL:
            self._tail()
        else:
            self._header()

    # ------------------------------------------------------------ reading the pieces

    def _take(self, n: int) -> memoryview:
        """The next `n` bytes (a view into a piece, or a copy when they span pieces)."""
        if n > self._ahead:
            raise _Short()
        if n == 0:
            return memoryview(b"")
        piece = self._pieces[self._i]
        end = self._pos + n
        if end <= len(piece):
            out = piece[self._pos : end]
            self._advance(piece, end, n)
            return out
        parts = []
        need = n
        while need:
            piece = self._pieces[self._i]
            k = min(need, len(piece) - self._pos)
            parts.append(piece[self._pos : self._pos + k])
            need -= k
            self._advance(piece, self._pos + k, k)
        return memoryview(b"".join(parts))

    def _advance(self, piece: memoryview, end: int, n: int) -> None:
        self._ahead -= n
        if end == len(piece):
            self._i += 1
            self._pos = 0
        else:
            self._pos = end

    def _u8(self) -> int:
        return self._take(1)[0]

    def _u32(self) -> int:
        return int.from_bytes(self._take(4), "big")

    def _i64(self) -> int:
        return int.from_bytes(self._take(8), "big", signed=True)

    def _id(self) -> StreamID:
        return StreamID.from_key(bytes(self._take(16)))

    def _blob(self) -> bytes:
        """A u32 length, then that many bytes."""
        return bytes(self._take(self._u32()))

    # ------------------------------------------------------------ items

    def _header(self) -> None:
        magic, version = HDR.unpack_from(self._take(HDR.size))
        if magic != MAGIC:
            raise SnapshotError("not an xstream snapshot (bad magic)")
        if version not in VERSIONS:
            raise SnapshotError(
                f"unsupported snapshot version {version} (this build reads {VERSION})"
            )
        self.version = version
        self._state = _TOP

    def _record(self) -> None:
        """One top-level record (a stream's up to its nodes), or the end marker."""
        kind = self._u8()
        version = self.version
        if kind == EXPIRY and version >= 4 and self._when is None:
            self._when = self._i64()
            return
        if self._when is not None and kind not in _KEY_TYPES:
            raise ValueError("an expiry record not followed by a key")
        if kind == END:
            self._state = _DONE
        elif kind == SELECT_DB and version >= 3:
            self._select(self._u32())
        elif kind == TYPE_SETTING and version >= 3:
            name = self._blob()
            self.values[name] = _setting(name, self._blob())
        else:
            self._key_record(kind)

    def _select(self, n: int) -> None:
        if n >= len(self.dbs):
            raise ValueError(f"db {n} is beyond this engine's {len(self.dbs)} databases")
        if n < self._db or (n == self._db and len(self.dbs[n])):
            raise ValueError(f"db {n} out of order")
        self._db = n

    def _key_record(self, kind: int) -> None:
        key = self._blob()
        ks = self.dbs[self._db]
        if key in ks.data:
            raise ValueError(f"duplicate key {key!r}")
        if kind == TYPE_STREAM:
            self._stream_head(key)
            return
        if kind == TYPE_STRING:
            ks.set(key, self._blob(), self._when)
        elif kind == TYPE_LIST and self.version >= 4:
            items: deque[bytes] = deque()
            for _ in range(self._u32()):
                items.append(self._blob())
            ks.set(key, items, self._when)
        elif kind == TYPE_SET and self.version >= 4:
            ks.set(key, self._members(), self._when)
        else:
            raise ValueError(f"unknown record type {kind}")
        self._when = None

    def _members(self) -> set[bytes]:
        """A set record's count and members; a repeated member is a damaged snapshot."""
        count = self._u32()
        members = {self._blob() for _ in range(count)}
        if len(members) != count:
            raise ValueError("a set record repeats a member")
        return members

    def _stream_head(self, key: bytes) -> None:
        """A stream record's metadata; its nodes and tail are the next items."""
        meta_struct = META if self.version >= 2 else META_V1
        meta = list(meta_struct.unpack_from(self._take(meta_struct.size)))
        s = Stream()
        if self.version >= 2:
            s.max_trimmed_entry_id = StreamID.from_key(meta.pop(5))
        s.length, s.entries_added = meta[0], meta[1]
        s.last_id = StreamID.from_key(meta[2])
        s.first_id = StreamID.from_key(meta[3])
        s.max_deleted_entry_id = StreamID.from_key(meta[4])
        s.idmp_duration, s.idmp_maxsize, s.iids_added, s.iids_duplicates = meta[5:9]
        self._key, self._stream, self._prev, self._live = key, s, b"", 0
        self._nodes_left = meta[9]
        self._state = _NODES if self._nodes_left else _TAIL

    def _node(self) -> None:
        """One node of the stream being loaded: master ID, listpack, checked and inserted."""
        nkey = bytes(self._take(16))
        lp = bytes(self._take(self._u32()))  # bytes, as a full node is held (stream.py)
        if nkey <= self._prev:
            raise ValueError("node keys out of order")
        self._live += check_node(lp)
        self._stream.rax.insert(nkey, lp)
        self._prev = nkey
        self._nodes_left -= 1
        if not self._nodes_left:
            self._state = _TAIL

    def _tail(self) -> None:
        """The stream's groups and IDMP records; then the stream is its key's."""
        s = self._stream
        if self._live != s.length:
            raise ValueError(f"stream length {s.length} != live entries {self._live}")
        for table in (s.cgroups, s.cgroups_ref, s.idmp, s.idmp_order):
            table.clear()  # a try cut short by the end of the bytes fed left some
        self._groups(s)
        for _ in range(self._u32()):
            pid, iid = self._blob(), self._blob()
            s.idmp.setdefault(pid, {})[iid] = s.idmp_order[(pid, iid)] = self._id()
        if self.deep:
            check_stream(s)
        self.dbs[self._db].set(self._key, s, self._when)
        self._when = None
        self._stream = Stream()
        self._state = _TOP

    def _groups(self, s: Stream) -> None:
        for _ in range(self._u32()):
            name = self._blob()
            g = ConsumerGroup(name, self._id(), self._i64(), s.cgroups_ref)
            if name in s.cgroups:
                raise ValueError(f"duplicate group {name!r}")
            s.cgroups[name] = g
            for _ in range(self._u32()):
                cname = self._blob()
                seen, active = self._i64(), self._i64()
                if cname in g.consumers:
                    raise ValueError(f"duplicate consumer {cname!r}")
                g.create_consumer(cname, seen).active_time = active
            for _ in range(self._u32()):
                self._pending(g)
            order = [self._id() for _ in range(self._u32())]
            if set(order) != set(g.nacked) or len(order) != len(g.nacked):
                raise ValueError(f"group {name!r} NACK zone disagrees with its PEL")
            g.nacked = dict.fromkeys(order)

    def _pending(self, g: ConsumerGroup) -> None:
        entry_id, time, count = self._id(), self._i64(), self._i64()
        owner = None
        raw = bytes(self._take(4))  # NO_OWNER, or the length of the owner's name
        if raw != NO_OWNER:
            oname = bytes(self._take(int.from_bytes(raw, "big")))
            owner = g.consumers.get(oname)
            if owner is None:
                raise ValueError(f"PEL entry owned by unknown consumer {oname!r}")
        if entry_id in g.pel:
            raise ValueError(f"duplicate PEL entry {entry_id}")
        g.add_pending(entry_id, owner, time, count)

    def stream_of(self, data: bytes) -> Stream:
        """One stream record's body (metadata, nodes, tail) in this build's version, whole:
        COPY's deep copy. SnapshotError if it is not exactly one."""
        self.version = VERSION
        self._pieces, self._ahead = [memoryview(data)], len(data)
        try:
            self._stream_head(b"")
            while self._state == _NODES:
                self._node()
            self._tail()
        except (_Short, struct.error, ValueError, IndexError, AssertionError) as e:
            raise SnapshotError(f"stream record is invalid: {e!r}") from None
        value = self.dbs[self._db].data.get(b"")
        if self._ahead or not isinstance(value, Stream):
            raise SnapshotError("stream record is invalid: bytes after it")
        return value


def sum_size(version: int) -> int:
    """The length of the checksum that closes a snapshot of `version`."""
    return CRC_SIZE if version >= 5 else BLAKE2B_SIZE


def check_node(lp: bytes | bytearray) -> int:
    """Cheap structural checks of one node; returns its live count."""
    if len(lp) < lp_.HEADER_SIZE + 1 or lp_.total_bytes(lp) != len(lp) or lp[-1] != lp_.EOF_BYTE:
        raise ValueError("listpack header or end byte is wrong")
    live, deleted, _ = node.counts(lp)
    if live < 0 or deleted < 0 or live + deleted == 0:
        raise ValueError("node counters are invalid")
    return live


def _setting(name: bytes, raw: bytes) -> int:
    if name not in settings.SETTINGS:
        raise ValueError(f"unknown setting {name!r}")
    try:
        return settings.parse(name, raw)
    except StreamError as e:
        raise ValueError(f"setting {name!r}: {e.message}") from None
