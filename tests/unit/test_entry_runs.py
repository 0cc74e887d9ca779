"""EntryRun, the flat form of XRANGE's entries (engine/reply.py): the engine's walk into it
(node.collect_run) against collect, a sliced read joined in it, and its RESP encoding
(codec, longreply) and protobuf (protocol, chunked) against the lists' encodings."""

from __future__ import annotations

import asyncio
import random

import pytest

from xstream.engine import Engine, EngineConfig, StreamError, StreamID, node
from xstream.engine.reply import EntryRun, Reply
from xstream.engine.stream import RangeItem, Stream
from xstream.node.slices import Limits, read
from xstream.protocol import to_value
from xstream.server import chunked
from xstream.server.resp import longreply
from xstream.server.resp.codec import encode, encode_run_items
from xstream.v1 import xstream_pb2 as pb

MASK64 = (1 << 64) - 1


def mixed(seed: int, n: int = 600) -> Engine:
    """Mixed field sets, integers of every width, tombstones, node limits that split."""
    rng = random.Random(seed)
    e = Engine(EngineConfig(rng.choice([4096, 300]), rng.choice([100, 7])))
    ms = 1000
    values = [b"", b"x", b"x" * 70, b"x" * 5000, b"-1", b"127", b"4095", b"40000", b"9000000"]
    values += [b"%d" % (1 << 40), b"%d" % -(1 << 62), b"007", b"abc"]
    for _ in range(n):
        ms += rng.choice([0, 0, 1, 5000, 200000])
        fields = rng.choice([[b"a", b"b"], [b"a"], [b"1", b"b"], [b"x", b"y", b"z"]])
        fv = [x for f in fields for x in (f, rng.choice(values))]
        e.execute([b"XADD", b"s", b"%d-*" % ms, *fv])
        if rng.random() < 0.15:
            e.execute([b"XDEL", b"s", b"%d-%d" % (ms - rng.randint(0, 300), rng.randint(0, 3))])
    return e


@pytest.mark.parametrize("seed", range(4))
def test_collect_run_holds_what_collect_gives(seed: int) -> None:
    s = mixed(seed).keyspace.get(b"s")
    assert isinstance(s, Stream)
    rng = random.Random(seed)
    nodes = [(StreamID.from_key(k), lpb) for k, lpb in s.nodes()]
    for _ in range(30):
        a, b = sorted(rng.randrange(990 << 64, 50_000_000 << 64) for _ in range(2))
        lo, hi = (0, (1 << 128) - 1) if rng.random() < 0.3 else (a, b)
        limit = rng.choice([0, 1, 5, 50])
        start, end = StreamID(lo >> 64, lo & MASK64), StreamID(hi >> 64, hi & MASK64)
        want: list[RangeItem] = []
        run = EntryRun()
        for master, lpb in nodes:
            stop = node.collect(lpb, master, start, end, want, limit)
            assert node.collect_run(lpb, master, start, end, run, limit) == stop
            if stop:
                break
        assert run.entries() == want
        assert run.size == node.payload_size(want)
        assert s.range_run(start, end, limit).entries() == s.range(start, end, limit)


def test_execute_gives_runs_for_a_forward_xrange_only_when_asked() -> None:
    e = mixed(1)
    for argv in ([b"XRANGE", b"s", b"-", b"+"], [b"XRANGE", b"s", b"(2000", b"+", b"COUNT", b"9"]):
        lists = e.execute(argv, 1).reply
        run = e.execute(argv, 1, entries="run").reply
        assert isinstance(lists, list) and isinstance(run, EntryRun)
        assert run.entries() == lists
    reverse = [b"XREVRANGE", b"s", b"+", b"-"]
    assert e.execute(reverse, 1, entries="run").reply == e.execute(reverse, 1).reply
    assert e.execute([b"XRANGE", b"nokey", b"-", b"+"], 1, entries="run").reply == []


def test_a_sliced_read_joins_runs_into_a_run() -> None:
    e = mixed(2)
    limits = Limits(slice_entries=50)

    def run(argv: list[bytes]) -> Reply:
        return e.execute(argv, 2, entries="run").reply

    for argv in (
        [b"XRANGE", b"s", b"-", b"+"],
        [b"XRANGE", b"s", b"(5000", b"+", b"COUNT", b"133"],
    ):
        got = asyncio.run(read(e, 0, run, argv, limits))
        assert isinstance(got, EntryRun)
        assert got.entries() == e.execute(argv, 2).reply
        assert got.size == node.payload_size(e.execute(argv, 2).reply)  # type: ignore[arg-type]
    small = Limits(slice_entries=50, max_reply_bytes=10_000)
    with pytest.raises(StreamError, match="exceeds max-reply-bytes"):
        asyncio.run(read(e, 0, run, [b"XRANGE", b"s", b"-", b"+"], small))


@pytest.mark.parametrize("proto", [2, 3])
def test_a_run_encodes_as_its_lists(proto: int) -> None:
    entries = mixed(3, 3000).execute([b"XRANGE", b"s", b"-", b"+"], 1).reply
    assert isinstance(entries, list) and longreply.is_long(entries)
    whole = encode(entries, proto)
    assert encode(EntryRun.of(entries), proto) == whole
    assert encode(EntryRun(), proto) == encode([], proto)
    run = EntryRun.of(entries)
    items, at = encode_run_items(run, 0, 10, 0)
    assert at == sum(run.counts[:10])
    assert encode(entries[:10], proto).split(b"\r\n", 1)[1] == items
    consumed = EntryRun.of(entries)
    assert longreply.is_long(consumed)
    assert b"".join(asyncio.run(longreply.encode_long(consumed, proto))) == whole
    assert set(consumed.ids) == {b""}  # released as encoded


@pytest.mark.parametrize("proto", [2, 3])
def test_an_engine_run_encodes_as_its_lists(proto: int) -> None:
    """The engine's runs carry shapes (the master fields of nearly every entry; () for
    entries with their own fields): encoded whole, in pieces and by longreply, as the
    lists encode; values past the shapes' cached lengths (70 and 5,000 bytes) included."""
    e = mixed(5, 3000)
    argv = [b"XRANGE", b"s", b"-", b"+"]
    entries = e.execute(argv, 1).reply
    run = e.execute(argv, 1, entries="run").reply
    assert isinstance(entries, list) and isinstance(run, EntryRun)
    assert {len(s) for s in run.shapes} >= {0, 1, 2, 3}  # shaped and unshaped entries
    at = 0
    for fields, n in zip(run.shapes, run.counts, strict=True):
        assert not fields or run.elements[at : at + n : 2] == list(fields)
        assert not fields or n == 2 * len(fields)
        at += n
    assert encode(run, proto) == encode(entries, proto)
    for first, last in ((0, 1), (7, 400), (1000, len(run))):
        items, at = encode_run_items(run, first, last, sum(run.counts[:first]))
        assert at == sum(run.counts[:last])
        assert items == encode(entries[first:last], proto).split(b"\r\n", 1)[1]
    assert b"".join(asyncio.run(longreply.encode_long(run, proto))) == encode(entries, proto)


def test_a_run_in_protobuf_is_its_lists_message() -> None:
    entries = mixed(4, 3000).execute([b"XRANGE", b"s", b"-", b"+"], 1).reply
    assert isinstance(entries, list) and chunked.is_long(entries)
    assert to_value(EntryRun.of(entries)) == to_value(entries)
    assert to_value(EntryRun.of(entries[:3])) == to_value(entries[:3])
    assert to_value(EntryRun()) == to_value([])
    raw = asyncio.run(chunked.reply(EntryRun.of(entries), 42))
    assert pb.Reply.FromString(raw) == pb.Reply(value=to_value(entries), offset=42)


def test_repeated_elements_and_long_entries_encode_as_lists() -> None:
    """Shared objects, equal bytes in other objects, long and short entries, empty values:
    a run encodes as its lists."""
    shared = [b"f%d" % i for i in range(12)]
    entries: list[Reply] = []
    for i in range(40):
        fv: list[bytes] = []
        for j, f in enumerate(shared[: 1 + i % 12]):
            fv += [f if i % 3 else bytes(f), b"" if j % 2 else b"%d" % (i // 4)]
        entries.append([b"%d-%d" % (i, j), fv])
    for proto in (2, 3):
        assert encode(EntryRun.of(entries), proto) == encode(entries, proto)


@pytest.mark.parametrize("proto", [2, 3])
def test_long_arrays_big_values_and_single_entries_encode_as_lists(proto: int) -> None:
    """Headers past the prebuilt tables (1,200 elements, a 3,000-byte value), a run of one
    entry, and an empty piece: as the lists encode."""
    entries: list[Reply] = [
        [b"1-1", [b"f%d" % i for i in range(1200)]],
        [b"18446744073709551615-18446744073709551615", [b"k", b"v" * 3000, b"e", b""]],
    ]
    run = EntryRun.of(entries)
    assert encode(run, proto) == encode(entries, proto)
    assert encode(EntryRun.of(entries[1:]), proto) == encode(entries[1:], proto)
    assert encode_run_items(run, 1, 1, 1200) == (b"", 1200)
    items, at = encode_run_items(run, 1, 2, 1200)
    assert at == 1204
    assert encode(entries[1:], proto).split(b"\r\n", 1)[1] == items


def test_ids_past_the_seven_bit_sequence_table() -> None:
    """Sequence numbers from 0 to 299 in one millisecond, and the largest ID: each entry's ID
    as XADD gave it, in lists and in a run."""
    e = Engine()
    ids = [e.execute([b"XADD", b"s", b"5-*", b"f", b"v"]).reply for _ in range(300)]
    assert ids == [b"5-%d" % seq for seq in range(300)]
    top = b"18446744073709551615-18446744073709551615"
    assert e.execute([b"XADD", b"s", top, b"f", b"v"]).reply == top
    for start, first in ((b"-", 0), (b"5-100", 100)):
        argv = [b"XRANGE", b"s", start, b"+"]
        lists = e.execute(argv, 1).reply
        run = e.execute(argv, 1, entries="run").reply
        assert isinstance(lists, list) and isinstance(run, EntryRun)
        assert [item[0] for item in lists] == [*ids[first:], top]  # type: ignore[index]
        assert run.ids == [item[0] for item in lists]  # type: ignore[index]


@pytest.mark.parametrize("proto", [2, 3])
def test_large_shapes_are_framed_as_unshaped_and_never_kept(proto: int) -> None:
    """A shape's parts copy its fields (up to one per value length): a long field, or many,
    would let stored data grow the codec's tables; such entries are framed one by one."""
    from xstream.server.resp import codec  # noqa: PLC0415 (its table, looked at here only)

    e = Engine()
    shapes = {b"s": [b"f" * 300], b"t": [b"f%d" % i for i in range(17)], b"u": [b"a", b"b"]}
    for key, fields in shapes.items():
        for value in (b"1", b"22", b"x" * 70):
            e.execute([b"XADD", key, b"*", *[x for f in fields for x in (f, value)]])
    codec._SHAPE_HEADS.clear()
    for key, fields in shapes.items():
        argv = [b"XRANGE", key, b"-", b"+"]
        run = e.execute(argv, 1, entries="run").reply
        assert isinstance(run, EntryRun) and run.shapes[0] == tuple(fields)
        assert encode(run, proto) == encode(e.execute(argv, 1).reply, proto)
    assert list(codec._SHAPE_HEADS) == [(b"a", b"b")]
