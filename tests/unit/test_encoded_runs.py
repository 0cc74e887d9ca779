"""EncodedRun, a forward XRANGE's entries written by the engine in an edge's wire form
(engine/encoded.py): byte for byte what the lists encode to (codec.encode for RESP,
protobuf's serialization of pb.Entries), walked over nodes of every kind (tombstones, entries
with their own fields, integers of every width, long values, big IDs, nodes whose master
fields differ), sliced and joined (slices.read), and framed by the edges (longreply, chunked,
codec.encode, protocol.to_value)."""

from __future__ import annotations

import asyncio
import random
from typing import cast

import pytest

from xstream.engine import Engine, EngineConfig, StreamError, StreamID, encoded, node
from xstream.engine.reply import NULL_ARRAY, EncodedRun, EntryForm, Reply
from xstream.engine.stream import RangeItem, Stream
from xstream.node.slices import Limits, read
from xstream.protocol import to_value
from xstream.server import chunked
from xstream.server.resp import longreply
from xstream.server.resp.codec import encode
from xstream.v1 import xstream_pb2 as pb

MASK64 = (1 << 64) - 1
VALUES = [b"", b"x", b"click", b"x" * 63, b"x" * 64, b"x" * 70, b"x" * 5000, b"0", b"-1"]
VALUES += [b"42", b"127", b"128", b"999", b"1000", b"4095", b"4096", b"-4096", b"-4097"]
VALUES += [b"32767", b"-32768", b"40000", b"9000000", b"-9000000", b"2147483648"]
VALUES += [b"%d" % (1 << 40), b"%d" % -(1 << 62), b"%d" % ((1 << 63) - 1), b"%d" % -(1 << 63)]
VALUES += [b"007", b"abc", b"1e3"]


def mixed(seed: int, n: int = 600) -> Engine:
    """Mixed field sets (nodes whose master fields differ, entries with their own), integers
    of every width, tombstones, node limits that split, sequence numbers past 1,000."""
    rng = random.Random(seed)
    e = Engine(EngineConfig(rng.choice([4096, 300]), rng.choice([100, 7])))
    ms = 1000
    for _ in range(n):
        step = rng.choice([0, 0, 1, 5000, 200000])
        ms += step
        fields = rng.choice([[b"a", b"b"], [b"a"], [b"1", b"b"], [b"x", b"y", b"z"], [b"a", b"b"]])
        fv = [x for f in fields for x in (f, rng.choice(VALUES))]
        seq = b"%d" % rng.choice([1234, 10**15]) if step and rng.random() < 0.3 else b"*"
        e.execute([b"XADD", b"s", b"%d-%b" % (ms, seq), *fv])
        if rng.random() < 0.15:
            e.execute([b"XDEL", b"s", b"%d-%d" % (ms - rng.randint(0, 300), rng.randint(0, 3))])
    return e


def resp_of(run: EncodedRun) -> bytes:
    """The RESP array of an EncodedRun("resp"), as the edges frame it."""
    assert run.form == "resp"
    return b"*%d%b\r\n" % (run.count, b"".join(run.pieces))


def message_of(entries: Reply) -> bytes:
    """pb.Entries of a list of entries, as protobuf serializes it (b"" for none)."""
    return to_value(entries).entries.SerializeToString() if entries else b""


def walk(s: Stream, start: StreamID, end: StreamID, limit: int, form: EntryForm) -> EncodedRun:
    return s.range_encoded(start, end, limit, form)


@pytest.mark.parametrize("seed", range(4))
def test_the_encoded_walk_writes_what_collect_gives(seed: int) -> None:
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
        walks = {form: encoded.EncodedWalk(form, limit) for form in ("resp", "protobuf")}
        for master, lpb in nodes:
            stop = node.collect(lpb, master, start, end, want, limit)
            for w in walks.values():
                assert w.node(lpb, master, start, end) == stop
            if stop:
                break
        entries = cast(list[Reply], want)
        runs = {form: w.finish() for form, w in walks.items()}
        assert resp_of(runs["resp"]) == encode(entries, 2) == encode(entries, 3)
        assert b"".join(runs["protobuf"].pieces) == message_of(entries)
        for run in runs.values():
            assert run.count == len(want) and run.size == node.payload_size(want)
            assert run.last_id == (want[-1][0] if want else b"")
            again = walk(s, start, end, limit, run.form)
            assert (again.pieces, again.count, again.size) == (run.pieces, run.count, run.size)


def test_execute_gives_encoded_runs_for_a_forward_xrange_only() -> None:
    e = mixed(1)
    for argv in ([b"XRANGE", b"s", b"-", b"+"], [b"XRANGE", b"s", b"(2000", b"+", b"COUNT", b"9"]):
        lists = e.execute(argv, 1).reply
        assert isinstance(lists, list)
        resp = e.execute(argv, 1, entries="resp").reply
        message = e.execute(argv, 1, entries="protobuf").reply
        assert isinstance(resp, EncodedRun) and isinstance(message, EncodedRun)
        assert resp_of(resp) == encode(lists)
        assert b"".join(message.pieces) == message_of(lists)
    for form in ("resp", "protobuf"):
        reverse = [b"XREVRANGE", b"s", b"+", b"-"]
        assert e.execute(reverse, 1, entries=form).reply == e.execute(reverse, 1).reply
        assert e.execute([b"XRANGE", b"nokey", b"-", b"+"], 1, entries=form).reply == []
        count0 = [b"XRANGE", b"s", b"-", b"+", b"COUNT", b"0"]
        assert e.execute(count0, 1, entries=form).reply is NULL_ARRAY
        empty = e.execute([b"XRANGE", b"s", b"+", b"-"], 1, entries=form).reply
        assert isinstance(empty, EncodedRun) and not empty and empty.pieces == []


@pytest.mark.parametrize("form", ["resp", "protobuf"])
def test_a_sliced_read_joins_encoded_runs(form: EntryForm) -> None:
    e = mixed(2)
    limits = Limits(slice_entries=50)

    def run(argv: list[bytes]) -> Reply:
        return e.execute(argv, 2, entries=form).reply

    for argv in (
        [b"XRANGE", b"s", b"-", b"+"],
        [b"XRANGE", b"s", b"(5000", b"+", b"COUNT", b"133"],
    ):
        got = asyncio.run(read(e, 0, run, argv, limits))
        lists = e.execute(argv, 2).reply
        assert isinstance(got, EncodedRun) and isinstance(lists, list)
        assert len(got.pieces) > 1 and got.count == len(lists)
        assert got.size == node.payload_size(cast(list[RangeItem], lists))
        if form == "resp":
            assert resp_of(got) == encode(lists)
        else:
            assert pb.Entries.FromString(b"".join(got.pieces)) == to_value(lists).entries
    small = Limits(slice_entries=50, max_reply_bytes=10_000)
    with pytest.raises(StreamError, match="exceeds max-reply-bytes"):
        asyncio.run(read(e, 0, run, [b"XRANGE", b"s", b"-", b"+"], small))


@pytest.mark.parametrize("proto", [2, 3])
def test_the_edges_frame_an_encoded_run_as_its_lists(proto: int) -> None:
    e = mixed(5, 3000)
    argv = [b"XRANGE", b"s", b"-", b"+"]
    lists = e.execute(argv, 1).reply
    resp = e.execute(argv, 1, entries="resp").reply
    message = e.execute(argv, 1, entries="protobuf").reply
    assert isinstance(resp, EncodedRun) and isinstance(message, EncodedRun)
    assert longreply.is_long(resp) and chunked.is_long(message)
    whole = encode(lists, proto)
    assert b"".join(asyncio.run(longreply.encode_long(resp, proto))) == whole
    assert encode(resp, proto) == whole
    short = e.execute([*argv, b"COUNT", b"3"], 1, entries="resp").reply
    assert encode(short, proto) == encode(e.execute([*argv, b"COUNT", b"3"], 1).reply, proto)
    assert encode(EncodedRun("resp"), proto) == encode([], proto)
    raw = asyncio.run(chunked.reply(message, 42))
    assert raw == pb.Reply(value=to_value(lists), offset=42).SerializeToString()
    assert to_value(message) == to_value(lists)
    assert to_value(EncodedRun("protobuf")) == to_value([])


def test_ids_past_the_digit_tables_and_the_largest_id() -> None:
    e = Engine()
    ids = [e.execute([b"XADD", b"s", b"5-*", b"f", b"v"]).reply for _ in range(1100)]
    top = b"18446744073709551615-18446744073709551615"
    e.execute([b"XADD", b"s", b"%d-1" % MASK64, b"f", b"v"])
    e.execute([b"XADD", b"s", top, b"f", b"-9223372036854775808"])
    for start in (b"-", b"5-999", b"18446744073709551615-0"):
        argv = [b"XRANGE", b"s", start, b"+"]
        lists = e.execute(argv, 1).reply
        assert isinstance(lists, list) and lists[-1][0] == top  # type: ignore[index]
        resp = e.execute(argv, 1, entries="resp").reply
        message = e.execute(argv, 1, entries="protobuf").reply
        assert isinstance(resp, EncodedRun) and isinstance(message, EncodedRun)
        assert resp_of(resp) == encode(lists)
        assert b"".join(message.pieces) == message_of(lists)
        assert resp.last_id == message.last_id == top
    assert ids[-1] == b"5-1099"


def test_large_shapes_are_framed_field_by_field_and_never_kept() -> None:
    """A shape's heads copy its fields (up to one per value length): a long field, or many,
    would let stored data grow the tables; such entries are framed one by one."""
    e = Engine()
    shapes = {b"s": [b"f" * 300], b"t": [b"f%d" % i for i in range(17)], b"u": [b"a", b"b"]}
    for key, fields in shapes.items():
        for value in (b"1", b"22", b"x" * 70, b"300", b"-5"):
            e.execute([b"XADD", key, b"*", *[x for f in fields for x in (f, value)]])
    encoded._SHAPES.clear()
    for key in shapes:
        argv = [b"XRANGE", key, b"-", b"+"]
        lists = e.execute(argv, 1).reply
        resp = e.execute(argv, 1, entries="resp").reply
        message = e.execute(argv, 1, entries="protobuf").reply
        assert isinstance(resp, EncodedRun) and isinstance(message, EncodedRun)
        assert resp_of(resp) == encode(lists)
        assert b"".join(message.pieces) == message_of(lists)
    assert sorted(encoded._SHAPES) == [(False, (b"a", b"b")), (True, (b"a", b"b"))]


def test_long_entries_past_the_framing_tables() -> None:
    """An entry of 1,200 fields and values (its count past the varint and header tables), as
    master fields and as its own, a field of 2,000 bytes, and runs of one entry."""
    e = Engine()
    wide = [x for i in range(600) for x in (b"f%d" % i, b"%d" % (i * 7919 - 2000))]
    e.execute([b"XADD", b"s", b"1-1", *wide])
    e.execute([b"XADD", b"s", b"1-2", *wide])
    e.execute([b"XADD", b"s", b"1-3", b"k" * 2000, b"v" * 3000, b"e", b""])
    e.execute([b"XADD", b"s", b"1-4", *wide[:1198], b"other", b"1"])
    for start, end in ((b"-", b"+"), (b"1-3", b"1-3"), (b"1-2", b"1-2"), (b"1-4", b"+")):
        argv = [b"XRANGE", b"s", start, end]
        lists = e.execute(argv, 1).reply
        resp = e.execute(argv, 1, entries="resp").reply
        message = e.execute(argv, 1, entries="protobuf").reply
        assert isinstance(resp, EncodedRun) and isinstance(message, EncodedRun)
        assert resp_of(resp) == encode(lists)
        assert b"".join(message.pieces) == message_of(lists)
