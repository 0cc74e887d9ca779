"""Long entry replies encoded in pieces, the event loop yielding between two.

codec.encode builds a whole reply at once: for an XRANGE of a million entries that is about
a second in which no other client runs. A long entry list (or XREAD's key -> entries) is
encoded CHUNK entries at a time instead, with `await asyncio.sleep(0)` between two; the
pieces, written in order, are the bytes codec.encode would give. Each chunk's entries are
released once encoded (freeing a whole reply at once is itself tens of milliseconds). An
EncodedRun (a long forward XRANGE, slices.py: the engine wrote it as RESP, slice by slice)
is already its pieces.
The gRPC edge does the same for protobuf (server/chunked.py).
"""

from __future__ import annotations

import asyncio
from typing import cast

from xstream.engine.reply import EncodedRun, PairMap, Reply

from .codec import encode

CHUNK = 500  # entries per piece: ~1 ms of work between two yields
LONG = 4 * CHUNK  # shorter replies are encoded whole


def is_long(reply: Reply) -> bool:
    """An entry list (or XREAD's key -> entries) long enough to encode in pieces."""
    if isinstance(reply, PairMap):
        return sum(len(cast(list[Reply], v)) for _, v in reply) > LONG
    return isinstance(reply, list | EncodedRun) and len(reply) > LONG


async def encode_long(reply: Reply, proto: int) -> list[bytes]:
    """codec.encode(reply, proto), as pieces to write in order; `reply` is consumed."""
    if isinstance(reply, EncodedRun):
        assert reply.form == "resp", reply
        return [b"*%d" % reply.count, *reply.pieces, b"\r\n"]  # see EncodedRun
    if not isinstance(reply, PairMap):
        return await _entries(cast(list[Reply], reply), proto)
    pieces = [(b"%%%d\r\n" if proto == 3 else b"*%d\r\n") % len(reply)]
    for key, entries in reply:
        if proto == 2:
            pieces.append(b"*2\r\n")
        pieces.append(encode(key, proto))
        pieces += await _entries(cast(list[Reply], entries), proto)
    return pieces


async def _entries(entries: list[Reply], proto: int) -> list[bytes]:
    pieces = [b"*%d\r\n" % len(entries)]
    for i in range(0, len(entries), CHUNK):
        j = min(i + CHUNK, len(entries))
        chunk = encode(entries[i:j], proto)
        pieces.append(chunk[chunk.index(b"\r\n") + 2 :])  # without the chunk's own header
        entries[i:j] = [None] * (j - i)
        await asyncio.sleep(0)
    return pieces
