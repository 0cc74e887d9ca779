"""Sliced reads (xstream/node/slices.py) and chunked replies (xstream/server/chunked.py): the
joined slices are the reply one engine call gives, a point in time even with writers running
between two slices, bounded by max-reply-bytes; the chunked bytes parse as the message built
whole."""

from __future__ import annotations

import asyncio
import random

import pytest

from xstream.engine import Engine, EngineConfig, StreamError
from xstream.engine.reply import PairMap, Reply
from xstream.node.slices import Limits, _Budget, read, reply_size, slices_for
from xstream.protocol import to_value
from xstream.server import chunked, wire
from xstream.v1 import xstream_pb2 as pb

SMALL = Limits(slice_entries=50)


def filled(n: int = 1000, keys: tuple[bytes, ...] = (b"s",)) -> Engine:
    e = Engine(EngineConfig(512, 10))
    rng = random.Random(7)
    for i in range(1, n + 1):
        for key in keys:
            fields = [b"f%d" % j for j in range(rng.randint(1, 3))]
            argv = [b"XADD", key, b"%d-%d" % (i // 3 + 1, i % 3)]
            for f in fields:
                argv += [f, b"v%d" % rng.randint(0, 1 << 40)]
            e.execute(argv, 1)
    for i in range(5, n, 17):  # tombstones inside nodes
        e.execute([b"XDEL", keys[0], b"%d-%d" % (i // 3 + 1, i % 3)], 1)
    return e


def runner(e: Engine, calls: list[list[bytes]] | None = None) -> object:
    def run(argv: list[bytes]) -> Reply:
        if calls is not None:
            calls.append(argv)
        return e.execute(argv, 2).reply

    return run


READS = [
    [b"XRANGE", b"s", b"-", b"+"],
    [b"XREVRANGE", b"s", b"+", b"-"],
    [b"XRANGE", b"s", b"10", b"200"],
    [b"XRANGE", b"s", b"(10-1", b"(200-0"],
    [b"XREVRANGE", b"s", b"(300", b"12-2"],
    [b"XRANGE", b"s", b"-", b"+", b"COUNT", b"333"],
    [b"XREVRANGE", b"s", b"+", b"-", b"count", b"51"],
    [b"XRANGE", b"missing", b"-", b"+"],
    [b"XRANGE", b"s", b"500", b"100"],
    [b"XREAD", b"STREAMS", b"s", b"t", b"0", b"0"],
    [b"XREAD", b"STREAMS", b"s", b"s", b"t", b"100-0", b"0", b"$"],
    [b"XREAD", b"COUNT", b"120", b"STREAMS", b"s", b"t", b"0", b"7"],
    [b"xread", b"streams", b"s", b"+"],
    [b"XREAD", b"STREAMS", b"s", b"t", b"$", b"$"],
]


@pytest.mark.parametrize("argv", READS, ids=lambda a: b" ".join(a).decode())
def test_slices_join_into_the_one_call_reply(argv: list[bytes]) -> None:
    e = filled(keys=(b"s", b"t"))
    assert slices_for(argv, SMALL)
    calls: list[list[bytes]] = []
    got = asyncio.run(read(e, 0, runner(e, calls), argv, SMALL))
    assert got == e.execute(argv, 2).reply
    assert type(got) is type(e.execute(argv, 2).reply)
    if argv[1:2] == [b"s"] and argv[-1] in (b"+", b"-"):
        assert len(calls) > 5  # it was really sliced


def test_what_is_not_sliced() -> None:
    for argv in (
        [b"XRANGE", b"s", b"-", b"+", b"COUNT", b"10"],
        [b"XRANGE", b"s", b"-", b"+", b"COUNT", b"0"],
        [b"XRANGE", b"s", b"-", b"+", b"COUNT", b"-70"],
        [b"XRANGE", b"s", b"-", b"+", b"COUNT", b"99999999999999999999"],
        [b"XRANGE", b"s", b"-", b"+", b"COUNT", b" 7000"],
        [b"XREAD", b"COUNT", b"1e9", b"STREAMS", b"s", b"0"],
        [b"XREAD", b"COUNT", b"10", b"STREAMS", b"s", b"0"],
        [b"XREAD", b"BLOCK", b"0", b"STREAMS", b"s", b"0"],
        [b"XRANGE", b"s", b"-", b"+", b"COUNT"],
        [b"XREADGROUP", b"GROUP", b"g", b"c", b"STREAMS", b"s", b">"],
        [b"XLEN", b"s"],
    ):
        assert not slices_for(argv, SMALL), argv


def test_errors_are_the_engines() -> None:
    e = filled(10)
    for argv in ([b"XRANGE", b"s", b"nope", b"+"], [b"XREAD", b"STREAMS", b"s", b">"]):
        with pytest.raises(StreamError) as sliced:
            asyncio.run(read(e, 0, runner(e), argv, SMALL))
        with pytest.raises(StreamError) as whole:
            e.execute(argv, 2)
        assert sliced.value.line == whole.value.line


async def _between_slices(e: Engine, argv: list[bytes], write: list[list[bytes]]) -> Reply:
    """Run the sliced read with `write` applied after its first slice."""
    calls: list[list[bytes]] = []
    task = asyncio.ensure_future(read(e, 0, runner(e, calls), argv, SMALL))
    while not calls:
        await asyncio.sleep(0)
    for w in write:
        e.execute(w, 3)
    return await task


def test_appends_between_slices_are_left_out() -> None:
    e = filled()
    adds = [[b"XADD", b"s", b"*", b"late", b"%d" % i] for i in range(100)]
    for argv in ([b"XRANGE", b"s", b"-", b"+"], [b"XREAD", b"STREAMS", b"s", b"0"]):
        before = e.execute([b"XRANGE", b"s", b"-", b"+"], 2).reply
        got = asyncio.run(_between_slices(e, argv, adds))
        entries = got if argv[0] == b"XRANGE" else got[0][1]  # type: ignore[index]
        assert entries == before


def test_a_removal_ahead_of_the_read_starts_it_again() -> None:
    e = filled()
    far = e.execute([b"XRANGE", b"s", b"-", b"+"], 2).reply[-3][0]  # type: ignore[index]
    got = asyncio.run(_between_slices(e, [b"XRANGE", b"s", b"-", b"+"], [[b"XDEL", b"s", far]]))
    assert got == e.execute([b"XRANGE", b"s", b"-", b"+"], 2).reply  # after the XDEL
    assert far not in [x[0] for x in got]  # type: ignore[union-attr, index]


def test_a_removal_behind_the_read_does_not_change_its_point_in_time() -> None:
    e = filled()
    before = e.execute([b"XRANGE", b"s", b"-", b"+"], 2).reply
    trim = [[b"XTRIM", b"s", b"MAXLEN", b"900"]]
    got = asyncio.run(_between_slices(e, [b"XRANGE", b"s", b"-", b"+"], trim))
    assert got == before  # the trimmed head was read before it went


def test_a_trim_ahead_of_a_reverse_read_starts_it_again() -> None:
    e = filled()
    trim = [[b"XTRIM", b"s", b"MAXLEN", b"500"]]
    got = asyncio.run(_between_slices(e, [b"XREVRANGE", b"s", b"+", b"-"], trim))
    assert got == e.execute([b"XREVRANGE", b"s", b"+", b"-"], 2).reply


def test_the_key_replaced_starts_it_again() -> None:
    e = filled()
    write = [[b"DEL", b"s"]] + [[b"XADD", b"s", b"%d-1" % i, b"x", b"y"] for i in range(1, 301)]
    got = asyncio.run(_between_slices(e, [b"XRANGE", b"s", b"-", b"+"], write))
    assert got == e.execute([b"XRANGE", b"s", b"-", b"+"], 2).reply
    assert len(got) == 300  # type: ignore[arg-type]


def test_stale_twice_runs_once_atomically() -> None:
    e = filled()
    calls: list[list[bytes]] = []
    deleted = iter(e.execute([b"XREVRANGE", b"s", b"+", b"-"], 2).reply)  # type: ignore[arg-type]

    def run(argv: list[bytes]) -> Reply:
        calls.append(argv)
        reply = e.execute(argv, 2).reply
        e.execute([b"XDEL", b"s", next(deleted)[0]], 3)  # type: ignore[index]
        return reply

    got = asyncio.run(read(e, 0, run, [b"XRANGE", b"s", b"-", b"+"], SMALL))
    assert calls[-1] == [b"XRANGE", b"s", b"-", b"+"]
    assert len(got) == e.execute([b"XLEN", b"s"], 2).reply + 1  # type: ignore[arg-type, operator]


def test_max_reply_bytes_refuses_a_long_reply() -> None:
    e = filled()
    limits = Limits(slice_entries=50, max_reply_bytes=10_000)
    for argv in ([b"XRANGE", b"s", b"-", b"+"], [b"XREAD", b"STREAMS", b"s", b"0"]):
        with pytest.raises(StreamError, match=r"exceeds max-reply-bytes \(10000 bytes\): read it"):
            asyncio.run(read(e, 0, runner(e), argv, limits))
    short = asyncio.run(read(e, 0, runner(e), [b"XRANGE", b"s", b"-", b"5"], limits))
    assert short == e.execute([b"XRANGE", b"s", b"-", b"5"], 2).reply
    assert not e.keyspace.stream(b"s").watches  # type: ignore[union-attr]


def test_proto_max_bulk_len() -> None:
    limits = Limits(proto_max_bulk_len=10)
    limits.check_args([b"XADD", b"s", b"*", b"f", b"0123456789"])
    with pytest.raises(StreamError, match=r"^ERR Protocol error: invalid bulk length \(11 bytes"):
        limits.check_args([b"XADD", b"s", b"*", b"f", b"0123456789!"])


def _copy(reply: Reply) -> Reply:
    if isinstance(reply, PairMap):
        return PairMap([[k, list(v)] for k, v in reply])  # type: ignore[arg-type]
    return list(reply)  # type: ignore[arg-type]


def test_chunked_bytes_parse_as_the_whole_message() -> None:
    e = filled(5000, keys=(b"s", b"t"))
    whole = e.execute([b"XRANGE", b"s", b"-", b"+"], 2).reply
    assert chunked.is_long(whole)
    raw = asyncio.run(chunked.reply(_copy(whole), 42))
    assert pb.Reply.FromString(raw) == pb.Reply(value=to_value(whole), offset=42)
    raw = asyncio.run(chunked.entries_reply(_copy(whole)))
    assert pb.EntriesReply.FromString(raw) == pb.EntriesReply(entries=wire.entries(whole))
    both = e.execute([b"XREAD", b"STREAMS", b"s", b"t", b"0", b"0"], 2).reply
    assert chunked.is_long(both)
    raw = asyncio.run(chunked.reply(_copy(both), 7))
    assert pb.Reply.FromString(raw) == pb.Reply(value=to_value(both), offset=7)
    raw = asyncio.run(chunked.streams_reply(_copy(both), 7))
    assert pb.StreamsReply.FromString(raw) == pb.StreamsReply(streams=wire.streams(both), offset=7)
    consumed = _copy(whole)
    asyncio.run(chunked.reply(consumed, 1))
    assert consumed == [None] * len(whole)  # type: ignore[arg-type]  # released as encoded


def test_reply_size_counts_every_element() -> None:
    assert reply_size(b"abc") == 6
    assert reply_size([b"a", [b"bb", 5]]) == 3 + 4 + 3 + 5 + 8


def test_the_budget_counts_each_entry_as_its_bytes_and_3_per_element() -> None:
    entries = filled(300).execute([b"XRANGE", b"s", b"-", b"+"], 2).reply
    assert isinstance(entries, list) and entries
    by_entry = sum(
        len(eid) + sum(map(len, fv)) + 3 * (len(fv) + 1)
        for eid, fv in entries  # type: ignore[misc]
    )
    budget = _Budget(by_entry)
    budget.spend(entries[:100])
    budget.spend(entries[100:])
    assert budget.used == by_entry  # at the limit: no error
    with pytest.raises(StreamError, match="exceeds max-reply-bytes"):
        budget.spend([[b"1-1", [b"f", b""]]])
