"""Bounded work per read: long XRANGE, XREVRANGE and XREAD replies are built in slices.

One engine call over a million entries holds the event loop for seconds (~3.4 us per entry
walked and built), and every other client waits. A read that may be long (no COUNT, or a
COUNT above `Limits.slice_entries`) runs instead as a series of engine calls of at most
`slice_entries` entries each, the loop yielding between two (other clients' commands run in
between); the slices are joined into the reply one engine call would have given:

    XRANGE k - +            ->  XRANGE k - <pin> COUNT n
                                XRANGE k (<last id> <pin> COUNT n      (loop yields before each)
                                ...until a slice comes back short

    XREAD STREAMS k1 k2 a b ->  XREAD COUNT n STREAMS k1 k2 a b
                                XREAD COUNT n STREAMS k1 k2 <last1> <last2>   (the full ones)

The reply is the one an atomic read at the first slice gives (a point in time), because:
* appends after it are left out: a forward read's end is pinned at the stream's `last_id`
  then (XREAD's entries past it are dropped); a reverse read walks down, away from appends;
* removals are watched (engine Stream.watches): an XDEL or trim of an entry the read has not
  reached yet makes the read stale, and a stale read starts again, once; a second stale one
  runs as one engine call, as before;
* the key deleted, renamed or replaced (another Stream object there) is stale too.

Form: a forward XRANGE read for an edge that takes its entries flat or encoded (engine/
reply.py's EntryForm: the RESP port asks for "resp", the gRPC Execute for "protobuf") is
asked of the engine in that form, slice by slice, and joined in it: no list per entry is
built, charged or encoded. Every other read (XREVRANGE, XREAD, the typed gRPC calls,
pipelines) is joined as lists, as before.

Garbage collection: a long reply is hundreds of thousands of small lists, and every full
collection of the cyclic GC would walk them all (~100 ms per 300,000 entries), in the middle
of other clients' commands. While any long read is in flight (`gc_paused`, held by the read
here and by the edge until the reply is encoded) automatic collections wait; reference
counting frees the reply as usual, and collections resume once the last long read is done.

Size: the reply's payload (IDs, fields and values, plus 3 bytes per element for framing) is
counted as slices arrive; past `max_reply_bytes` the read fails with an ERR line that says to
page with COUNT, before the reply is ever built whole. `proto_max_bulk_len` bounds every
argument of every command, as Redis's setting does.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import cast

from xstream.engine import Engine, StreamError
from xstream.engine.errors import CoreError
from xstream.engine.ids import MAX_ID, StreamID, parse_interval, parse_strict, string2ll
from xstream.engine.keyspace import Keyspace
from xstream.engine.node import RangeItem, payload_size
from xstream.engine.reply import EncodedRun, PairMap, Reply
from xstream.engine.stream import Stream

Argv = list[bytes]
Run = Callable[[Argv], Reply]  # one engine call (the node's, with its clock)


@dataclass
class Limits:
    """What one request may cost (settings: `--max-reply-bytes`, `--proto-max-bulk-len`)."""

    max_reply_bytes: int = 128 << 20  # below the gRPC message limit (256 MiB)
    proto_max_bulk_len: int = 512 << 20  # Redis's default
    slice_entries: int = 500  # ~2 ms of engine work per slice

    def check_args(self, argv: Argv) -> None:
        """Every argument within proto-max-bulk-len (Redis refuses the bulk itself)."""
        limit = self.proto_max_bulk_len
        for arg in argv:  # a plain loop: half the cost of max(map(len, argv)) per command
            if len(arg) > limit:
                raise StreamError(
                    f"Protocol error: invalid bulk length ({len(arg)} bytes, "
                    f"proto-max-bulk-len is {limit})"
                )


_paused = {"reads": 0, "was_enabled": False}


@contextlib.contextmanager
def gc_paused() -> Iterator[bool]:
    """Automatic cyclic collections held off while a long read is in flight (nestable)."""
    if _paused["reads"] == 0:
        _paused["was_enabled"] = gc.isenabled()
        gc.disable()
    _paused["reads"] += 1
    try:
        yield True
    finally:
        _paused["reads"] -= 1
        if _paused["reads"] == 0 and _paused["was_enabled"]:
            gc.enable()


class StaleRead(CoreError):  # noqa: N818 (a signal to start again, not an error)
    """An entry the read had not reached yet was removed, or the key changed."""


@dataclass
class _Watch:
    """Registered on a stream while a sliced read walks it (engine.stream.Watch)."""

    rev: bool
    cursor: StreamID | None = None  # the last ID returned (None: nothing yet)
    stale: bool = False

    def removing(self, lo: StreamID, hi: StreamID) -> None:
        if self.cursor is None:
            self.stale = True
        elif self.rev:
            self.stale = self.stale or lo < self.cursor
        else:
            self.stale = self.stale or hi > self.cursor


@dataclass
class _Budget:
    limit: int
    used: int = 0

    def spend(self, entries: list[Reply]) -> None:
        """Charge a slice of [id, [field, value, ...]] entries: their bytes plus 3 per ID,
        field and value (engine.node.payload_size: compiled, where a Python loop per entry
        here cost more than the engine's walk that built the entries)."""
        self.charge(payload_size(cast(list[RangeItem], entries)))

    def charge(self, size: int) -> None:
        self.used += size
        if self.used > self.limit:
            raise StreamError(
                f"reply exceeds max-reply-bytes ({self.limit} bytes): read it in pages with COUNT"
            )


@dataclass
class _Walk:
    """One stream being read: its object (for staleness), its watch and what came back."""

    key: bytes
    stream: Stream | None
    watch: _Watch
    entries: list[Reply] = field(default_factory=list)
    done: bool = False

    def attach(self) -> None:
        if self.stream is not None:
            self.stream.watches.append(self.watch)

    def detach(self) -> None:
        if self.stream is not None and self.watch in self.stream.watches:
            self.stream.watches.remove(self.watch)

    def check(self, keyspace: Keyspace) -> None:
        """StaleRead if the stream lost an entry not read yet, or its key (in the read's
        database, looked up again: SWAPDB, MOVE, RENAME) no longer holds it."""
        if self.watch.stale or keyspace.data.get(self.key) is not self.stream:
            raise StaleRead()

    def take(self, entries: list[Reply], full: bool) -> None:
        self.entries.extend(entries)
        if entries:
            self.watch.cursor = _id_of(entries[-1])
        self.done = self.done or not full


def reply_size(reply: Reply | tuple[bytes, Reply]) -> int:
    """A reply's payload as the budget counts it (bytes + 3 per element; 8 per integer)."""
    if isinstance(reply, bytes | str):
        return len(reply) + 3
    if isinstance(reply, list):
        return 3 + sum(reply_size(x) for x in reply)  # ReplyMap's pairs are tuples
    if isinstance(reply, tuple):
        return sum(reply_size(x) for x in reply)
    return 8


def too_long(limit: int) -> StreamError:
    return StreamError(
        f"reply exceeds max-reply-bytes ({limit} bytes): read it in pages with COUNT"
    )


def _id_of(entry: Reply) -> StreamID:
    return parse_strict(cast(bytes, cast(list[Reply], entry)[0]))


def slices_for(argv: Argv, limits: Limits) -> bool:
    """Whether `argv` is a read that may be long and can be sliced."""
    name = argv[0].upper()
    if name in (b"XRANGE", b"XREVRANGE"):
        return len(argv) == 4 or (len(argv) == 6 and _big_count(argv[4], argv[5], limits))
    if name == b"XREAD":
        return _xread_streams_at(argv, limits) > 0
    return False


def _big_count(word: bytes, value: bytes, limits: Limits) -> bool:
    if word.lower() != b"count":
        return False
    count = string2ll(value)  # what the engine accepts (else it answers the error itself)
    return count is not None and count > limits.slice_entries


def _xread_streams_at(argv: Argv, limits: Limits) -> int:
    """XREAD [COUNT n] STREAMS ...: the index after STREAMS, when COUNT is absent or big and
    there is no BLOCK (a blocked read waits for new entries: short, one engine call)."""
    words = [a.lower() for a in argv[1:4]]
    if words[:1] == [b"streams"]:
        return 2
    if len(argv) > 4 and words[0] == b"count" and words[2] == b"streams":
        return 4 if _big_count(argv[1], argv[2], limits) else 0
    return 0


async def read(engine: Engine, db: int, run: Run, argv: Argv, limits: Limits) -> Reply:
    """The reply of read `argv` in database `db` (slices_for said yes; `run` runs a command
    there), built in slices. If `run` gives a forward XRANGE's entries as an EncodedRun
    (EntryForm's "resp" or "protobuf"), the reply is one too, joined."""
    with gc_paused():
        return await _read(engine, db, run, argv, limits)


async def _read(engine: Engine, db: int, run: Run, argv: Argv, limits: Limits) -> Reply:
    for _ in range(2):
        try:
            if argv[0].upper() == b"XREAD":
                return await _xread(engine.dbs, db, run, argv, limits)
            return await _range(engine.dbs, db, run, argv, limits)
        except StaleRead:
            continue
    reply = run(argv)  # stale twice: one engine call, atomic
    if isinstance(reply, PairMap):
        for _, entries in reply:
            _Budget(limits.max_reply_bytes).spend(cast(list[Reply], entries))
    elif isinstance(reply, EncodedRun):
        _Budget(limits.max_reply_bytes).charge(reply.size)
    elif isinstance(reply, list):  # XRANGE's array of entries
        _Budget(limits.max_reply_bytes).spend(cast(list[Reply], reply))
    return reply


async def _range(dbs: list[Keyspace], db: int, run: Run, argv: Argv, limits: Limits) -> Reply:
    """XRANGE / XREVRANGE: argv[2] is where the walk starts (start, or end when reversed);
    each next slice starts just past the last ID returned. The slices are lists, or
    EncodedRuns if `run` gives those: the reply is joined in the same form."""
    n = limits.slice_entries
    want = int(argv[5]) if len(argv) == 6 else 0  # 0: all
    budget = _Budget(limits.max_reply_bytes)
    first = run([*argv[:4], b"COUNT", b"%d" % min(n, want or n)])
    if not isinstance(first, list | EncodedRun):
        return first  # COUNT 0's null array
    key = argv[1]
    rev = argv[0].upper() == b"XREVRANGE"
    walk = _Walk(key, dbs[db].stream(key), _Watch(rev))
    stop = argv[3] if rev else _pinned_end(argv[3], walk.stream)
    got = first if isinstance(first, EncodedRun) else cast(list[Reply], first)
    joined = _empty(got)
    walk.attach()
    try:
        while True:
            last = _join(joined, got, budget)
            if last is not None:
                walk.watch.cursor = parse_strict(last)
            cursor = walk.watch.cursor
            if len(got) < n or (want and len(joined) >= want) or cursor == MAX_ID:
                return joined
            await asyncio.sleep(0)
            walk.check(dbs[db])
            take = min(n, want - len(joined)) if want else n
            after = b"(" + cursor.encode() if cursor is not None else argv[2]
            more = run([argv[0], key, after, stop, b"COUNT", b"%d" % take])
            got = more if isinstance(more, EncodedRun) else cast(list[Reply], more)
    finally:
        walk.detach()


Joined = list[Reply] | EncodedRun  # a sliced XRANGE's reply, in one of its forms


def _empty(got: Joined) -> Joined:
    """An empty reply of slice `got`'s form."""
    if isinstance(got, EncodedRun):
        return EncodedRun(got.form)
    return []


def _join(joined: Joined, got: Joined, budget: _Budget) -> bytes | None:
    """Charge slice `got` and append it to `joined` (both of one form); the last ID it holds
    (None if it is empty)."""
    if isinstance(joined, EncodedRun):
        assert isinstance(got, EncodedRun), got
        budget.charge(got.size)
        joined.extend(got)
        return got.last_id if got.count else None
    assert isinstance(got, list), got
    budget.spend(got)
    joined.extend(got)
    return cast(bytes, cast(list[Reply], got[-1])[0]) if got else None


def _pinned_end(end: bytes, stream: Stream | None) -> bytes:
    """The forward read's end as of now: `end`, or the stream's last_id if that is lower."""
    if stream is None:
        return end
    parsed = parse_interval(end, start=False)
    return end if parsed <= stream.last_id else stream.last_id.encode()


async def _xread(dbs: list[Keyspace], db: int, run: Run, argv: Argv, limits: Limits) -> Reply:
    """XREAD: every stream with a full slice goes on from its last ID (XREAD is exclusive)."""
    n = limits.slice_entries
    at = _xread_streams_at(argv, limits)
    count = int(argv[2]) if at == 4 else 0  # 0: all
    budget = _Budget(limits.max_reply_bytes)
    reply = run([b"XREAD", b"COUNT", b"%d" % n, b"STREAMS", *argv[at:]])
    if not isinstance(reply, PairMap):
        return reply  # nothing to read: the null array
    walks: list[tuple[_Walk, StreamID]] = []
    for key_reply, _ in reply:
        key = cast(bytes, key_reply)
        stream = dbs[db].stream(key)
        walks.append((_Walk(key, stream, _Watch(rev=False)), _pin(stream)))
    for walk, _ in walks:
        walk.attach()
    try:
        going, slices = walks, [cast(list[Reply], e) for _, e in reply]
        while True:
            for (walk, pin), entries in zip(going, slices, strict=True):
                kept = _up_to(entries, pin)
                budget.spend(kept)
                walk.take(kept, len(kept) == n)
                if count and len(walk.entries) >= count:
                    del walk.entries[count:]
                    walk.done = True
            going = [(w, p) for w, p in going if not w.done]
            if not going:
                return PairMap([[w.key, w.entries] for w, _ in walks])
            await asyncio.sleep(0)
            for w, _ in going:
                w.check(dbs[db])
            ids = [cast(list[bytes], w.entries[-1])[0] for w, _ in going]
            more = run(
                [b"XREAD", b"COUNT", b"%d" % n, b"STREAMS", *[w.key for w, _ in going], *ids]
            )
            slices = _aligned(more, [w.key for w, _ in going])
    finally:
        for walk, _ in walks:
            walk.detach()


def _up_to(entries: list[Reply], pin: StreamID) -> list[Reply]:
    """The entries (in ID order) with IDs <= pin: all of them, unless appends came after
    the read's first slice (then the IDs are parsed, to find where to cut)."""
    if not entries or _id_of(entries[-1]) <= pin:
        return entries
    return [e for e in entries if _id_of(e) <= pin]


def _pin(stream: Stream | None) -> StreamID:
    return stream.last_id if stream is not None else MAX_ID


def _aligned(reply: Reply, keys: list[bytes]) -> list[list[Reply]]:
    """XREAD's reply names only the streams that had entries, in the order asked: one entry
    list per key asked (empty where the reply has none)."""
    pairs = list(reply) if isinstance(reply, PairMap) else []
    out: list[list[Reply]] = []
    pos = 0
    for key in keys:
        if pos < len(pairs) and pairs[pos][0] == key:
            out.append(cast(list[Reply], pairs[pos][1]))
            pos += 1
        else:
            out.append([])
    return out
