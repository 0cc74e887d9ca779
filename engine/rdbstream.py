"""A stream in RDB (rdbSaveObject / rdbLoadObject for OBJ_STREAM), types 15 to 27.

    nodes <len> x ( master ID <string: 16 bytes BE> | listpack <string: its bytes as they are> )
    length <len> | last_id ms <len> seq <len>
    [19+] first_id ms seq | max_deleted_entry_id ms seq | entries_added      (all <len>)
    groups <len> x (
        name <string> | last_id ms <len> seq <len> | [19+] entries_read <len, -1 as 2**64-1>
        PEL <len> x ( ID <16 raw bytes BE> | delivery_time <millis> | delivery_count <len> )
        consumers <len> x ( name <string> | seen_time <millis> | [21+] active_time <millis> |
                            PEL <len> x ID <16 raw bytes> )
        [27+] NACK zone <len> x ID <16 raw bytes>          (XNACK's released entries, in order)
    )
    [26+] idmp_duration <len> | idmp_maxsize <len> |
          producers <len> x ( pid <string> |
                              records <len> x ( iid <string> | ms <len> | seq <len> ) )
          iids_added <len> | iids_duplicates <len>

    type 15 STREAM_LISTPACKS    Redis 5.0 - 6.2      type 26 _4   8.6 (IDMP)
    type 19 STREAM_LISTPACKS_2  7.0                  type 27 _5   8.8 (XNACK's NACK zone)
    type 21 STREAM_LISTPACKS_3  7.2 - 8.4 (active_time)

Groups, consumers and producers are written in name order (Redis's raxes), PELs in ID order.
What an older type lacks is filled in as Redis's loader does: entries_added = length,
max_deleted_entry_id 0-0, first_id the first live entry, each group's entries_read estimated
(streamEstimateDistanceFromFirstEverEntry), active_time = seen_time, the IDMP settings at their
defaults. IDMP records whose window has ended are left out on both sides, as Redis does.

`max_trimmed_entry_id` is xstream's own and RDB has no room for it: a loaded stream takes the
conservative bound, the ID just before its first entry (its last ID when empty) if any entry
was ever removed, so a resuming reader is never told nothing was trimmed when something was.

Loading checks what Redis's deep sanitization checks (every node's listpack, entry by entry;
PEL ownership; the NACK zone), and then the engine's own invariants (check_stream), so a value
that loads is one the engine can hold. Any failure raises RdbError.
"""

from __future__ import annotations

from typing import Final

from . import listpack as lp_
from .digest import check_stream
from .groups import ConsumerGroup
from .ids import MIN_ID, StreamID
from .lag import estimate_distance
from .node import FLAG_DELETED, FLAG_SAMEFIELDS
from .rdbio import RdbError, Reader, Writer, as_int64, as_uint64
from .stream import Stream

TYPE_STREAM_LISTPACKS: Final = 15
TYPE_STREAM_LISTPACKS_2: Final = 19
TYPE_STREAM_LISTPACKS_3: Final = 21
TYPE_STREAM_LISTPACKS_4: Final = 26
TYPE_STREAM_LISTPACKS_5: Final = 27
STREAM_TYPES: Final = frozenset((15, 19, 21, 26, 27))
IDMP_DURATION_RANGE: Final = (1, 86400)  # CONFIG_STREAM_IDMP_MIN/MAX_DURATION, seconds
IDMP_MAXSIZE_RANGE: Final = (1, 10000)  # CONFIG_STREAM_IDMP_MIN/MAX_MAXSIZE

# -- saving ----------------------------------------------------------------------------------


def save(w: Writer, s: Stream, now_ms: int) -> None:
    """The stream as Redis 8.8 saves it (type 27)."""
    w.length(len(s.rax))
    for key, lp in s.nodes():
        w.string(key)
        w.string(bytes(lp))
    w.length(s.length)
    for i in (s.last_id, s.first_id, s.max_deleted_entry_id):
        _id(w, i)
    w.length(s.entries_added)
    w.length(len(s.cgroups))
    for name in sorted(s.cgroups):
        _save_group(w, s.cgroups[name])
    w.length(s.idmp_duration)
    w.length(s.idmp_maxsize)
    _save_idmp(w, s, now_ms)
    w.length(s.iids_added)
    w.length(s.iids_duplicates)


def _id(w: Writer, i: StreamID) -> None:
    w.length(i.ms)
    w.length(i.seq)


def _save_group(w: Writer, g: ConsumerGroup) -> None:
    w.string(g.name)
    _id(w, g.last_id)
    w.length(as_uint64(g.entries_read))
    w.length(len(g.pel))
    for entry_id, nack in g.pel.items():
        w.raw(entry_id.key())
        w.millis(nack.delivery_time)
        w.length(as_uint64(nack.delivery_count))
    w.length(len(g.consumers))
    for cname in sorted(g.consumers):
        c = g.consumers[cname]
        w.string(cname)
        w.millis(c.seen_time)
        w.millis(c.active_time)
        w.length(len(c.pel))
        for entry_id, _ in c.pel.items():
            w.raw(entry_id.key())
    w.length(len(g.nacked))
    for entry_id in g.nacked:
        w.raw(entry_id.key())


def _save_idmp(w: Writer, s: Stream, now_ms: int) -> None:
    """rdbSaveStreamIdmpEntries: each producer's records from its first one still in its
    window (a producer whose records all ended is written with none)."""
    window = s.idmp_duration * 1000
    w.length(len(s.idmp))
    for pid in sorted(s.idmp):
        records = list(s.idmp[pid].items())
        first = 0
        while first < len(records) and records[first][1].ms + window <= now_ms:
            first += 1
        w.string(pid)
        w.length(len(records) - first)
        for iid, entry_id in records[first:]:
            w.string(iid)
            _id(w, entry_id)


# -- loading ---------------------------------------------------------------------------------


def load(r: Reader, kind: int, now_ms: int | None) -> tuple[Stream, bool]:
    """A stream of RDB type `kind`; (stream, whether expired IDMP records were left out)."""
    s = Stream()
    s.foreign_nodes = True
    live = _load_nodes(r, s)
    s.length = r.length()
    s.last_id = _read_id(r)
    if kind >= TYPE_STREAM_LISTPACKS_2:
        s.first_id = _read_id(r)
        s.max_deleted_entry_id = _read_id(r)
        s.entries_added = r.length()
    else:
        s.entries_added = s.length
        s.first_id = s.edge_id(True) if s.length else MIN_ID  # Redis: UINT64_MAX-... if empty
    if s.length != live:
        raise RdbError("stream length inconsistent with live entries")
    for _ in range(r.length()):
        _load_group(r, s, kind)
    dropped = False
    if kind >= TYPE_STREAM_LISTPACKS_4:
        dropped = _load_idmp(r, s, now_ms)
    _estimate_max_trimmed(s)
    try:
        check_stream(s)
    except AssertionError as e:
        raise RdbError(f"stream invariant broken: {e}") from None
    return s, dropped


def _read_id(r: Reader) -> StreamID:
    ms = r.length()
    return StreamID(ms, r.length())


def _load_nodes(r: Reader, s: Stream) -> int:
    """The rax of listpacks; returns the sum of the nodes' live counters."""
    live_total = 0
    for _ in range(r.length()):
        key = r.string()
        if len(key) != 16:
            raise RdbError("stream node key entry is not the size of a stream ID")
        lp = r.string()  # bytes, as a full node is held (stream.py)
        live = check_node(lp)
        if s.rax.find(key) is not None:
            raise RdbError("listpack re-added with existing key")
        s.rax.insert(key, lp)
        live_total += live
    return live_total


def check_node(lp: bytes | bytearray) -> int:
    """streamValidateListpackIntegrity (deep) and the loader's `lp_live > 0`; the live count."""
    try:
        lp_.validate(lp)
        els = lp_.decode_all(lp)
    except (ValueError, IndexError) as e:
        raise RdbError(f"stream listpack integrity check failed: {e}") from None
    walk = _Walk(els)
    live = walk.integer()
    deleted = walk.integer()
    master_fields = walk.integer()
    if live <= 0 or deleted < 0 or master_fields < 0:
        raise RdbError("stream listpack bad entry count")
    walk.skip(master_fields)
    if walk.integer() != 0:
        raise RdbError("stream listpack master entry not terminated by 0")
    tombstones = 0
    for _ in range(live + deleted):
        flags = walk.integer()
        tombstones += bool(flags & FLAG_DELETED)
        walk.integer()  # ms-diff
        walk.integer()  # seq-diff
        fields, extra = master_fields, 3
        if not flags & FLAG_SAMEFIELDS:
            fields = walk.integer()
            if fields < 0:
                raise RdbError("stream listpack entry with a negative field count")
            walk.skip(fields)
            extra += fields + 1
        walk.skip(fields)
        if walk.integer() != fields + extra:
            raise RdbError("stream listpack entry lp-count is wrong")
    if tombstones != deleted or walk.i != len(els):
        raise RdbError("stream listpack deleted count or length is wrong")
    return live


class _Walk:
    __slots__ = ("els", "i")

    def __init__(self, els: list[lp_.Element]) -> None:
        self.els = els
        self.i = 0

    def integer(self) -> int:
        if self.i >= len(self.els):
            raise RdbError("stream listpack ends inside an entry")
        v = self.els[self.i]
        self.i += 1
        if not isinstance(v, int):
            raise RdbError("stream listpack holds a string where an integer belongs")
        return v

    def skip(self, n: int) -> None:
        self.i += n
        if self.i > len(self.els):
            raise RdbError("stream listpack ends inside an entry")


def _load_group(r: Reader, s: Stream, kind: int) -> None:
    name = r.string()
    last_id = _read_id(r)
    if kind >= TYPE_STREAM_LISTPACKS_2:
        entries_read = as_int64(r.length())
    else:
        entries_read = estimate_distance(s, last_id)
    if name in s.cgroups:
        raise RdbError(f"duplicated consumer group name {name!r}")
    g = ConsumerGroup(name, last_id, entries_read, s.cgroups_ref)
    s.cgroups[name] = g
    pel: dict[StreamID, tuple[int, int]] = {}  # ID -> (delivery time, count), owners next
    for _ in range(r.length()):
        entry_id = StreamID.from_key(r.raw(16))
        time = r.millis()
        count = as_int64(r.length())
        if entry_id in pel:
            raise RdbError("duplicated global PEL entry loading stream consumer group")
        pel[entry_id] = (time, count)
    owners: dict[StreamID, bytes] = {}
    for _ in range(r.length()):
        _load_consumer(r, g, kind, pel, owners)
    nacked: list[StreamID] = []
    if kind >= TYPE_STREAM_LISTPACKS_5:
        for _ in range(r.length()):
            entry_id = StreamID.from_key(r.raw(16))
            if entry_id not in pel:
                raise RdbError("stream NACK zone entry not found in group global PEL")
            if entry_id in owners:
                raise RdbError("stream NACK zone entry has a consumer assigned")
            nacked.append(entry_id)
    if len(set(nacked)) != len(nacked) or len(nacked) + len(owners) != len(pel):
        raise RdbError("stream CG PEL entry without consumer outside NACK zone")
    for entry_id in sorted(pel):
        time, count = pel[entry_id]
        owner = owners.get(entry_id)
        g.add_pending(entry_id, None if owner is None else g.consumers[owner], time, count)
    g.nacked = dict.fromkeys(nacked)


def _load_consumer(
    r: Reader,
    g: ConsumerGroup,
    kind: int,
    pel: dict[StreamID, tuple[int, int]],
    owners: dict[StreamID, bytes],
) -> None:
    cname = r.string()
    if cname in g.consumers:
        raise RdbError("duplicate stream consumer detected")
    seen = r.millis()
    active = r.millis() if kind >= TYPE_STREAM_LISTPACKS_3 else seen
    g.create_consumer(cname, seen).active_time = active
    for _ in range(r.length()):
        entry_id = StreamID.from_key(r.raw(16))
        if entry_id not in pel:
            raise RdbError("consumer entry not found in group global PEL")
        if entry_id in owners:
            raise RdbError("stream consumer PEL entry already has a consumer assigned")
        owners[entry_id] = cname


def _load_idmp(r: Reader, s: Stream, now_ms: int | None) -> bool:
    """IDMP settings, records (rdbLoadStreamIdmpEntries) and counters; True if expired
    records were left out."""
    s.idmp_duration = r.length()
    if not IDMP_DURATION_RANGE[0] <= s.idmp_duration <= IDMP_DURATION_RANGE[1]:
        raise RdbError("stream IDMP duration out of range")
    s.idmp_maxsize = r.length()
    if not IDMP_MAXSIZE_RANGE[0] <= s.idmp_maxsize <= IDMP_MAXSIZE_RANGE[1]:
        raise RdbError("stream IDMP max entries out of range")
    window = s.idmp_duration * 1000
    dropped = False
    for _ in range(r.length()):
        pid = r.string()
        count = r.length()
        if count and pid in s.idmp:
            raise RdbError(f"duplicated IDMP producer {pid!r}")
        records: dict[bytes, StreamID] = {}
        for _ in range(count):
            iid = r.string()
            entry_id = _read_id(r)
            if now_ms is not None and entry_id.ms + window <= now_ms:
                dropped = True
            elif iid not in records:  # Redis skips a duplicate IID
                records[iid] = entry_id
        if records:
            s.idmp[pid] = records
    ordered = sorted(
        ((pid, iid, eid) for pid, recs in s.idmp.items() for iid, eid in recs.items()),
        key=lambda rec: rec[2],
    )
    s.idmp_order = {(pid, iid): eid for pid, iid, eid in ordered}
    s.iids_added = r.length()
    s.iids_duplicates = r.length()
    return dropped


def _estimate_max_trimmed(s: Stream) -> None:
    if s.entries_added > s.length:  # something was removed, perhaps by a trim
        before = s.first_id.decr() if s.length else s.last_id
        s.max_trimmed_entry_id = before or MIN_ID
