"""XPENDING, XCLAIM and XAUTOCLAIM: replies, option handling, errors in Redis 8.8's order, and
the effects of the two writes (Pair replays them on a replica)."""

from __future__ import annotations

import pytest
from enginecalls import argv
from groupcalls import Pair, consumer_effect, setid_effect, xclaim_effect

from xstream.engine import NULL_ARRAY

NOGROUP = "NOGROUP No such key '{}' or consumer group '{}'"
INVALID_ID = "ERR Invalid stream ID specified as stream command argument"
NOT_INT = "ERR value is not an integer or out of range"
SYNTAX = "ERR syntax error"


def entry(i: str) -> list[object]:
    return [i.encode(), [b"f", i.encode()]]


@pytest.fixture
def p() -> Pair:
    """s: 1-1..5-1; group g at 0; alice got 1-1, 2-1 at t=1000, bob 3-1 at t=2000."""
    pair = Pair()
    pair.add("s", "1-1", "2-1", "3-1", "4-1", "5-1")
    pair.call("XGROUP", "CREATE", "s", "g", "0")
    pair.call("XREADGROUP", "GROUP", "g", "alice", "COUNT", 2, "STREAMS", "s", ">", now=1000)
    pair.call("XREADGROUP", "GROUP", "g", "bob", "COUNT", 1, "STREAMS", "s", ">", now=2000)
    return pair


# -- XPENDING --------------------------------------------------------------------------------


def test_summary(p: Pair) -> None:
    p.call("XGROUP", "CREATECONSUMER", "s", "g", "idle-consumer")
    result = p.run("XPENDING", "s", "g")
    # consumers with nothing pending are left out; counts are bulk strings
    assert result.reply == [3, b"1-1", b"3-1", [[b"alice", b"2"], [b"bob", b"1"]]]
    assert result.effects == []
    p.call("XGROUP", "CREATE", "s", "empty", "$")
    assert p.call("XPENDING", "s", "empty") == [0, None, None, NULL_ARRAY]


def test_extended_form(p: Pair) -> None:
    assert p.call("XPENDING", "s", "g", "-", "+", 10, now=2500) == [
        [b"1-1", b"alice", 1500, 1],
        [b"2-1", b"alice", 1500, 1],
        [b"3-1", b"bob", 500, 1],
    ]
    assert p.call("XPENDING", "s", "g", "-", "+", 1, now=2500) == [[b"1-1", b"alice", 1500, 1]]
    assert p.call("XPENDING", "s", "g", "(1-1", "(3-1", 10, now=2500) == [
        [b"2-1", b"alice", 1500, 1]
    ]
    assert p.call("XPENDING", "s", "g", "2", "3", 10, now=2500) == [  # end `3` is 3-MAX
        [b"2-1", b"alice", 1500, 1],
        [b"3-1", b"bob", 500, 1],
    ]
    assert p.call("XPENDING", "s", "g", "-", "+", 10, "bob", now=2500) == [[b"3-1", b"bob", 500, 1]]
    assert p.call("XPENDING", "s", "g", "-", "+", 10, "nobody") == []
    assert p.call("XPENDING", "s", "g", "-", "+", 0) == []
    assert p.call("XPENDING", "s", "g", "-", "+", -1) == []
    # idle is never negative, even when the clock is behind the delivery time
    assert p.call("XPENDING", "s", "g", "-", "+", 1, now=0) == [[b"1-1", b"alice", 0, 1]]


def test_idle_filter(p: Pair) -> None:
    assert p.call("XPENDING", "s", "g", "IDLE", 1000, "-", "+", 10, now=2500) == [
        [b"1-1", b"alice", 1500, 1],
        [b"2-1", b"alice", 1500, 1],
    ]
    assert p.call("XPENDING", "s", "g", "idle", 600, "-", "+", 10, "bob", now=2500) == []
    assert p.call("XPENDING", "s", "g", "IDLE", 1000, "-", "+", 1, now=2500) == [
        [b"1-1", b"alice", 1500, 1]
    ]


def test_words_after_the_consumer_are_ignored(p: Pair) -> None:
    assert p.call("XPENDING", "s", "g", "-", "+", 10, "bob", "extra", now=2500) == [
        [b"3-1", b"bob", 500, 1]
    ]
    assert p.call("XPENDING", "s", "g", "-", "+", 10, "bob", "x", "y", now=2500) == [
        [b"3-1", b"bob", 500, 1]
    ]
    assert p.call("XPENDING", "s", "g", "IDLE", 0, "-", "+", 10, "bob", now=2500) == [
        [b"3-1", b"bob", 500, 1]
    ]


@pytest.mark.parametrize(
    ("words", "error"),
    [
        (["s", "g", "-"], SYNTAX),  # argc 4
        (["s", "g", "-", "+"], SYNTAX),  # argc 5
        (["s", "g", "-", "+", 1, "c", "a", "b", "c"], SYNTAX),  # argc 10
        (["s", "g", "IDLE", 5, "-", "+"], SYNTAX),  # IDLE needs start end count
        (["s", "g", "IDLE", "x", "-", "+"], NOT_INT),  # ... but its value is parsed first
        (["s", "g", "-", "+", "x"], NOT_INT),
        (["s", "g", "x", "+", 1], INVALID_ID),
        (["s", "g", "-", "x", 1], INVALID_ID),
        (["s", "g", "(-", "+", 1], INVALID_ID),
        (["s", "g", "(18446744073709551615-18446744073709551615", "+", 1],
         "ERR invalid start ID for the interval"),
        (["s", "g", "-", "(0-0", 1], "ERR invalid end ID for the interval"),
        (["s", "nog"], NOGROUP.format("s", "nog")),
        (["missing", "g", "-", "+", 1], NOGROUP.format("missing", "g")),
        (["missing", "g", "x", "+", 1], INVALID_ID),  # arguments are parsed first
        (["str", "g"], "WRONGTYPE Operation against a key holding the wrong kind of value"),
    ],
)  # fmt: skip
def test_xpending_errors(p: Pair, words: list[str | int], error: str) -> None:
    p.call("SET", "str", "v")
    assert p.error("XPENDING", *words) == error


# -- XCLAIM ----------------------------------------------------------------------------------


def test_claim_moves_ownership_and_ships_an_exact_claim(p: Pair) -> None:
    result = p.run("XCLAIM", "s", "g", "carol", 1000, "1-1", "3-1", now=2500)
    assert result.reply == [entry("1-1")]  # 3-1 is only 500 ms idle
    assert result.effects == [
        xclaim_effect("carol", "1-1", 2500, 2, "3-1"),
        consumer_effect("carol", 2500, 2500),
    ]
    assert p.pending(now=2500) == [
        [b"1-1", b"carol", 0, 2],
        [b"2-1", b"alice", 1500, 1],
        [b"3-1", b"bob", 500, 1],
    ]


def test_idle_time_retrycount_justid(p: Pair) -> None:
    assert p.effects("XCLAIM", "s", "g", "c", 0, "1-1", "IDLE", 700, now=3000) == [
        xclaim_effect("c", "1-1", 2300, 2, "3-1"),  # IDLE becomes an absolute TIME
        consumer_effect("c", 3000, 3000),
    ]
    assert p.call("XCLAIM", "s", "g", "c", 0, "2-1", "TIME", 2800, "RETRYCOUNT", 9, now=3000) == [
        entry("2-1")
    ]
    reply = p.call("XCLAIM", "s", "g", "c", 0, "3-1", "JUSTID", now=3000)
    assert reply == [b"3-1"]
    assert p.pending(now=3000) == [
        [b"1-1", b"c", 700, 2],
        [b"2-1", b"c", 200, 9],
        [b"3-1", b"c", 0, 1],  # JUSTID does not count a delivery
    ]
    assert p.call("XCLAIM", "s", "g", "c", 0, "3", "JUSTID", "RETRYCOUNT", 4) == []  # 3-0
    assert p.call("XCLAIM", "s", "g", "c", 0, "3-1", "JUSTID", "RETRYCOUNT", 4) == [b"3-1"]
    assert p.pending(now=3000)[2] == [b"3-1", b"c", 2000, 4]


def test_bogus_delivery_times_become_now(p: Pair) -> None:
    p.call("XCLAIM", "s", "g", "c", 0, "1-1", "TIME", 99999, now=3000)  # in the future
    p.call("XCLAIM", "s", "g", "c", 0, "2-1", "TIME", -5, now=3000)
    p.call("XCLAIM", "s", "g", "c", 0, "3-1", "IDLE", 5000, now=3000)  # before the epoch
    times = p.full_group()[b"pending"]
    assert [t[2] for t in times] == [3000, 3000, 3000]  # type: ignore[index]


def test_negative_retrycount_is_ignored(p: Pair) -> None:
    p.call("XCLAIM", "s", "g", "c", 0, "1-1", "RETRYCOUNT", -3)
    assert p.pending()[0] == [b"1-1", b"c", 0, 2]


def test_min_idle_negative_is_zero(p: Pair) -> None:
    assert p.call("XCLAIM", "s", "g", "c", -100, "3-1", "JUSTID", now=2000) == [b"3-1"]


def test_force_creates_pel_entries_for_existing_entries_only(p: Pair) -> None:
    result = p.run("XCLAIM", "s", "g", "c", 99999, "4-1", "9-9", "FORCE", now=3000)
    assert result.reply == [entry("4-1")]  # min-idle does not apply to a new entry
    assert result.effects == [
        xclaim_effect("c", "4-1", 3000, 2, "3-1"),  # created with count 1, then claimed
        consumer_effect("c", 3000, 3000),
    ]
    assert p.call("XCLAIM", "s", "g", "d", 0, "5-1", "FORCE", "JUSTID", now=3000) == [b"5-1"]
    assert p.pending(now=3000)[-1] == [b"5-1", b"d", 0, 1]
    assert p.call("XCLAIM", "s", "g", "d", 0, "9-9") == []  # not pending, no FORCE


def test_entries_gone_from_the_stream_leave_the_pel(p: Pair) -> None:
    p.call("XDEL", "s", "1-1", "2-1")
    result = p.run("XCLAIM", "s", "g", "c", 0, "1-1", "2-1", "3-1", "FORCE", now=3000)
    assert result.reply == [entry("3-1")]
    assert result.effects == [
        argv("XACK", "s", "g", "1-1"),
        argv("XACK", "s", "g", "2-1"),
        xclaim_effect("c", "3-1", 3000, 2, "3-1"),
        consumer_effect("c", 3000, 3000),
    ]
    assert p.call("XPENDING", "s", "g") == [1, b"3-1", b"3-1", [[b"c", b"1"]]]


def test_consumer_is_created_even_when_nothing_is_claimed(p: Pair) -> None:
    result = p.run("XCLAIM", "s", "g", "idle", 99999, "1-1", now=2500)
    assert (result.reply, result.effects) == ([], [consumer_effect("idle", 2500, -1)])
    assert p.consumers()[b"idle"][b"seen-time"] == 2500
    # an existing consumer is marked seen, its active time kept
    p.call("XCLAIM", "s", "g", "bob", 99999, "1-1", now=2700)
    bob = p.consumers()[b"bob"]
    assert (bob[b"seen-time"], bob[b"active-time"]) == (2700, 2000)


def test_lastid_raises_the_group_only(p: Pair) -> None:
    assert p.effects("XCLAIM", "s", "g", "c", 0, "LASTID", "9-0", now=3000) == [
        setid_effect("9-0", 3),
        consumer_effect("c", 3000, -1),
    ]
    assert p.group()[b"last-delivered-id"] == b"9-0"
    assert p.effects("XCLAIM", "s", "g", "c", 0, "LASTID", "2-0", now=3000) == [
        consumer_effect("c", 3000, -1)
    ]
    assert p.group()[b"last-delivered-id"] == b"9-0"
    effects = p.effects("XCLAIM", "s", "g", "c", 0, "1-1", "JUSTID", "LASTID", "10-0", now=3000)
    assert effects[0] == xclaim_effect("c", "1-1", 3000, 1, "10-0")  # the claim carries it


@pytest.mark.parametrize(
    ("words", "error"),
    [
        (["missing", "g", "c", "x", "1-1"], NOGROUP.format("missing", "g")),  # group first
        (["s", "nog", "c", "x", "1-1"], NOGROUP.format("s", "nog")),
        (["s", "g", "c", "x", "1-1"], "ERR Invalid min-idle-time argument for XCLAIM"),
        (["s", "g", "c", 0, "abc"], "ERR Unrecognized XCLAIM option 'abc'"),
        (["s", "g", "c", 0, "1-1", "FOO"], "ERR Unrecognized XCLAIM option 'FOO'"),
        (["s", "g", "c", 0, "1-1", "IDLE"], "ERR Unrecognized XCLAIM option 'IDLE'"),
        (["s", "g", "c", 0, "1-1", b"B\0AD"], "ERR Unrecognized XCLAIM option 'B'"),
        (["s", "g", "c", 0, "1-1", "IDLE", "x"], "ERR Invalid IDLE option argument for XCLAIM"),
        (["s", "g", "c", 0, "1-1", "TIME", "x"], "ERR Invalid TIME option argument for XCLAIM"),
        (["s", "g", "c", 0, "1-1", "RETRYCOUNT", "x"],
         "ERR Invalid RETRYCOUNT option argument for XCLAIM"),
        (["s", "g", "c", 0, "1-1", "LASTID", "x"], INVALID_ID),
        (["s", "g", "c", 0, "1-1", "LASTID", "-"], INVALID_ID),
        (["s", "g", "c", 0, "1-1", "FORCE", "2-1"], "ERR Unrecognized XCLAIM option '2-1'"),
        (["str", "g", "c", 0, "1-1"],
         "WRONGTYPE Operation against a key holding the wrong kind of value"),
        (["s", "g", "c", 0], "ERR wrong number of arguments for 'xclaim' command"),
    ],
)  # fmt: skip
def test_xclaim_errors_change_nothing(p: Pair, words: list[str | int | bytes], error: str) -> None:
    p.call("SET", "str", "v")
    assert p.error("XCLAIM", *words) == error
    assert p.group()[b"consumers"] == 2  # not even the consumer was created


# -- XAUTOCLAIM ------------------------------------------------------------------------------


def test_autoclaim_scans_from_start_and_returns_a_cursor(p: Pair) -> None:
    result = p.run("XAUTOCLAIM", "s", "g", "c", 1000, "0", "COUNT", 1, now=2500)
    assert result.reply == [b"2-1", [entry("1-1")], []]
    assert result.effects == [
        xclaim_effect("c", "1-1", 2500, 2, "3-1"),
        consumer_effect("c", 2500, 2500),
    ]
    # 3-1 is not idle enough: skipped, the scan ends
    assert p.call("XAUTOCLAIM", "s", "g", "c", 1000, "2-1", now=2500) == [
        b"0-0",
        [entry("2-1")],
        [],
    ]
    assert p.call("XAUTOCLAIM", "s", "g", "d", 0, "(1-1", "JUSTID", now=2600) == [
        b"0-0",
        [b"2-1", b"3-1"],
        [],
    ]
    assert p.pending(now=2600) == [
        [b"1-1", b"c", 100, 2],
        [b"2-1", b"d", 0, 2],  # JUSTID: no increment
        [b"3-1", b"d", 0, 1],
    ]


def test_autoclaim_drops_deleted_entries_and_counts_them(p: Pair) -> None:
    p.call("XDEL", "s", "1-1")
    result = p.run("XAUTOCLAIM", "s", "g", "c", 0, "-", "COUNT", 1, now=3000)
    assert result.reply == [b"2-1", [], [b"1-1"]]
    assert result.effects == [argv("XACK", "s", "g", "1-1"), consumer_effect("c", 3000, -1)]
    assert p.call("XAUTOCLAIM", "s", "g", "c", 0, "-", now=3000) == [
        b"0-0",
        [entry("2-1"), entry("3-1")],
        [],
    ]


def test_autoclaim_visits_at_most_ten_times_count(p: Pair) -> None:
    p.add("s", *[f"{i}-1" for i in range(6, 16)])
    p.call("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">", now=5000)
    # 13 pending entries, none idle for 9999 ms: COUNT 1 stops after 10 visits
    assert p.call("XAUTOCLAIM", "s", "g", "c", 9999, "0", "COUNT", 1, now=5000) == [
        b"11-1",
        [],
        [],
    ]


def test_autoclaim_consumer_created_even_when_nothing_is_claimed(p: Pair) -> None:
    result = p.run("XAUTOCLAIM", "s", "g", "new", 99999, "0", now=2500)
    assert result.reply == [b"0-0", [], []]
    assert result.effects == [consumer_effect("new", 2500, -1)]


@pytest.mark.parametrize(
    ("words", "error"),
    [
        (["s", "g", "c", "x", "0"], "ERR Invalid min-idle-time argument for XAUTOCLAIM"),
        (["s", "g", "c", 0, "x"], INVALID_ID),
        (["s", "g", "c", 0, "(18446744073709551615-18446744073709551615"],
         "ERR invalid start ID for the interval"),
        (["s", "g", "c", 0, "0", "COUNT", 0], "ERR COUNT must be > 0"),
        (["s", "g", "c", 0, "0", "COUNT", -1], "ERR COUNT must be > 0"),
        (["s", "g", "c", 0, "0", "COUNT", "x"], "ERR COUNT must be > 0"),
        (["s", "g", "c", 0, "0", "COUNT", 576460752303423488], "ERR COUNT must be > 0"),
        (["s", "g", "c", 0, "0", "COUNT"], SYNTAX),
        (["s", "g", "c", 0, "0", "FOO"], SYNTAX),
        (["missing", "g", "c", 0, "0"], NOGROUP.format("missing", "g")),
        (["missing", "g", "c", 0, "0", "FOO"], SYNTAX),  # options are parsed first
        (["s", "nog", "c", 0, "0"], NOGROUP.format("s", "nog")),
    ],
)  # fmt: skip
def test_xautoclaim_errors(p: Pair, words: list[str | int], error: str) -> None:
    assert p.error("XAUTOCLAIM", *words) == error
    assert p.group()[b"consumers"] == 2


def test_delivery_count_stays_at_int64_max_and_still_replicates(p: Pair) -> None:
    """Redis 8.8 saturates every delivery count increment at INT64_MAX (XNACK FATAL sets it
    there); 7.0 wrapped to INT64_MIN. Checked on Redis 8.8: XCLAIM RETRYCOUNT INT64_MAX,
    then XCLAIM and XPENDING show 9223372036854775807."""
    top = (1 << 63) - 1
    p.call("XCLAIM", "s", "g", "alice", 0, "1-1", "RETRYCOUNT", top, now=3000)
    result = p.run("XCLAIM", "s", "g", "alice", 0, "1-1", now=3000)
    assert result.effects[0] == xclaim_effect("alice", "1-1", 3000, top, "3-1")
    assert p.pending(now=3000)[0] == [b"1-1", b"alice", 0, top]
    p.call("XCLAIM", "s", "g", "alice", 0, "2-1", "RETRYCOUNT", top - 1, now=3000)
    p.call("XREADGROUP", "GROUP", "g", "alice", "COUNT", 2, "STREAMS", "s", "0", now=3000)
    p.call("XREADGROUP", "GROUP", "g", "alice", "COUNT", 2, "STREAMS", "s", "0", now=3000)
    assert p.pending(now=3000)[:2] == [[b"1-1", b"alice", 0, top], [b"2-1", b"alice", 0, top]]


def test_claim_scans_entries_of_one_millisecond_in_the_order_they_were_timed() -> None:
    """Redis's pel_time list keeps entries of the same delivery time in the order they were
    put there (an entry delivered again goes last among them), not in ID order; checked on
    Redis 8.8: `XCLAIM s g c 0 5-0 3-0 FORCE JUSTID` then `XREADGROUP ... CLAIM 0` gives
    5-0 before 3-0. A replica replaying the effects keeps the same order."""
    p = Pair()
    p.add("s", "3-0", "5-0", "7-0")
    p.call("XGROUP", "CREATE", "s", "g", "$")
    p.call("XCLAIM", "s", "g", "c", 0, "5-0", "3-0", "FORCE", "JUSTID", now=1000)
    p.call("XCLAIM", "s", "g", "c", 0, "7-0", "FORCE", "JUSTID", now=900)  # TIME in the past
    reply = p.call("XREADGROUP", "GROUP", "g", "d", "CLAIM", 0, "STREAMS", "s", ">", now=2000)
    assert [e[0] for e in reply[0][1]] == [b"7-0", b"5-0", b"3-0"]  # type: ignore[index]
    p.call("XCLAIM", "s", "g", "c", 0, "3-0", "7-0", "5-0", "JUSTID", now=2000)
    reply = p.call("XREADGROUP", "GROUP", "g", "d", "CLAIM", 0, "STREAMS", "s", ">", now=3000)
    assert [e[0] for e in reply[0][1]] == [b"3-0", b"7-0", b"5-0"]  # type: ignore[index]
    groups = [e.keyspace.stream(b"s").cgroups[b"g"] for e in (p.primary, p.replica)]  # type: ignore[union-attr]
    assert list(groups[0].by_time()) == list(groups[1].by_time())
