"""A stream: a rax of listpack nodes (node.py) plus its metadata.

The rax is held flat (flatrax.py: sorted keys in one buffer, no Python object per tree node),
with rax.c's node counts for XINFO and MEMORY USAGE.

    rax key (master ID, 16 bytes BE)        value
    [ 1700000000000-0 ]  ------------------> listpack node (<= max-entries, < max-bytes)
    [ 1700000000050-3 ]  ------------------> listpack node
    ...                                      the tail node receives appends

Metadata (Redis's names): `length` live entries; `last_id` the last ID ever generated;
`first_id` the first live entry (0-0 when empty); `max_deleted_entry_id` the greatest ID
removed by XDEL-like deletions (never by trims); `max_trimmed_entry_id` (xstream's own, not
Redis's) the greatest live ID a trim ever removed, so a reader resuming after ID x knows that
entries after x were trimmed away iff x < max_trimmed_entry_id; `entries_added` every entry
ever appended.

Invariants (check_integrity verifies them): nodes are in ID order and never overlap; every
node's counters match its entries; `length` is the sum of live counters; `first_id` is the
first live entry. The tail cache (`_tail`) is derived state: the last node's key, listpack,
master ID and master fields, dropped whenever any node is removed.

Watches: a node serving one long read in slices (xstream's sliced reads) registers a `Watch`
in `watches` for the read's duration; every removal of entries (XDEL, trims) tells each watch
the IDs it removes, before removing them, so a read can tell that entries it has not reached
yet changed under it. Watches are not state: snapshots, digests and replicas ignore them.

Node limits are inputs to `append` only: replaying effects never depends on them, so engines
with different limits reach the same entries and metadata with different layouts. A tail that
fills up is copied to an exact-size buffer (Redis's lpShrinkToFit): bytearrays over-allocate
by up to 1/8 while they grow. That copy is `bytes` (one allocation, its header inline), so
the rax holds bytes for full nodes and a bytearray for the tail and for any node changed
since (XDEL, trims: `_writable` turns a full node back into a bytearray in place in the rax).
Readers take either.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final, Literal, Protocol

from . import node
from .encoded import EncodedWalk
from .flatrax import FlatRax
from .groups import ConsumerGroup
from .ids import MAX_ID, MIN_ID, StreamID
from .packed import PackedRun
from .reply import EncodedRun, EntryForm

LISTPACK_MAX_SIZE = 1 << 30  # STREAM_LISTPACK_MAX_SIZE: hard cap on one node
_MASK64: Final = (1 << 64) - 1
_SAME: Final = node.FLAG_SAMEFIELDS
_DELETED: Final = node.FLAG_DELETED

Entry = node.Entry  # field, value, field, value, ...
RangeItem = node.RangeItem  # [id, [field, value, ...]] as XRANGE replies
Policy = Literal["KEEPREF", "DELREF", "ACKED"]


class Watch(Protocol):
    def removing(self, lo: StreamID, hi: StreamID) -> None:
        """Entries with lo <= ID <= hi (some of them) are being removed."""


class Stream:
    __slots__ = (
        "_tail",
        "cgroups",
        "cgroups_ref",
        "entries_added",
        "first_id",
        "foreign_nodes",
        "idmp",
        "idmp_duration",
        "idmp_maxsize",
        "idmp_order",
        "iids_added",
        "iids_duplicates",
        "last_id",
        "length",
        "max_deleted_entry_id",
        "max_trimmed_entry_id",
        "rax",
        "watches",
    )

    def __init__(self, idmp_duration: int = 100, idmp_maxsize: int = 100) -> None:
        self.rax: FlatRax[bytes | bytearray] = FlatRax()  # nodes by master ID (flatrax.py)
        self.length = 0  # live entries
        self.last_id = MIN_ID  # last ID generated, 0-0 for a new stream
        self.first_id = MIN_ID  # first live entry, 0-0 when empty
        self.max_deleted_entry_id = MIN_ID  # greatest ID deleted by XDEL & co
        self.max_trimmed_entry_id = MIN_ID  # greatest live ID removed by a trim
        self.entries_added = 0  # entries ever appended
        self.cgroups: dict[bytes, ConsumerGroup] = {}  # consumer groups by name
        self.cgroups_ref: dict[StreamID, set[bytes]] = {}  # entry -> groups whose PEL has it
        self.idmp_duration = idmp_duration  # IDMP window, seconds (stream-idmp-duration)
        self.idmp_maxsize = idmp_maxsize  # IIDs kept per producer (stream-idmp-maxsize)
        self.iids_added = 0  # IDMP appends accepted
        self.iids_duplicates = 0  # IDMP appends answered from history
        self.idmp: dict[bytes, dict[bytes, StreamID]] = {}  # pid -> iid -> entry ID (idmp.py)
        self.idmp_order: dict[tuple[bytes, bytes], StreamID] = {}  # all records, oldest first
        self._tail: tuple[bytes, bytearray, StreamID, tuple[bytes, ...]] | None = None
        # Nodes built by another server (RESTORE): their sizes followed its limits, not ours.
        self.foreign_nodes = False
        # Reads in progress over this stream (a node's sliced reads): told of every removal.
        self.watches: list[Watch] = []

    # -- appending -----------------------------------------------------------------------

    def append(
        self,
        entry_id: StreamID,
        fv: list[bytes],
        max_bytes: int = 4096,
        max_entries: int = 100,
    ) -> None:
        """Append an entry (`fv`: field, value, ...) whose ID the caller checked is > last_id."""
        tail = self._tail
        if tail is None and self.rax:
            tail = self._load_tail()
        if tail is not None:
            key, lp, master_id, mfields = tail
            limit = max_bytes if 0 < max_bytes <= LISTPACK_MAX_SIZE else LISTPACK_MAX_SIZE
            live, deleted, _ = node.counts(lp)
            size = len(lp)  # Redis's room test: the node's bytes and the entry's elements'
            for x in fv:  # a loop, not sum(map(len, fv)): compiled, a tenth of its cost
                size += len(x)
            if size >= limit or (max_entries and live + deleted >= max_entries):
                # The tail is full: it will only shrink from now on. Copy it to an exact-size
                # buffer (Redis's lpShrinkToFit), dropping what growing over-allocated: as
                # bytes, one allocation with its header (a bytearray is a 64-byte object
                # beside its buffer: ~0.5 byte an entry); changed again only by _writable.
                self.rax.insert(key, bytes(lp))
                tail = None
        if tail is None:
            lp = node.create(entry_id, fv)
            key = entry_id.key()
            self.rax.insert(key, lp)
            self._tail = (key, lp, entry_id, tuple(fv[0::2]))
        else:
            same = node.same_fields(fv, mfields)
            node.append_entry(lp, live, entry_id, master_id, fv, same)
        self.length += 1
        self.entries_added += 1
        self.last_id = entry_id
        if self.length == 1:
            self.first_id = entry_id

    def append_many(
        self,
        first: StreamID,
        elements: list[bytes],
        bounds: list[int],
        max_bytes: int = 4096,
        max_entries: int = 100,
    ) -> None:
        """Append entry i = 0, 1, ..., the field/value elements elements[bounds[i] :
        bounds[i + 1]], with the IDs first, first + 1, ... (what repeated `XADD *` yields
        within one millisecond; what XAPPEND replays), leaving the same bytes as `append`
        called once per entry. The caller checked first > last_id, that the last ID fits,
        and each entry's arity.
        """
        limit = max_bytes if 0 < max_bytes <= LISTPACK_MAX_SIZE else LISTPACK_MAX_SIZE
        idv = first.ms << 64 | first.seq
        i = 0
        n = len(bounds) - 1
        start_length = self.length
        while i < n:
            tail = self._tail
            if tail is None and self.rax:
                tail = self._load_tail()
            if tail is not None:
                eid = StreamID(idv >> 64, idv & _MASK64)
                j = node.append_run(
                    tail[1], tail[2], tail[3], elements, bounds, i, eid, limit, max_entries
                )
                self.length += j - i
                self.entries_added += j - i
                idv += j - i
                i = j
                if i == n:
                    break
            # a new node, or other fields than the master's: the general path (which counts)
            a, b = bounds[i], bounds[i + 1]
            self.append(StreamID(idv >> 64, idv & _MASK64), elements[a:b], max_bytes, max_entries)
            idv += 1
            i += 1
        if n:
            self.last_id = StreamID((idv - 1) >> 64, (idv - 1) & _MASK64)
            if not start_length:
                self.first_id = first

    def append_entries(
        self,
        elements: list[bytes],
        bounds: list[int],
        ids: list[StreamID],
        max_bytes: int = 4096,
        max_entries: int = 100,
        first: StreamID = MIN_ID,
    ) -> None:
        """Append entry k = 0, 1, ... with the ID ids[k], or with `ids` empty first + k (an
        XAPPEND's IDs: the caller checked that the seq does not carry), and the field/value
        elements elements[bounds[k] : bounds[k + 1]] (what replaying explicit-ID XADDs, or an
        XAPPEND, does), leaving the same bytes as `append` called once per entry: one listpack
        write per node. The caller checked that the IDs ascend from above last_id and each
        entry's arity and size."""
        limit = max_bytes if 0 < max_bytes <= LISTPACK_MAX_SIZE else LISTPACK_MAX_SIZE
        n = len(bounds) - 1
        ms, seq = first.ms, first.seq
        start_length = self.length
        i = 0
        while i < n:
            tail = self._tail
            if tail is None and self.rax:
                tail = self._load_tail()
            if tail is not None:
                j = node.append_entries(
                    tail[1], tail[2], tail[3], elements, bounds, ids, i, limit, max_entries,
                    ms, seq,
                )  # fmt: skip
                self.length += j - i
                self.entries_added += j - i
                i = j
                if i == n:
                    break
            # the tail is full (or there is none): the general path opens the next node
            eid = ids[i] if ids else StreamID(ms, seq + i)
            self.append(eid, elements[bounds[i] : bounds[i + 1]], max_bytes, max_entries)
            i += 1
        if n:
            self.last_id = ids[n - 1] if ids else StreamID(ms, seq + n - 1)
            if not start_length:
                self.first_id = ids[0] if ids else first

    def append_packed(
        self, run: PackedRun, first: StreamID, max_bytes: int = 4096, max_entries: int = 100
    ) -> None:
        """append_entries of an XAPPEND read in place (packed.py): entry k of `run` with the
        ID first + k (the caller checked that the seq does not carry, that first > last_id
        and each entry's arity and size), the same bytes, one listpack write per node."""
        limit = max_bytes if 0 < max_bytes <= LISTPACK_MAX_SIZE else LISTPACK_MAX_SIZE
        n = len(run.counts)
        ms, seq = first.ms, first.seq
        start_length = self.length
        while run.k < n:
            tail = self._tail
            if tail is None and self.rax:
                tail = self._load_tail()
            if tail is not None:
                i = run.k
                j = node.append_packed(
                    tail[1], tail[2], tail[3], run, limit, max_entries, ms, seq
                )  # fmt: skip
                self.length += j - i
                self.entries_added += j - i
                if j == n:
                    break
            # the tail is full (or there is none): the general path opens the next node
            eid = StreamID(ms, seq + run.k)
            self.append(eid, run.take(), max_bytes, max_entries)
        if n:
            self.last_id = StreamID(ms, seq + n - 1)
            if not start_length:
                self.first_id = first

    def _load_tail(self) -> tuple[bytes, bytearray, StreamID, tuple[bytes, ...]] | None:
        last = self.rax.last()
        if last is None:
            return None
        key, lp = last
        w = self._writable(key, lp)  # (a full node: appended to if the limits grew since)
        self._tail = (key, w, StreamID.from_key(key), node.master_fields(w)[0])
        return self._tail

    # -- reading -------------------------------------------------------------------------

    def range(
        self,
        start: StreamID,
        end: StreamID,
        count: int = 0,
        rev: bool = False,
        ids: list[StreamID] | None = None,
    ) -> list[RangeItem]:
        """Live entries with start <= id <= end as XRANGE replies them; count 0 = all. Their
        IDs go to `ids` too, if given (forward only)."""
        out: list[RangeItem] = []
        if start > end or not self.length:
            return out
        if not rev:
            for key, lp in self._nodes_from(start):
                master = StreamID.from_key(key)
                if master > end or node.collect(lp, master, start, end, out, count, ids):
                    break
        else:
            assert ids is None, "Stream.range gives IDs forward only"
            for key, lp in self._nodes_back_from(end):
                tmp: list[RangeItem] = []
                node.collect(lp, StreamID.from_key(key), start, end, tmp, 0)
                tmp.reverse()
                room = count - len(out) if count else len(tmp)
                out.extend(tmp[:room])
                if (count and len(out) >= count) or StreamID.from_key(key) <= start:
                    break
        return out

    def range_encoded(
        self, start: StreamID, end: StreamID, count: int, form: EntryForm
    ) -> EncodedRun:
        """`range` forward, written in an edge's wire form `form` (encoded.py)."""
        walk = EncodedWalk(form, count)
        if start <= end and self.length:
            for key, lp in self._nodes_from(start):
                master = StreamID.from_key(key)
                if master > end or walk.node(lp, master, start, end):
                    break
        return walk.finish()

    def _nodes_from(self, start: StreamID) -> Iterator[tuple[bytes, bytes | bytearray]]:
        """Nodes that may hold IDs >= start, in order (Redis's forward iterator seek)."""
        it = self.rax.seek("<=", start.key()) if start != MIN_ID else self.rax.seek("^")
        item = it.next()
        if item is None:
            it = self.rax.seek("^")
            item = it.next()
        while item is not None:
            yield item
            item = it.next()

    def _nodes_back_from(self, end: StreamID) -> Iterator[tuple[bytes, bytes | bytearray]]:
        it = self.rax.seek("<=", end.key()) if end != MAX_ID else self.rax.seek("$")
        item = it.prev()
        while item is not None:
            yield item
            item = it.prev()

    def get(self, entry_id: StreamID) -> Entry | None:
        """The fields of a live entry, or None."""
        found = self.range(entry_id, entry_id, 1)
        return found[0][1] if found else None  # type: ignore[return-value]

    def edge_id(self, first: bool, skip_tombstones: bool = True) -> StreamID:
        """First or last entry ID (MAX/MIN when there is none), as streamGetEdgeID."""
        if not first and skip_tombstones:  # the last live entry: walk back from the end
            for key, lp in self.rax.reversed_items():
                found = node.last_live_id(lp, StreamID.from_key(key))
                if found is not None:
                    return found
            return MIN_ID
        nodes = self.rax.items() if first else self.rax.reversed_items()
        for key, lp in nodes:
            entries = node.scan(lp, StreamID.from_key(key))
            if not first:
                entries.reverse()
            for _, flags, eid in entries:
                if not (skip_tombstones and flags & _DELETED):
                    return eid
        return MAX_ID if first else MIN_ID

    def nodes(self) -> Iterator[tuple[bytes, bytes | bytearray]]:
        return self.rax.items()

    # -- deleting ------------------------------------------------------------------------

    def delete(self, entry_id: StreamID) -> bool:
        """Tombstone one live entry (XDEL); frees its node when it was the last live one."""
        key = entry_id.key()
        item = self.rax.seek("<=", key).next()
        if item is None:
            return False
        nkey, lp = item
        for pos, flags, eid in node.scan(lp, StreamID.from_key(nkey)):
            if eid == entry_id:
                if flags & _DELETED:
                    return False
                self._tell_watches(entry_id, entry_id)
                self._tombstone(nkey, lp, pos, flags)
                return True
            if eid > entry_id:
                break
        return False

    def _tombstone(self, key: bytes, lp: bytes | bytearray, pos: int, flags: int) -> None:
        live, deleted, _ = node.counts(lp)
        if live == 1:
            self._remove_node(key)
        else:
            w = self._writable(key, lp)
            node.mark_deleted(w, pos, flags)
            node.set_counts(w, live - 1, deleted + 1)
        self.length -= 1

    def _writable(self, key: bytes, lp: bytes | bytearray) -> bytearray:
        """The node at `key` as a buffer changed in place: a full node is held as bytes
        (Stream.append), so its first change makes it a bytearray again, in the rax."""
        if isinstance(lp, bytearray):
            return lp
        w = bytearray(lp)
        self.rax.insert(key, w)
        return w

    def _remove_node(self, key: bytes) -> None:
        self.rax.remove(key)
        self._tail = None

    def refresh_first_id(self) -> None:
        self.first_id = self.edge_id(True) if self.length else MIN_ID

    # -- trimming ------------------------------------------------------------------------

    def trim(
        self,
        maxlen: int | None,
        minid: StreamID | None,
        approx: bool,
        limit: int,
        policy: Policy = "KEEPREF",
        referenced: Callable[[StreamID], bool] | None = None,
        on_delete: Callable[[StreamID], object] | None = None,
    ) -> tuple[int, StreamID | None]:
        """Trim from the head as streamTrim does. Returns (entries removed, stop-node first ID).

        KEEPREF frees whole nodes while the rule allows; `approx` then stops, exact mode
        tombstones entries of the next node. DELREF/ACKED visit entries one by one even when
        approximate; ACKED keeps entries `referenced` says a group still needs. `limit`
        (0 = none) stops before a node whose live entries would exceed it. The second result
        is the first ID (tombstones included) of the node where a LIMIT stop happened.
        """
        if maxlen is None and minid is None:
            return 0, None
        removed = 0
        it = self.rax.seek("^")
        item = it.next()
        while item is not None:
            if maxlen is not None and self.length <= maxlen:
                break
            key, lp = item
            master = StreamID.from_key(key)
            live, _, _ = node.counts(lp)
            if limit and removed + live > limit:
                self._after_trim(removed)
                return removed, node.first_id(lp, master)
            if policy == "KEEPREF":
                if maxlen is not None:
                    whole = self.length - live >= maxlen
                else:
                    assert minid is not None
                    whole = node.last_id(lp, master) < minid
                if whole:
                    last_live = node.last_live_id(lp, master)
                    self._trimmed(last_live)
                    self._tell_watches(master, last_live or master)
                    self._remove_node(key)
                    self.length -= live
                    removed += live
                    it = self.rax.seek(">=", key)
                    item = it.next()
                    continue
                if approx:
                    break
            done, n, freed = self._trim_entries(
                key, lp, master, maxlen, minid, policy, referenced, on_delete
            )
            removed += n
            if done:
                break
            if freed:
                it = self.rax.seek(">=", key)
            item = it.next()
        self._after_trim(removed)
        return removed, None

    def _trim_entries(
        self,
        key: bytes,
        lp: bytes | bytearray,
        master: StreamID,
        maxlen: int | None,
        minid: StreamID | None,
        policy: Policy,
        referenced: Callable[[StreamID], bool] | None,
        on_delete: Callable[[StreamID], object] | None,
    ) -> tuple[bool, int, bool]:
        """Tombstone entries inside one node. Returns (trim finished, removed, node freed)."""
        live, deleted, _ = node.counts(lp)
        removed = 0
        done = False
        for pos, flags, eid in node.scan(lp, master):
            if maxlen is not None:
                if self.length <= maxlen:
                    done = True
                    break
            else:
                assert minid is not None
                if eid >= minid:
                    done = True
                    break
            if flags & _DELETED:
                continue
            if policy == "ACKED" and referenced is not None and referenced(eid):
                continue
            if on_delete is not None:
                on_delete(eid)
            self._trimmed(eid)
            self._tell_watches(eid, eid)
            lp = self._writable(key, lp)  # (the same node: its positions hold)
            node.mark_deleted(lp, pos, flags)
            removed += 1
            self.length -= 1
        if policy == "KEEPREF":
            done = True  # exact KEEPREF trims touch a single node, as Redis does
        if removed:
            if policy != "KEEPREF" and live == removed:
                self._remove_node(key)
                return done, removed, True
            node.set_counts(self._writable(key, lp), live - removed, deleted + removed)
        return done, removed, False

    def _tell_watches(self, lo: StreamID, hi: StreamID) -> None:
        """Entries between lo and hi (a bound, not exact) are being removed."""
        for watch in self.watches:
            watch.removing(lo, hi)

    def _trimmed(self, entry_id: StreamID | None) -> None:
        if entry_id is not None and entry_id > self.max_trimmed_entry_id:
            self.max_trimmed_entry_id = entry_id

    def _after_trim(self, removed: int) -> None:
        if removed:
            self.refresh_first_id()
