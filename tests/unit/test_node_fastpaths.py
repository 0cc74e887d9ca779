"""The inlined hot paths of listpack.py and node.py against their plain definitions:
encode_entry, put_element and encode_str against lpStringToInt64 + encode_int,
get_bytes/read_int against get, int_size against encode_int, and node.collect against a walk
over decode_all."""

from __future__ import annotations

import random

import pytest

from xstream.engine import Engine, EngineConfig, StreamID, node
from xstream.engine import listpack as lp
from xstream.engine.stream import RangeItem, Stream

MASK64 = (1 << 64) - 1
BOUNDS = [0, 127, 4095, 32767, 8388607, 2147483647, (1 << 63) - 1]
INTS = sorted({v for b in BOUNDS for v in (b - 1, b, b + 1, -b - 1, -b, -b - 2)})
INTS = [v for v in INTS if -(1 << 63) <= v < (1 << 63)]
STRINGS = [
    *(b"%d" % v for v in INTS),
    *(b"%d" % v for v in (99999, 100000, 9999, 10000)),
    *(b"9" * n for n in (19, 20, 21)),
    b"9223372036854775808",
    b"-9223372036854775809",
    b"",
    b"00",
    b"01",
    b"007",
    b"000012345678",
    b"-0",
    b"-",
    b"+5",
    b" 5",
    b"5 ",
    b"12a",
    b"1:",
    b"1/",
    b"9999a",
    b"12345678901a",
    b"123456789012",
    b"123456789012345678",
    b"-123456789012",
    b"a12",
    b":",
    b"/",
    b"\x00",
    b"\xff",
    b"u123456",
    b"123456789012",  # put_element reads up to 18 digits itself
    b"9" * 18,
    b"1" + b"0" * 18,
    b"1.5",
    b"4-2",
    b"12345678901234567x",
    *(b"x" * n for n in (1, 62, 63, 64, 126, 127, 128, 4094, 4095, 4096, 20000)),
    *(b"1" * n for n in (62, 63, 64)),
]


def encode_str_by_definition(s: bytes) -> bytes:
    """lpAppend's choice, written plainly: an integer if lpStringToInt64 accepts `s`."""
    v = lp._as_int64(s)
    if v is not None:
        return lp.encode_int(v)
    n = len(s)
    if n < 64:
        return bytes([0x80 | n]) + s + bytes([n + 1])
    if n < 4096:
        return bytes([0xE0 | n >> 8, n & 0xFF]) + s + lp._backlen(n + 2)
    return b"\xf0" + n.to_bytes(4, "little") + s + lp._backlen(n + 5)


@pytest.mark.parametrize("s", STRINGS)
def test_encode_str_put_element_and_encode_entry_follow_the_definition(s: bytes) -> None:
    want = encode_str_by_definition(s)
    assert lp.encode_str(s) == want
    pieces: list[bytes] = []
    assert node.put_element(pieces, s) == len(want)
    assert b"".join(pieces) == want
    i = lp.encode_int
    master, eid = StreamID(5, 0), StreamID(5, 1)
    same = node.encode_entry(eid, master, [b"f", s, b"g", s], samefields=True)
    assert same == (i(node.FLAG_SAMEFIELDS) + i(0) + i(1) + want + want + i(5) + lp.END, 6)
    other = node.encode_entry(eid, master, [s, s], samefields=False)
    assert other == (i(0) + i(0) + i(1) + i(1) + want + want + i(6) + lp.END, 7)


@pytest.mark.parametrize("v", INTS)
def test_int_size_is_the_encoded_size(v: int) -> None:
    assert lp.int_size(v) == len(lp.encode_int(v))


def test_get_bytes_and_read_int_agree_with_get() -> None:
    buf = bytes(lp.build([*INTS, *STRINGS]))
    pos = lp.HEADER_SIZE
    while buf[pos] != lp.EOF_BYTE:
        v, nxt = lp.get(buf, pos)
        assert lp.get_bytes(buf, pos) == (v if isinstance(v, bytes) else b"%d" % v, nxt)
        if isinstance(v, int):
            assert lp.read_int(buf, pos) == (v, nxt)
        pos = nxt


def collect_by_decode_all(
    lpb: bytearray, master: StreamID, lo: int, hi: int, out: list[RangeItem], limit: int
) -> bool:
    """The pre-optimisation node walk: decode every element, then slice entries out."""
    els = lp.decode_all(lpb)
    nf = els[2]
    assert isinstance(nf, int)
    mf = [f if isinstance(f, bytes) else b"%d" % f for f in els[3 : 3 + nf]]
    i = 4 + nf
    while i < len(els):
        flags, msd, sqd = els[i : i + 3]
        assert isinstance(flags, int) and isinstance(msd, int) and isinstance(sqd, int)
        if flags & node.FLAG_SAMEFIELDS:
            j = i + 3 + nf
            raw = [x for pair in zip(mf, els[i + 3 : j], strict=True) for x in pair]
        else:
            n = els[i + 3]
            assert isinstance(n, int)
            j = i + 4 + 2 * n
            raw = els[i + 4 : j]
        ms, seq = (master.ms + msd) & MASK64, (master.seq + sqd) & MASK64
        if (ms << 64 | seq) > hi:
            return True
        if (ms << 64 | seq) >= lo and not flags & node.FLAG_DELETED:
            fv = [v if isinstance(v, bytes) else b"%d" % v for v in raw]
            out.append([b"%d-%d" % (ms, seq), fv])
            if len(out) == limit:
                return True
        i = j + 1
    return False


def messy_stream(seed: int) -> Engine:
    """Mixed field sets, numbers and strings, tombstones, negative seq-diffs."""
    rng = random.Random(seed)
    e = Engine(EngineConfig(rng.choice([4096, 300, 0]), rng.choice([100, 7, 0])))
    ms = 1000
    for _ in range(600):
        ms += rng.choice([0, 0, 1, 200])
        fields = rng.choice([[b"a", b"b"], [b"a"], [b"1", b"b"], [b"x", b"y", b"z"]])
        fv = [x for f in fields for x in (f, rng.choice(STRINGS[:-1]))]
        e.execute([b"XADD", b"s", b"%d-*" % ms, *fv])
        if rng.random() < 0.15:
            e.execute([b"XDEL", b"s", b"%d-%d" % (ms - rng.randint(0, 300), rng.randint(0, 3))])
    return e


@pytest.mark.parametrize("seed", range(6))
def test_collect_matches_a_decode_all_walk(seed: int) -> None:
    s = messy_stream(seed).keyspace.get(b"s")
    assert isinstance(s, Stream)
    rng = random.Random(seed)
    nodes = [(StreamID.from_key(k), lpb) for k, lpb in s.nodes()]
    for _ in range(40):
        a, b = sorted(rng.randrange(1 << 74) for _ in range(2))
        lo, hi = (0, (1 << 128) - 1) if rng.random() < 0.2 else (a, b)
        limit = rng.choice([0, 1, 5, 50])
        got: list[RangeItem] = []
        want: list[RangeItem] = []
        start, end = StreamID(lo >> 64, lo & MASK64), StreamID(hi >> 64, hi & MASK64)
        for master, lpb in nodes:
            stop = node.collect(lpb, master, start, end, got, limit)
            assert stop == collect_by_decode_all(lpb, master, lo, hi, want, limit)
            assert got == want
            if stop:
                break


def test_collect_ids_whose_deltas_wrap_around_2_64() -> None:
    # Deltas from the master are stored modulo 2**64 as int64: these wrap below zero.
    e = Engine()
    for eid in (b"1-1", b"1-18446744073709551615", b"18446744073709551614-5", b"%d-0" % MASK64):
        e.execute([b"XADD", b"s", eid, b"f", b"v"])
    s = e.keyspace.get(b"s")
    assert isinstance(s, Stream)
    ((key, lpb),) = s.nodes()  # one node
    master = StreamID.from_key(key)
    for lo, hi in [(0, (1 << 128) - 1), (1 << 64 | 2, MASK64 << 64), (MASK64 << 64, MASK64 << 64)]:
        got: list[RangeItem] = []
        want: list[RangeItem] = []
        start, end = StreamID(lo >> 64, lo & MASK64), StreamID(hi >> 64, hi & MASK64)
        assert node.collect(lpb, master, start, end, got, 0) == collect_by_decode_all(
            lpb, master, lo, hi, want, 0
        )
        assert got == want and got
