"""XNODES (a range as its nodes' listpacks) and columns.decode_node: what the pages decode to
is exactly XRANGE's reply, across deletions, trims, field sets, integer values and IDs near
2**64; pages tile the range; bad arguments get clear errors."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.enginecalls import call, error
from xstream.engine import Engine, EngineConfig
from xstream.engine.columns import Columns, decode_node
from xstream.engine.commands.xnodes import MAX_REPLY_BYTES
from xstream.engine.ids import parse_interval

MAX = 2**64 - 1


def _decode(e: Engine, key: str, start: str, end: str, count: int) -> tuple[Columns, int]:
    """Every page of XNODES from start to end, decoded; (the columns, pages read)."""
    lo, hi = parse_interval(start.encode(), start=True), parse_interval(end.encode(), start=False)
    out, pages, cursor = Columns(), 0, start
    while True:
        reply = call(e, "XNODES", key, cursor, end, "COUNT", count)
        assert isinstance(reply, list)
        pages += 1
        nxt, rest = reply[0], reply[1:]
        assert pages == 1 or rest, "a page after the first holds a node"
        for i in range(0, len(rest), 2):
            ms, seq = (int(x) for x in rest[i].split(b"-"))
            if decode_node(out, rest[i + 1], ms, seq, lo.ms, lo.seq, hi.ms, hi.seq):
                assert nxt is None or i + 2 == len(rest), "nothing is sent past the end"
        if nxt is None:
            return out, pages
        cursor = nxt.decode()
        lo = parse_interval(nxt, start=True)  # what earlier pages held is before it


def _rows(c: Columns) -> list[list[Any]]:
    rows, v = [], 0
    ms, shapes = c.ms_column(), c.shape_column()
    assert len(ms) == len(shapes) == len(c.ids) == len(c)
    for i in range(len(c)):
        assert c.ids[i] == b"%d-%d" % (ms[i], c.seq[i])
        names = c.templates[shapes[i]]
        fv: list[bytes] = []
        for name in names:
            fv += [name, c.values[v]]
            v += 1
        rows.append([b"%d-%d" % (ms[i], c.seq[i]), fv])
    assert v == len(c.values)
    return rows


def _same(e: Engine, start: str = "-", end: str = "+", count: int = 7) -> int:
    decoded, pages = _decode(e, "s", start, end, count)
    assert _rows(decoded) == call(e, "XRANGE", "s", start, end)
    return pages


values = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(lambda v: str(v).encode()),
    st.binary(max_size=70),
    st.sampled_from([b"", b"0", b"-0", b"007", b"42", b"+5", b"x" * 5000]),
)
entries = st.lists(
    st.tuples(
        st.integers(1, 3),  # ms step
        st.lists(
            st.tuples(st.sampled_from([b"a", b"b", b"c", b"12"]), values), min_size=1, max_size=4
        ),
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(entries, st.lists(st.integers(0, 59), max_size=20), st.integers(1, 25), st.data())
def test_pages_decode_to_xrange(
    adds: list[tuple[int, list[tuple[bytes, bytes]]]], dels: list[int], count: int, data: Any
) -> None:
    e = Engine(EngineConfig(node_max_entries=5))
    ms = 10**12
    for step, fields in adds:
        ms += step
        call(e, "XADD", "s", f"{ms}-*", *[x for pair in fields for x in pair])
    ids = [item[0] for item in call(e, "XRANGE", "s", "-", "+")]  # type: ignore[union-attr]
    for i in dels:
        if i < len(ids):
            call(e, "XDEL", "s", ids[i])
    _same(e, count=count)
    live = [item[0].decode() for item in call(e, "XRANGE", "s", "-", "+")]  # type: ignore[union-attr]
    if live:
        a = data.draw(st.sampled_from(live))
        b = data.draw(st.sampled_from(live))
        _same(e, a, b, count)
        _same(e, "(" + a, b, count)


def test_pages_tile_the_range_and_count_bounds_them() -> None:
    e = Engine(EngineConfig(node_max_entries=10))
    for i in range(1, 101):
        call(e, "XADD", "s", f"{i}-0", "f", str(i), "g", "v")
    assert _same(e, count=1) == 10  # one node per page
    assert _same(e, count=25) == 4  # nodes until 25 live entries: 3 nodes, then the 4th page
    assert _same(e, "(35-0", "72-0", 10) == 5
    reply = call(e, "XNODES", "s", "-", "+", "COUNT", 10)
    assert isinstance(reply, list) and reply[0] == b"11-0" and reply[1] == b"1-0"


def test_edges_of_the_id_space_and_trims() -> None:
    e = Engine(EngineConfig(node_max_entries=3))
    for seq in range(8):
        call(e, "XADD", "s", f"{MAX}-{MAX - 10 + seq}", "f", str(seq))
    call(e, "XADD", "t", "0-1", "f", "v")
    _same(e)
    _same(e, f"({MAX}-{MAX - 9}", f"{MAX}-{MAX}")
    call(e, "XTRIM", "s", "MINID", f"{MAX}-{MAX - 5}")
    _same(e)


def test_missing_key_empty_range_and_bad_arguments() -> None:
    e = Engine()
    assert call(e, "XNODES", "nokey", "-", "+", "COUNT", 5) == [None]
    call(e, "XADD", "s", "5-0", "f", "v")
    assert len(_decode(e, "s", "6", "+", 5)[0]) == 0  # the node before 6 is sent, decodes to none
    assert call(e, "XNODES", "s", "9", "1", "COUNT", 5) == [None]
    assert error(e, "XNODES", "s", "-", "+", "COUNT", 0) == "ERR COUNT must be positive"
    assert error(e, "XNODES", "s", "-", "+", "LIMIT", 5) == "ERR syntax error"
    assert error(e, "XNODES", "s", "-", "+").startswith("ERR wrong number of arguments")
    assert error(e, "XNODES", "s", "x", "+", "COUNT", 1).startswith("ERR Invalid stream ID")
    call(e, "SET", "k", "v")
    assert error(e, "XNODES", "k", "-", "+", "COUNT", 1) == error(e, "XRANGE", "k", "-", "+")
    assert error(e, "XNODES", "k", "-", "+", "COUNT", 1).startswith("WRONGTYPE")


def test_decoding_garbage_raises() -> None:
    with pytest.raises((ValueError, IndexError, AssertionError)):
        decode_node(Columns(), b"\x0b\x00\x00\x00\x02\x00\xff\x01\xff", 0, 0, 0, 0, MAX, MAX)


def test_a_page_stops_at_max_reply_bytes() -> None:
    e = Engine()
    big = b"v" * (1 << 20)  # each entry outgrows a node: one node per entry
    for i in range(1, 70):
        e.execute([b"XADD", b"s", b"%d-0" % i, b"f", big], now_ms=1000)
    reply = e.execute([b"XNODES", b"s", b"-", b"+", b"COUNT", b"1000"], now_ms=1000).reply
    assert isinstance(reply, list)
    assert sum(map(len, reply[2::2])) >= MAX_REPLY_BYTES > sum(map(len, reply[2:-2:2]))
    assert reply[0] == b"%d-0" % (len(reply) // 2 + 1)  # the next page starts after the last
