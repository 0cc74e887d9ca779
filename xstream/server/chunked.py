"""Long entry replies encoded in chunks, the event loop yielding between two.

Turning a reply of a million entries into protobuf takes ~1.8 us per entry (building the
messages, then serializing them): seconds in which no other client runs. Protobuf allows it in
pieces: a message's encoding is the concatenation of its fields' encodings, and a repeated
field may arrive in several runs (packed ones too) that a parser joins. So a long entry list is
encoded `CHUNK` entries at a time, each run serialized at once, and the runs are joined
into the reply's bytes; the servicer returns those bytes (decoding.py lets bytes pass the
response serializer unchanged). Short replies are built as messages, as before.

    Reply    = [1: value  = Value]                           [2: offset]
    Value    = [9: entries = Entries]  or  [8: pair_map = Map]
    Entries  = run(ids, counts, elements) run(...) ...       (each run: one pb.Entries)
    Map      = [1: keys ...]  [2: values = Value] [2: values = Value] ...

    EntriesReply = run(entries ...) run(...) ...             (typed XRange)
    StreamsReply = [1: streams = key run(entries) run(...)] ... [2: offset]   (typed XRead)

Each [n: x] is a length-delimited field: the tag varint (n << 3 | 2), the length varint, x.
The bytes equal what `SerializeToString` of the message built whole would parse as.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, cast

from xstream.engine.reply import EncodedRun, PairMap, Reply
from xstream.protocol import field_number, framed
from xstream.v1 import xstream_pb2 as pb

from . import wire

CHUNK = 500  # entries per run: ~1 ms of work between two yields
LONG = 4 * CHUNK  # shorter replies are built whole


_REPLY_VALUE = field_number(pb.Reply, "value")
_VALUE_ENTRIES = field_number(pb.Value, "entries")
_VALUE_PAIR_MAP = field_number(pb.Value, "pair_map")
_MAP_VALUES = field_number(pb.Map, "values")
_STREAMS_STREAMS = field_number(pb.StreamsReply, "streams")


def is_long(reply: Reply) -> bool:
    """An entry list (or XREAD's key -> entries) long enough to encode in chunks."""
    if isinstance(reply, PairMap):
        return sum(len(cast(list[Reply], v)) for _, v in reply) > LONG
    return isinstance(reply, list | EncodedRun) and len(reply) > LONG


def _entries_run(chunk: list[Reply]) -> bytes:
    """pb.Entries of a chunk of [id, [field, value, ...]] items, built column by column:
    protocol.to_value would first check each item's shape (a long read's reply is entries,
    always: a non-bytes element fails the extend with TypeError, never encodes wrongly)."""
    items = cast("list[list[Any]]", chunk)
    e = pb.Entries()
    e.ids.extend([item[0] for item in items])
    e.counts.extend([len(item[1]) for item in items])
    e.elements.extend([x for item in items for x in item[1]])
    return bytes(e.SerializeToString())


def _typed_run(chunk: list[Reply]) -> bytes:
    return bytes(pb.EntriesReply(entries=wire.entries(chunk)).SerializeToString())


def _stream_run(chunk: list[Reply]) -> bytes:
    return bytes(pb.StreamEntries(entries=wire.entries(chunk)).SerializeToString())


async def _runs(entries: list[Reply], run: Callable[[list[Reply]], bytes]) -> list[bytes]:
    """`entries` encoded by `run`, CHUNK at a time, the loop yielding between two. Each
    chunk's entries are released once encoded (replaced by None): freeing a whole reply at
    once is itself tens of milliseconds."""
    parts = []
    for i in range(0, len(entries), CHUNK):
        parts.append(run(entries[i : i + CHUNK]))
        j = min(i + CHUNK, len(entries))
        entries[i:j] = [None] * (j - i)
        await asyncio.sleep(0)
    return parts


async def _value(reply: Reply) -> list[bytes]:
    """A serialized Value for `reply` (entries, or XREAD's key -> entries), in pieces."""
    if isinstance(reply, EncodedRun):  # pb.Entries messages already (a long forward XRANGE)
        assert reply.form == "protobuf", reply
        return framed(_VALUE_ENTRIES, reply.pieces)
    if isinstance(reply, PairMap):
        pieces = [pb.Map(keys=[cast(bytes, k) for k, _ in reply]).SerializeToString()]
        for _, v in reply:
            pieces += framed(_MAP_VALUES, await _value(v))
        return framed(_VALUE_PAIR_MAP, pieces)
    return framed(_VALUE_ENTRIES, await _runs(cast(list[Reply], reply), _entries_run))


async def reply(value: Reply, offset: int) -> bytes:
    """pb.Reply(value=..., offset=...) serialized in chunks. `value` (a long read's reply,
    is_long) is consumed."""
    pieces = framed(_REPLY_VALUE, await _value(value))
    return b"".join([*pieces, pb.Reply(offset=offset).SerializeToString()])


async def entries_reply(value: Reply) -> bytes:
    """pb.EntriesReply for XRANGE's reply (typed XRange), serialized in chunks; consumed."""
    return b"".join(await _runs(cast(list[Reply], value), _typed_run))


async def streams_reply(value: Reply, offset: int) -> bytes:
    """pb.StreamsReply for XREAD's reply (typed XRead), serialized in chunks; consumed."""
    pieces = []
    for key, entries in cast(PairMap, value):
        head = pb.StreamEntries(key=cast(bytes, key)).SerializeToString()
        runs = await _runs(cast(list[Reply], entries), _stream_run)
        pieces += framed(_STREAMS_STREAMS, [head, *runs])
    return b"".join([*pieces, pb.StreamsReply(offset=offset).SerializeToString()])
