"""Engine.xadd_many against the same entries added by one `XADD key *` each: the same replies,
effects, node bytes and metadata, whatever the node limits and the stream's prior state; and
all-or-nothing errors."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from enginecalls import argv

from xstream.engine import Engine, EngineConfig, StreamError, StreamID, api
from xstream.engine.commands import append
from xstream.engine.stream import Stream

Entry = list[bytes]
U64 = (1 << 64) - 1
CONFIGS = [(4096, 100), (200, 10), (0, 7), (100, 0), (1 << 20, 0), (64, 1)]
FIELDS = [[b"user_id", b"action", b"amount"], [b"payload"], [b"a", b"b"], [b"7", b"x"]]


def value(rng: random.Random) -> bytes:
    c = rng.random()
    if c < 0.3:
        return b"%d" % rng.randint(-(10**19), 10**19)
    if c < 0.5:
        return b"%d" % rng.randint(-5000, 100000)
    if c < 0.6:
        return rng.choice([b"0", b"-0", b"007", b"", b"-", b" 1", b"9223372036854775808"])
    if c < 0.9:
        return b"v" * rng.choice([1, 5, 62, 63, 64, 100, 127, 128, 300])
    return b"w" * rng.choice([4094, 4095, 4096, 5000])


def entries(rng: random.Random, n: int, mixed: bool) -> list[Entry]:
    out = []
    fields = rng.choice(FIELDS)
    for _ in range(n):
        if mixed and rng.random() < 0.1:
            fields = rng.choice(FIELDS)
        fv = []
        for f in fields:
            fv += [f, value(rng)]
        out.append(fv)
    return out


def state(e: Engine, key: bytes = b"s") -> tuple[object, ...]:
    s = e.keyspace.get(key)
    assert isinstance(s, Stream)
    nodes = [(k, bytes(lp)) for k, lp in s.nodes()]
    meta = (s.length, s.last_id, s.first_id, s.max_deleted_entry_id, s.entries_added)
    return nodes, meta


Setup = Callable[[Engine], None]


def fresh(e: Engine) -> None:
    pass


def ahead_of_clock(e: Engine) -> None:
    """last_id is ahead of now_ms: auto IDs continue from last_id + 1."""
    for i in range(5):
        e.execute(argv("XADD", "s", f"5000-{i}", "user_id", "u1", "action", "a", "amount", 1))


def tombstoned_tail(e: Engine) -> None:
    """The only node holds tombstones only (an exact MINID trim can leave that)."""
    for i in range(3):
        e.execute(argv("XADD", "s", f"10-{i}", "a", i, "b", "x"))
    e.execute(argv("XTRIM", "s", "MINID", "=", "11"))


def other_master_fields(e: Engine) -> None:
    e.execute(argv("XADD", "s", "10-0", "zzz", "1"))


def near_seq_carry(e: Engine) -> None:
    """The next auto IDs cross from <ms>-UINT64_MAX to <ms+1>-0."""
    e.execute(argv("XADD", "s", f"1000-{U64 - 3}", "a", "1", "b", "2"))


SETUPS = [fresh, ahead_of_clock, tombstoned_tail, other_master_fields, near_seq_carry]


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("setup", SETUPS)
@pytest.mark.parametrize("mixed", [False, True])
def test_batch_equals_one_xadd_per_entry(
    config: tuple[int, int], setup: Setup, mixed: bool
) -> None:
    rng = random.Random(repr((config, setup.__name__, mixed)))
    one, many = Engine(EngineConfig(*config)), Engine(EngineConfig(*config))
    replay, flat = Engine(EngineConfig(*config)), Engine(EngineConfig(*config))
    for e in (one, many, replay, flat):
        setup(e)
    now = 1000
    for _ in range(8):
        batch = entries(rng, rng.choice([1, 2, 50, 130, 300]), mixed)
        replies = []
        for fv in batch:
            r = one.execute([b"XADD", b"s", b"*", *fv], now)
            replies.append(r.reply)
        got = many.xadd_many(b"s", batch, now)
        assert got.reply == replies
        assert [e[0] for e in got.effects] == [b"XAPPEND"]
        replay.apply(got.effects[0])
        assert state(replay) == state(one)
        assert got.signaled == [(0, b"s")]
        assert state(many) == state(one)
        many.check_integrity()
        wire = flat.xadd_flat(b"s", [x for fv in batch for x in fv], [len(fv) for fv in batch], now)
        assert wire.reply == [replies[0], replies[-1]]
        assert (wire.effects, wire.signaled, wire.touched) == (
            got.effects,
            got.signaled,
            got.touched,
        )
        assert state(flat) == state(one)
        flat.check_integrity()
        now += rng.choice([0, 1, 7])
    assert many.digest() == one.digest()
    assert flat.digest() == one.digest()


def test_tuples_and_lists_give_the_same_bytes() -> None:
    rng = random.Random(7)
    batch = entries(rng, 500, mixed=True)
    as_lists, as_tuples = Engine(), Engine()
    as_lists.xadd_many(b"s", batch, 1)
    as_tuples.xadd_many(b"s", [tuple(fv) for fv in batch], 1)
    assert state(as_lists) == state(as_tuples)


def test_empty_batch_changes_nothing() -> None:
    e = Engine()
    assert e.xadd_many(b"s", [], 1).reply == []
    assert e.xadd_flat(b"s", [], [], 1).reply == []
    assert b"s" not in e.keyspace


def test_flat_in_another_database() -> None:
    e = Engine()
    got = e.xadd_flat(b"s", [b"a", b"1", b"a", b"2"], [2, 2], 5, db=3)
    assert got.reply == [b"5-0", b"5-1"]
    assert got.effects == [
        [b"SELECT", b"3"],
        [b"XAPPEND", b"s", b"5-0", b"2,2", b"a", b"1", b"a", b"2"],
    ]
    assert got.touched == [(3, b"s")]


def failing(e: Engine, batch: list[Entry], now: int = 1000) -> str:
    """The error line of a batch that must fail, checking that it changed nothing; the same
    batch in its wire form (xadd_flat) must fail with the same line."""
    before = e.digest()
    with pytest.raises(StreamError) as info:
        e.xadd_many(b"s", batch, now)
    assert e.digest() == before
    with pytest.raises(StreamError) as flat:
        e.xadd_flat(b"s", [x for fv in batch for x in fv], [len(fv) for fv in batch], now)
    assert flat.value.line == info.value.line
    assert e.digest() == before
    e.check_integrity()
    return info.value.line


def test_bad_arity_anywhere_fails_the_whole_batch() -> None:
    e = Engine()
    e.xadd_many(b"s", [[b"a", b"1"]], 1)
    arity = "ERR wrong number of arguments for 'xadd' command"
    assert failing(e, [[b"a", b"1"], [b"a", b"1", b"b"], [b"a", b"1"]]) == arity
    assert failing(e, [[b"a", b"1"], []]) == arity
    assert failing(Engine(), [[b"a"]]) == arity


def test_wrong_type() -> None:
    e = Engine()
    e.execute(argv("SET", "s", "x"))
    assert failing(e, [[b"a", b"1"]]).startswith("WRONGTYPE")


def test_exhausted_ids_fail_before_any_append() -> None:
    e = Engine()
    e.execute(argv("XADD", "s", f"{U64}-{U64 - 2}", "a", "1"))
    exhausted = "ERR The stream has exhausted the last possible ID, unable to add more items"
    assert failing(e, [[b"a", b"1"]] * 3) == exhausted
    assert e.xadd_many(b"s", [[b"a", b"1"]] * 2, 1).reply == [
        b"%d-%d" % (U64, U64 - 1),
        b"%d-%d" % (U64, U64),
    ]
    assert failing(e, [[b"a", b"1"]]) == exhausted


def test_too_large_elements(monkeypatch: pytest.MonkeyPatch) -> None:
    # A 1 GiB element is impractical in a unit test: lower the cap the batch checks read.
    monkeypatch.setattr(api, "LISTPACK_MAX_SIZE", 10)
    e = Engine()
    too_large = "ERR Elements are too large to be stored"
    assert failing(e, [[b"a", b"1"], [b"abc", b"12345678"]]) == too_large
    assert e.xadd_many(b"s", [[b"abc", b"1234567"]] * 2, 1).reply == [b"1-0", b"1-1"]


def test_format_ids_across_a_seq_carry() -> None:
    first = StreamID(7, U64 - 1)
    assert api.format_ids(first, 3) == [b"7-%d" % (U64 - 1), b"7-%d" % U64, b"8-0"]


def test_xappend_effect_replays_and_ships_itself() -> None:
    e = Engine()
    got = e.xadd_many(b"s", [[b"a", b"1"], [b"a", b"2", b"b", b"3"]], 5)
    (effect,) = got.effects
    assert effect == [b"XAPPEND", b"s", b"5-0", b"2,4", b"a", b"1", b"a", b"2", b"b", b"3"]
    replica = Engine(EngineConfig(node_max_entries=1))
    again = replica.apply(effect)
    assert again.reply == b"5-1"
    assert again.effects == [effect]
    assert replica.digest() == e.digest()
    alike = e.xadd_many(b"s", [[b"a", b"1"]] * 3, 6).effects  # one count, repeated
    assert alike == [[b"XAPPEND", b"s", b"6-0", b"2,2,2", *[b"a", b"1"] * 3]]


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["XAPPEND", "s", "5-0", "2", "a", "1"], "equal or smaller"),
        (["XAPPEND", "s", "0-0", "2", "a", "1"], "equal or smaller"),
        (["XAPPEND", "t", "0-0", "2", "a", "1"], "greater than 0-0"),
        (["XAPPEND", "s", "9-0", "3", "a", "1", "b"], "wrong number of arguments"),
        (["XAPPEND", "s", "9-0", "2,2", "a", "1"], "syntax error"),
        (["XAPPEND", "s", "9-0", "x", "a", "1"], "syntax error"),
        (["XAPPEND", "s", "bad", "2", "a", "1"], "Invalid stream ID"),
        (
            [
                "XAPPEND",
                "s",
                "18446744073709551615-18446744073709551615",
                "2,2",
                "a",
                "1",
                "b",
                "2",
            ],
            "exhausted",
        ),
    ],
)
def test_xappend_bad_input_changes_nothing(args: list[str], error: str) -> None:
    e = Engine()
    e.execute(argv("XADD", "s", "5-0", "a", "1"))
    before = e.digest()
    with pytest.raises(StreamError, match=error):
        e.execute(argv(*args))
    assert e.digest() == before


@pytest.mark.parametrize(
    ("counts", "argc"),
    [
        (b"2", 6),
        (b"2,4", 10),
        (b"6,6,6", 22),
        (b"02,4", 10),
        (b"+2", 6),
        (b" 2", 6),
        (b"2 ,4", 10),
        (b"1_0", 14),
        (b"2,4", 9),
        (b"2,", 6),
        (b",2", 6),
        (b"2,,2", 8),
        (b"", 4),
        (b"0", 4),
        (b"3", 7),
        (b"2,3", 9),
        (b"-2", 2),
        (b"x", 6),
        (b"4" * 30, 4 + int(b"4" * 30)),
    ],
)
def test_xappend_counts_are_read_as_int_reads_them(counts: bytes, argc: int) -> None:
    """The digit-by-digit reading of counts (the forms `effect` writes) gives what reading
    every form int() takes gives: the same bounds, or the same error."""

    def bounds_or_error(read: Callable[[bytes, int, int], list[int]]) -> object:
        try:
            return read(counts, argc, 4)
        except StreamError as e:
            return str(e)

    assert bounds_or_error(append.entry_bounds) == bounds_or_error(append._checked_bounds)
