"""Consumer groups: groups, consumers, and their pending entries lists (PELs).

    Stream.cgroups: name -> ConsumerGroup
        last_id        last ID delivered to the group (">" reads start after it)
        entries_read   logical read counter, -1 when unknown (lag then estimated)
        pel            Pel: ID -> Nack, every entry delivered and not yet acknowledged
        consumers      name -> Consumer
            seen_time    last time the consumer attempted an interaction (ms)
            active_time  last time it was delivered/claimed something, -1 never
            pel          Pel: the subset of the group PEL it owns (the same Nack objects)
        by_time()      (delivery_time, ID) of the owned pending entries, oldest delivery
                       first and, within one millisecond, in the order they were timed (as
                       Redis's pel_time list: an entry delivered again goes after every other
                       of its time): the order in which XREADGROUP CLAIM scans for idle
                       entries. Kept as time_key()s, delivery_time * 2**64 + the group's
                       count of timings so far (ints compare in C), each mapped to its ID;
                       a loaded group is timed in ID order, as Redis's RDB load does
        nacked         IDs released by XNACK (owner None), in release order: the "NACK zone"
                       that XREADGROUP CLAIM serves first
    Nack: delivery_time (ms), delivery_count, consumer (None once released by XNACK)
    Stream.cgroups_ref: ID -> set of group names whose PEL holds it

Invariants (check_groups verifies them): a Nack is in its owner's PEL iff it is in the group
PEL and owned by that consumer; cgroups_ref has exactly the IDs held by some group PEL, with
exactly those groups; `nacked` holds exactly the unowned PEL entries and `by_time()`
exactly the owned ones. All mutation of PELs
goes through ConsumerGroup methods, which keep these structures in step.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from .ids import StreamID
from .sortedkeys import SortedKeys

INVALID_ENTRIES_READ: Final = -1


def time_key(time: int, timed: int) -> int:
    """(time, timing number) as one int in the same order: time * 2**64 + timed (a negative
    time too: the number fills the low 64 bits that the shift left zero)."""
    return time << 64 | timed


class Nack:
    __slots__ = ("consumer", "delivery_count", "delivery_time", "time_key")

    def __init__(self, consumer: Consumer | None, delivery_time: int, delivery_count: int) -> None:
        self.consumer = consumer  # owner; None when released (XNACK)
        self.delivery_time = delivery_time  # unix ms of the last delivery
        self.time_key = 0  # its key in the group's by_time() while owned
        self.delivery_count = delivery_count  # times delivered


class Pel:
    """A PEL: IDs in order (SortedKeys, O(log n) as Redis's rax) with their Nacks (a dict)."""

    __slots__ = ("_ids", "_map")

    def __init__(self) -> None:
        self._ids: SortedKeys[StreamID] = SortedKeys()
        self._map: dict[StreamID, Nack] = {}

    def __len__(self) -> int:
        return len(self._map)

    def __contains__(self, entry_id: StreamID) -> bool:
        return entry_id in self._map

    def get(self, entry_id: StreamID) -> Nack | None:
        return self._map.get(entry_id)

    def add(self, entry_id: StreamID, nack: Nack) -> None:
        assert entry_id not in self._map
        self._ids.add(entry_id)
        self._map[entry_id] = nack

    def remove(self, entry_id: StreamID) -> Nack | None:
        nack = self._map.pop(entry_id, None)
        if nack is not None:
            self._ids.remove(entry_id)
        return nack

    def first(self) -> StreamID | None:
        return self._ids.first()

    def last(self) -> StreamID | None:
        return self._ids.last()

    def range(
        self, start: StreamID, end: StreamID, count: int = 0
    ) -> Iterator[tuple[StreamID, Nack]]:
        """Entries with start <= id <= end in ID order, at most `count` (0 = all), lazily: the
        PEL must not change until the iteration ends (list() it first to change it)."""
        for n, entry_id in enumerate(self._ids.since(start), start=1):
            if entry_id > end:
                return
            yield entry_id, self._map[entry_id]
            if n == count:
                return

    def after(self, entry_id: StreamID) -> Iterator[tuple[StreamID, Nack]]:
        """Entries with id > entry_id, in order, lazily (as range)."""
        for later in self._ids.since(entry_id, inclusive=False):
            yield later, self._map[later]

    def items(self) -> Iterator[tuple[StreamID, Nack]]:
        """Every entry in ID order, taken at the call (the PEL may change meanwhile)."""
        m = self._map
        return iter([(entry_id, m[entry_id]) for entry_id in self._ids])

    def check(self, what: str) -> None:
        self._ids.check()
        assert list(self._ids) == sorted(self._map), f"{what} PEL out of order"


class Consumer:
    __slots__ = ("active_time", "name", "pel", "seen_time")

    def __init__(self, name: bytes, seen_time: int, active_time: int = -1) -> None:
        self.name = name
        self.seen_time = seen_time  # ms of the last interaction attempt
        self.active_time = active_time  # ms of the last delivery or claim; -1 = never
        self.pel = Pel()


class ConsumerGroup:
    __slots__ = (
        "_by_time",
        "_timed",
        "_timings",
        "consumers",
        "entries_read",
        "last_id",
        "nacked",
        "name",
        "pel",
        "refs",
    )

    def __init__(
        self,
        name: bytes,
        last_id: StreamID,
        entries_read: int,
        refs: dict[StreamID, set[bytes]],
    ) -> None:
        self.name = name
        self.last_id = last_id  # last delivered ID
        self.entries_read = entries_read  # logical reads counter, -1 = unknown
        self.pel = Pel()  # every pending entry of the group
        self.consumers: dict[bytes, Consumer] = {}
        self.nacked: dict[StreamID, None] = {}  # unowned PEL entries, in release order
        self._by_time: SortedKeys[int] = SortedKeys()  # time_key()s of the owned entries
        self._timed: dict[int, StreamID] = {}  # each of those keys' entry
        self._timings = 0  # entries timed so far: the next key's low 64 bits
        self.refs = refs  # the stream's cgroups_ref, shared by all its groups

    def consumer(self, name: bytes) -> Consumer | None:
        return self.consumers.get(name)

    def create_consumer(self, name: bytes, seen_time: int) -> Consumer:
        assert name not in self.consumers
        c = Consumer(name, seen_time)
        self.consumers[name] = c
        return c

    def delete_consumer(self, name: bytes) -> int:
        """Drop a consumer and its pending entries; returns how many it had."""
        c = self.consumers.pop(name)
        pending = len(c.pel)
        for entry_id, nack in c.pel.items():
            self.pel.remove(entry_id)
            self._untime(entry_id, nack)
            self._unref(entry_id)
        return pending

    def add_pending(
        self, entry_id: StreamID, consumer: Consumer | None, time: int, count: int
    ) -> Nack:
        nack = Nack(consumer, time, count)
        self.pel.add(entry_id, nack)
        if consumer is not None:
            consumer.pel.add(entry_id, nack)
            self._time(entry_id, nack)
        else:
            self.nacked[entry_id] = None
        holders = self.refs.get(entry_id)
        if holders is None:
            self.refs[entry_id] = {self.name}
        else:
            holders.add(self.name)
        return nack

    def remove_pending(self, entry_id: StreamID) -> Nack | None:
        nack = self.pel.remove(entry_id)
        if nack is None:
            return None
        if nack.consumer is not None:
            nack.consumer.pel.remove(entry_id)
            self._untime(entry_id, nack)
        else:
            del self.nacked[entry_id]
        self._unref(entry_id)
        return nack

    def assign(self, entry_id: StreamID, nack: Nack, consumer: Consumer | None) -> None:
        """Move a pending entry to another owner (or to none). Between two owners it keeps
        its place in by_time() (Redis's list is the group's, whoever owns the entry)."""
        if nack.consumer is consumer:
            return
        if nack.consumer is not None:
            nack.consumer.pel.remove(entry_id)
            if consumer is None:
                self._untime(entry_id, nack)
        else:
            del self.nacked[entry_id]
            if consumer is not None:
                self._time(entry_id, nack)
        nack.consumer = consumer
        if consumer is not None:
            consumer.pel.add(entry_id, nack)
        else:
            self.nacked[entry_id] = None

    def deliver(self, entry_id: StreamID, nack: Nack, time: int) -> None:
        """Set a pending entry's delivery time: an owned one goes after every entry timed
        at or before `time` in by_time()."""
        nack.delivery_time = time
        if nack.consumer is not None:
            self._untime(entry_id, nack)
            self._time(entry_id, nack)

    def _time(self, entry_id: StreamID, nack: Nack) -> None:
        key = time_key(nack.delivery_time, self._timings)
        self._timings += 1
        nack.time_key = key
        self._by_time.add(key)
        self._timed[key] = entry_id

    def _untime(self, entry_id: StreamID, nack: Nack) -> None:
        self._by_time.remove(nack.time_key)
        del self._timed[nack.time_key]

    def by_time(self) -> Iterator[tuple[int, StreamID]]:
        """(delivery_time, ID) of the owned pending entries, oldest delivery first, lazily:
        the group must not change until the iteration ends."""
        timed = self._timed
        for k in self._by_time:
            yield k >> 64, timed[k]

    def release(self, entry_id: StreamID, nack: Nack) -> None:
        """XNACK: the entry loses its owner and goes to the back of the NACK zone."""
        self.assign(entry_id, nack, None)
        self.nacked.pop(entry_id, None)
        self.nacked[entry_id] = None
        nack.delivery_time = 0

    def forget(self) -> None:
        """Release every reference this group holds (the group is being destroyed)."""
        for entry_id, _ in self.pel.items():
            self._unref(entry_id)

    def _unref(self, entry_id: StreamID) -> None:
        holders = self.refs.get(entry_id)
        if holders is not None:
            holders.discard(self.name)
            if not holders:
                del self.refs[entry_id]


def check_groups(cgroups: dict[bytes, ConsumerGroup], refs: dict[StreamID, set[bytes]]) -> None:
    """Assert that group PELs, consumer PELs and cgroups_ref agree."""
    expected: dict[StreamID, set[bytes]] = {}
    for name, g in cgroups.items():
        assert g.name == name, f"group {name!r} is filed under another name"
        assert g.refs is refs, f"group {name!r} does not share the stream's cgroups_ref"
        g.pel.check(f"group {name!r}")
        owned = 0
        for c in g.consumers.values():
            c.pel.check(f"consumer {c.name!r}")
            for entry_id, nack in c.pel.items():
                assert g.pel.get(entry_id) is nack, f"{c.name!r} owns {entry_id} not in group PEL"
                assert nack.consumer is c, f"{entry_id} in {c.name!r}'s PEL has another owner"
                owned += 1
        for entry_id, nack in g.pel.items():
            if nack.consumer is not None:
                owner = g.consumers.get(nack.consumer.name)
                assert owner is nack.consumer, f"{entry_id} owned by a deleted consumer"
                assert nack.consumer.pel.get(entry_id) is nack, f"{entry_id} missing in owner PEL"
            expected.setdefault(entry_id, set()).add(name)
        assert owned == sum(1 for _, n in g.pel.items() if n.consumer is not None)
        owned_times = sorted((n.delivery_time, i) for i, n in g.pel.items() if n.consumer)
        g._by_time.check()
        by_time = list(g.by_time())
        assert sorted(by_time) == owned_times, f"group {name!r} by_time() disagrees with its PEL"
        assert [t for t, _ in by_time] == sorted(t for t, _ in by_time), "by_time() unsorted"
        assert all(g.pel.get(i).time_key == k for k, i in g._timed.items()), "stale time key"  # type: ignore[union-attr]
        assert len(g._timed) == len(by_time), f"group {name!r} keeps stale timings"
        unowned = {i for i, n in g.pel.items() if n.consumer is None}
        assert set(g.nacked) == unowned, f"group {name!r} NACK zone disagrees with its PEL"
    assert refs == expected, "cgroups_ref disagrees with the group PELs"
