"""XSPLITS (cut points at rax node boundaries) and the max_trimmed_entry_id watermark."""

from __future__ import annotations

import hashlib
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.enginecalls import call, error
from xstream.engine import Engine, EngineConfig, node, snapshot
from xstream.engine.ids import StreamID
from xstream.engine.reply import ReplyMap


def _stream(n: int, max_entries: int = 10) -> Engine:
    e = Engine(EngineConfig(node_max_entries=max_entries))
    for i in range(n):
        call(e, "XADD", "s", f"{i + 1}-{i % 3}", "f", str(i))
    return e


def _splits(
    e: Engine, after: str, last: str, parts: int, *more: str | int
) -> tuple[list[bytes], list[int], dict[bytes, Any]]:
    r = call(e, "XSPLITS", "s", after, last, parts, *more)
    assert isinstance(r, ReplyMap)
    info = dict(r)
    return info[b"splits"], info[b"counts"], info


def _ids(e: Engine, start: str, end: str) -> list[bytes]:
    reply = call(e, "XRANGE", "s", start, end)
    assert isinstance(reply, list)
    return [item[0] for item in reply]


def test_cuts_fall_just_before_node_master_ids_with_even_counts() -> None:
    e = _stream(100)
    cuts, counts, info = _splits(e, "-", "+", 4)
    # Nodes of 10 entries start at 1-0, 11-1, 21-2, ...; each cut is a master ID minus one.
    assert cuts == [b"21-1", b"51-1", b"71-0"]
    assert counts == [20, 30, 20, 30]
    assert info[b"length"] == 100 and info[b"last-generated-id"] == b"100-0"


def test_parts_tile_the_range_exactly() -> None:
    e = _stream(95)
    cuts, counts, _ = _splits(e, "(13-1", "88", 5)
    bounds = [b"(13-1", *[b"(" + c for c in cuts]]
    ends = [*cuts, b"88"]
    pieces = [_ids(e, lo.decode(), hi.decode()) for lo, hi in zip(bounds, ends, strict=True)]
    assert [len(p) for p in pieces] == counts
    assert [i for p in pieces for i in p] == _ids(e, "(13-1", "88")


def test_missing_key_is_nil_and_bad_arguments_are_errors() -> None:
    e = _stream(3)
    assert call(e, "XSPLITS", "nokey", "-", "+", 2) is None
    assert error(e, "XSPLITS", "s", "-", "+", 0) == "ERR parts must be between 1 and 10000"
    assert error(e, "XSPLITS", "s", "-", "+", "x") == (
        "ERR value is not an integer or out of range"
    )
    assert error(e, "XSPLITS", "s", "bad", "+", 2) == (
        "ERR Invalid stream ID specified as stream command argument"
    )
    assert error(e, "XSPLITS", "s", "-", "+") == (
        "ERR wrong number of arguments for 'xsplits' command"
    )
    cuts, counts, _ = _splits(e, "5", "2", 3)  # empty range
    assert cuts == [] and counts == [0]


def test_limit_clamps_the_range_at_its_nth_live_entry() -> None:
    e = _stream(100)
    call(e, "XDEL", "s", "7-0")
    _, counts, info = _splits(e, "(5-1", "+", 2, "LIMIT", 30)
    assert _ids(e, "(5-1", info[b"end-id"].decode())[-1] == info[b"end-id"] == b"36-2"
    assert sum(counts) == 30 and len(_ids(e, "(5-1", "36-2")) == 30
    _, counts, info = _splits(e, "(98-1", "+", 3, "LIMIT", 30)  # fewer entries than the limit
    assert info[b"end-id"] == b"100-0" and counts == [2]
    assert error(e, "XSPLITS", "s", "-", "+", 1, "LIMIT", 0) == "ERR LIMIT must be positive"
    assert error(e, "XSPLITS", "s", "-", "+", 1, "LIMIT") == "ERR syntax error"


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(0, 120),
    max_entries=st.integers(1, 20),
    parts=st.integers(1, 12),
    lo=st.integers(0, 130),
    width=st.integers(0, 130),
    deletes=st.lists(st.integers(1, 120), max_size=15),
)
def test_splits_partition_any_range(
    n: int, max_entries: int, parts: int, lo: int, width: int, deletes: list[int]
) -> None:
    e = _stream(n, max_entries)
    for d in deletes:
        if d <= n:
            call(e, "XDEL", "s", f"{d}-{(d - 1) % 3}")
    if n == 0:
        call(e, "XADD", "s", "1-0", "f", "v")
        call(e, "XDEL", "s", "1-0")
    after, last = f"({lo}", str(lo + width)
    cuts, counts, _ = _splits(e, after, last, parts)
    keys = [tuple(map(int, c.split(b"-"))) for c in cuts]
    assert len(cuts) <= parts - 1 and keys == sorted(set(keys))
    bounds = [after, *["(" + c.decode() for c in cuts]]
    ends = [*[c.decode() for c in cuts], last]
    pieces = [_ids(e, a, b) for a, b in zip(bounds, ends, strict=True)]
    assert [len(p) for p in pieces] == counts
    assert [i for p in pieces for i in p] == _ids(e, after, last)


def test_trims_raise_the_watermark_and_deletions_do_not() -> None:
    e = _stream(50)
    call(e, "XDEL", "s", "3-2")
    assert dict(call(e, "XSPLITS", "s", "-", "+", 1))[b"max-trimmed-entry-id"] == b"0-0"
    call(e, "XTRIM", "s", "MAXLEN", "40")  # exact: whole nodes, then tombstones
    info = dict(call(e, "XSPLITS", "s", "-", "+", 1))
    assert info[b"max-trimmed-entry-id"] == b"10-0"  # 9 live entries trimmed: 1..10 but 3
    assert info[b"first-entry-id"] == b"11-1"
    call(e, "XTRIM", "s", "MINID", "20")
    assert dict(call(e, "XSPLITS", "s", "-", "+", 1))[b"max-trimmed-entry-id"] == b"19-0"


def test_watermark_survives_snapshots_and_version_1_files_still_load() -> None:
    e = _stream(30)
    call(e, "XTRIM", "s", "MAXLEN", "5")
    again = Engine()
    snapshot.restore(again, snapshot.dump(e))
    assert again.digest() == e.digest()
    s = again.keyspace.stream(b"s")
    assert s is not None and str(s.max_trimmed_entry_id) == "25-0"
    # A version 1 file: same layout without the watermark field.
    v1 = _as_version_1(snapshot.dump(e))
    s1 = snapshot.load(v1)[0].stream(b"s")
    assert s1 is not None and s1.length == 5 and str(s1.max_trimmed_entry_id) == "0-0"


def _as_version_1(data: bytes) -> bytes:
    body = bytearray(data[:-4])  # less the CRC-32 of version 5
    struct.pack_into(">H", body, 8, 1)
    assert body[10] == 0xFE  # version 3's SELECTDB 0: versions 1 and 2 have none
    del body[10:15]
    # stream record: 0x02 | u32 key len | key | u64 u64 | 16 16 16 | watermark 16 | ...
    meta = 8 + 2 + 1 + 4 + 1 + 16 + 48
    del body[meta : meta + 16]
    return bytes(body) + hashlib.blake2b(bytes(body), digest_size=16).digest()


@pytest.mark.parametrize("parts", [1, 2, 7])
def test_splits_on_a_stream_with_only_tombstones_left(parts: int) -> None:
    e = _stream(5, 10)
    call(e, "XTRIM", "s", "MAXLEN", "0")
    cuts, counts, info = _splits(e, "-", "+", parts)
    assert cuts == [] and counts == [0] and info[b"length"] == 0


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), dels=st.lists(st.integers(0, 39), max_size=40))
def test_last_live_id_walks_back_past_tombstones(n: int, dels: list[int]) -> None:
    e = _stream(n, max_entries=100)
    for d in dels:
        if d < n:
            call(e, "XDEL", "s", f"{d + 1}-{d % 3}")
    s = e.keyspace.stream(b"s")
    assert s is not None
    for key, lp in s.rax.items():
        master = StreamID.from_key(key)
        live = [i for _, f, i in node.scan(lp, master) if not f & node.FLAG_DELETED]
        assert node.last_live_id(lp, master) == (live[-1] if live else None)
