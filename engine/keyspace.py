"""The keyspace: key -> value, where a value is a Stream, a plain string (bytes) or a list (a
deque of elements: commands/lists.py) or a set (a set of members: commands/sets.py), and the
keys' expiry times (`expires`: key -> absolute unix ms, Redis's db->expires).

Strings exist so that type errors are real (WRONGTYPE) and TYPE/SCAN have something to tell
apart. Lookup helpers raise Redis's errors.

Expiry is decided by the command that looks a key up, as Redis's lookupKey does, and how
depends on the engine's `Clock` (which Engine.execute sets for each command):

    mode     who                               a key past its time (now_ms > when)
    KEEP     replayed effects, loads, digests  is there, as any key (a DEL will come)
    HIDE     reads (primary and replica)       is missing; nothing changes
    EXPIRE   writes on the primary             is deleted first, and noted in
                                               `clock.expired` (the engine ships a DEL)

`get`, `stream`, `in`, `delete` and `stream_or_create` are lookups (a read's count in
INFO's keyspace_hits and keyspace_misses; `alive` is one that does not); `data` and `expires`,
iteration and `len` are the raw contents (DBSIZE counts keys not yet expired, as Redis's).

Active expiry (`due`) finds the keys past their time without looking at the others: a min-heap
of (when, key) (`deadlines`) gets an entry whenever a key is given a time (`set`,
`set_expire`). Entries go stale when a key is deleted, persisted or given another time; they
are dropped when they reach the top, and the heap is rebuilt from `expires` when stale ones
outnumber live ones, so it stays within about twice `expires`. Invariant: every (key, when)
in `expires` has its entry in `deadlines`, so writers of a time use `set`/`set_expire`, never
`expires[key] = ...`.
"""

from __future__ import annotations

import enum
import heapq
from collections import deque
from collections.abc import Iterator
from typing import Final

from .errors import wrong_type
from .stream import Stream

ListValue = deque[bytes]
SetValue = set[bytes]
Value = Stream | bytes | ListValue | SetValue


class Mode(enum.Enum):
    KEEP = "keep"
    HIDE = "hide"
    EXPIRE = "expire"


class Clock:
    """The time and expiry mode of the command running now, shared by an engine's keyspaces."""

    __slots__ = ("expired", "hits", "misses", "mode", "now_ms")

    def __init__(self) -> None:
        self.now_ms = 0  # the running command's time; 0 between commands
        self.mode = Mode.KEEP  # KEEP between commands
        self.expired: list[Expired] = []  # deletions the running command's lookups made
        self.hits = 0  # reads' lookups that found their key (INFO's keyspace_hits)
        self.misses = 0  # ... that did not (keyspace_misses)


Expired = tuple["Keyspace", bytes, Value, int]  # (keyspace, key, value, when): undo material

KEEP_CLOCK: Final = Clock()  # the clock of keyspaces no engine has attached; never changed


class Keyspace:
    __slots__ = ("clock", "data", "deadlines", "expires")

    def __init__(self) -> None:
        self.data: dict[bytes, Value] = {}
        self.expires: dict[bytes, int] = {}  # key -> unix ms; only keys that have a TTL
        self.deadlines: list[tuple[int, bytes]] = []  # min-heap over expires, stale entries too
        self.clock = KEEP_CLOCK

    def __len__(self) -> int:
        return len(self.data)

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.data)

    def __contains__(self, key: bytes) -> bool:
        return self.get(key) is not None

    def get(self, key: bytes) -> Value | None:
        """The value at `key`, None if missing; a read's lookup (HIDE) counts a hit or a miss,
        as Redis's lookupKeyRead."""
        v = self.data.get(key)
        if v is not None and self.expires and self._gone(key):
            v = None
        clock = self.clock
        if clock.mode is Mode.HIDE:
            if v is None:
                clock.misses += 1
            else:
                clock.hits += 1
        return v

    def peek(self, key: bytes) -> Value | None:
        """`get` without counting a lookup: what Redis looks up without stats (KEYS and SCAN
        walking the keys, MEMORY USAGE)."""
        v = self.data.get(key)
        if v is not None and self.expires and self._gone(key):
            return None
        return v

    def alive(self, key: bytes) -> bool:
        """Whether `key` is there now, as `in` says, without counting a lookup."""
        return self.peek(key) is not None

    def note_read(self, found: bool) -> None:
        """A lookup a write command makes as Redis's lookupKeyRead (XREADGROUP's streams, COPY's
        source): counted as a read's."""
        if found:
            self.clock.hits += 1
        else:
            self.clock.misses += 1

    def _gone(self, key: bytes) -> bool:
        """Whether `key` counts as missing now (see the module doc); EXPIRE deletes it."""
        when = self.expires.get(key)
        clock = self.clock
        if when is None or clock.mode is Mode.KEEP or clock.now_ms <= when:
            return False
        if clock.mode is Mode.EXPIRE:
            clock.expired.append((self, key, self.data.pop(key), self.expires.pop(key)))
        return True

    def gone_keys(self) -> set[bytes]:
        """The keys of `data` that count as missing now, as `get` would find each (in EXPIRE
        mode they are deleted here, so none is left to return); only keys with a time."""
        clock = self.clock
        if clock.mode is Mode.KEEP or not self.expires:
            return set()
        now = clock.now_ms
        past = [key for key, when in self.expires.items() if now > when]
        if clock.mode is Mode.EXPIRE:
            for key in past:
                self._gone(key)
            return set()
        return set(past)

    def stream(self, key: bytes) -> Stream | None:
        """The stream at `key`, None if missing; WRONGTYPE for another type."""
        v = self.get(key)
        if v is None or isinstance(v, Stream):
            return v
        raise wrong_type()

    def stream_or_create(self, key: bytes, idmp: tuple[int, int] = (100, 100)) -> Stream:
        """The stream at `key`, created if missing with `idmp` (duration, maxsize): the
        config's stream-idmp-duration and stream-idmp-maxsize."""
        s = self.stream(key)
        if s is None:
            s = Stream(*idmp)
            self.data[key] = s
        return s

    def delete(self, key: bytes) -> bool:
        if self.get(key) is None:
            return False
        del self.data[key]
        self.expires.pop(key, None)
        return True

    def set(self, key: bytes, value: Value, when: int | None = None) -> None:
        """`key` holds `value` from now on, expiring at `when` (None: never)."""
        self.data[key] = value
        if when is None:
            self.expires.pop(key, None)
        else:
            self.set_expire(key, when)

    def set_expire(self, key: bytes, when: int) -> None:
        """`key` (present) expires at `when` (unix ms) from now on."""
        self.expires[key] = when
        heapq.heappush(self.deadlines, (when, key))
        if len(self.deadlines) > 2 * len(self.expires) + 64:  # mostly stale: rebuild
            self.deadlines = [(w, k) for k, w in self.expires.items()]
            heapq.heapify(self.deadlines)

    def expire_at(self, key: bytes) -> int | None:
        """`key`'s expiry time (unix ms), None if it has none."""
        return self.expires.get(key)

    def clear(self) -> None:
        self.data.clear()
        self.expires.clear()
        self.deadlines.clear()

    def due(self, now_ms: int, limit: int) -> list[bytes]:
        """Up to `limit` keys whose time has passed at `now_ms`, the earliest first (active
        expiry's work: the caller deletes them). Their entries leave `deadlines`; a caller
        that puts a key back gives it its time again with `set`/`set_expire`."""
        out: list[bytes] = []
        deadlines, expires = self.deadlines, self.expires
        while deadlines and len(out) < limit and deadlines[0][0] < now_ms:
            when, key = heapq.heappop(deadlines)
            if expires.get(key) == when and (not out or out[-1] != key):  # equal entries: adjacent
                out.append(key)
        return out


def type_name(value: Value | None) -> str:
    if value is None:
        return "none"
    if isinstance(value, deque):
        return "list"
    if isinstance(value, set):
        return "set"
    return "stream" if isinstance(value, Stream) else "string"
