"""Typed calls beside the argv path: batched appends, the fast path for bulk producers.

    xadd_many(keyspace, config, key, entries, now_ms, db) -> Result(reply=[id, ...], effects, ...)
    xadd_flat(keyspace, config, key, elements, counts, now_ms, db)
                                              -> the same, reply [first id, last id]

`xadd_many` is `XADD key * field value ...` once per entry, all at `now_ms`: the same IDs,
the same state and the same node bytes. Its effect is one `XAPPEND key first-id counts ...`
(commands/append.py), which replays as those XADDs would. What it saves is the per-command
overhead (argv dispatch, option parsing, a context per call, one effect per entry) and, in
`Stream.append_many`, one listpack write per node instead of one per entry.

Unlike a run of separate XADDs, a batch is all-or-nothing: if any XADD of the run would fail
(wrong arity, elements too large, IDs exhausted, WRONGTYPE), it raises the error the first
failing one would raise and changes nothing. An entry is a flat list `[field, value, ...]`,
as in argv and effects. `xadd_flat` takes the entries as a batch's wire form holds them (all
the elements in one list, and each entry's count: IngestBatch's fields) and replies only the
first and last IDs: what the Ingest handler needs, without a tuple per entry on the way in
or a formatted ID per entry on the way out.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate
from typing import Final, cast

from .commands import append
from .commands.add_trim import id_exhausted
from .context import Argv, Result
from .errors import StreamError, wrong_arity
from .ids import MAX_ID, MIN_ID, UINT64_MAX, StreamID, next_auto_id
from .keyspace import Keyspace
from .node import id_bytes
from .reply import Reply
from .settings import EngineConfig
from .stream import LISTPACK_MAX_SIZE, Stream

_MAX_IDV: Final = (1 << 128) - 1  # MAX_ID as a 128-bit int


def xadd_many(
    keyspace: Keyspace,
    config: EngineConfig,
    key: bytes,
    entries: Sequence[Sequence[bytes]],
    now_ms: int,
    db: int = 0,
) -> Result:
    """Append `entries` to the stream at `key` (in `keyspace`, database `db`) with automatic
    IDs; reply: their IDs."""
    if not entries:
        return Result([])
    _check_arity(len(entries[0]))
    counts = [len(fv) for fv in entries]  # each entry's element count, and every element:
    flat: list[bytes] = []  # walked once, for the checks and the effect
    for fv in entries:
        flat += fv
    first, _, effects = _append(keyspace, config, key, flat, counts, now_ms)
    ids = format_ids(first, len(entries))
    return Result(cast("list[Reply]", ids), effects, [(db, key)], touched=[(db, key)])


def xadd_flat(
    keyspace: Keyspace,
    config: EngineConfig,
    key: bytes,
    elements: list[bytes],
    counts: list[int],
    now_ms: int,
    db: int = 0,
) -> Result:
    """xadd_many of the entries `elements` holds back to back, entry i the next counts[i] of
    them (the caller checked that the counts add up to len(elements)): a batch in its wire
    form, neither cut into entries nor every ID formatted. Reply: [first ID, last ID] (the
    IDs between are consecutive), [] for no entries."""
    if not counts:
        return Result([])
    _check_arity(counts[0])
    first, s, effects = _append(keyspace, config, key, elements, counts, now_ms)
    ids: list[Reply] = [first.encode(), s.last_id.encode()]
    return Result(ids, effects, [(db, key)], touched=[(db, key)])


def _append(
    keyspace: Keyspace,
    config: EngineConfig,
    key: bytes,
    flat: list[bytes],
    counts: list[int],
    now_ms: int,
) -> tuple[StreamID, Stream, list[Argv]]:
    """The checks of every XADD of the batch, then the append (nothing changes if a check
    fails); the first ID, the stream and the XAPPEND effect."""
    s = keyspace.stream(key)
    last = s.last_id if s is not None else MIN_ID
    first = _first_id(last, now_ms)
    _check_entries(counts, flat, first)
    if s is None:
        s = keyspace.stream_or_create(key, config.idmp)
    bounds = list(accumulate(counts, initial=0))  # entry i: flat[bounds[i] : bounds[i + 1]]
    s.append_many(first, flat, bounds, config.node_max_bytes, config.node_max_entries)
    return first, s, [append.effect(key, first.encode(), counts, flat)]


def format_ids(first: StreamID, n: int) -> list[bytes]:
    """`<ms>-<seq>` for first, first + 1, ..., n IDs in all."""
    ms, seq = first.ms, first.seq
    if seq + n - 1 <= UINT64_MAX:
        prefix = b"%d-" % ms
        return [id_bytes(prefix, q) for q in range(seq, seq + n)]
    idv = ms << 64 | seq
    return [b"%d-%d" % (v >> 64, v & UINT64_MAX) for v in range(idv, idv + n)]


def _first_id(last: StreamID, now_ms: int) -> StreamID:
    first = next_auto_id(last, now_ms) if last != MAX_ID else None
    if first is None:
        raise id_exhausted()
    return first


def _check_entries(counts: list[int], flat: list[bytes], first: StreamID) -> None:
    """The checks of each XADD in turn (arity, an ID left, elements not too large), raising
    the first one's error; one pass over the counts and one over the elements' lengths (a
    compiled loop over a list) clear the common case first (`counts`: each entry's number
    of elements; `flat`: all the elements, in order).
    """
    room = _MAX_IDV - (first.ms << 64 | first.seq)  # IDs left after the first
    sizes = set(counts)
    if (
        min(sizes) >= 2
        and not any(n % 2 for n in sizes)
        and len(counts) - 1 <= room
        and _total_length(flat) <= LISTPACK_MAX_SIZE
    ):
        return
    a = 0
    for k, n in enumerate(counts):
        _check_arity(n)
        if k > room:
            raise id_exhausted()
        if _total_length(flat[a : a + n]) > LISTPACK_MAX_SIZE:
            raise StreamError("Elements are too large to be stored")
        a += n


def _total_length(elements: list[bytes]) -> int:
    total = 0
    for e in elements:
        total += len(e)
    return total


def _check_arity(elements: int) -> None:
    if elements < 2 or elements % 2:
        raise wrong_arity("xadd")
