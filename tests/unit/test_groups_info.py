"""XINFO GROUPS / CONSUMERS / STREAM FULL for groups, and the lag / entries-read rules of
stream-commands.md 3.7 (Redis 7.4+ rules: redis#13338, #13473, #13958)."""

from __future__ import annotations

import pytest
from groupcalls import Pair

from xstream.engine import ReplyMap


@pytest.fixture
def p() -> Pair:
    pair = Pair()
    pair.add("s", "1-1", "2-1", "3-1", "4-1", "5-1")
    return pair


# -- XINFO GROUPS / CONSUMERS ----------------------------------------------------------------


def test_groups_reply_shape_and_order(p: Pair) -> None:
    p.call("XGROUP", "CREATE", "s", "zeta", "$")
    p.call("XGROUP", "CREATE", "s", "alpha", "0")
    p.call("XREADGROUP", "GROUP", "alpha", "c", "COUNT", 2, "STREAMS", "s", ">")
    reply = p.run("XINFO", "GROUPS", "s")
    assert reply.effects == []
    assert reply.reply == [
        ReplyMap(
            [
                (b"name", b"alpha"),
                (b"consumers", 1),
                (b"pending", 2),
                (b"last-delivered-id", b"2-1"),
                (b"entries-read", 2),
                (b"lag", 3),
            ]
        ),
        ReplyMap(
            [
                (b"name", b"zeta"),
                (b"consumers", 0),
                (b"pending", 0),
                (b"last-delivered-id", b"5-1"),
                (b"entries-read", None),
                (b"lag", 0),
            ]
        ),
    ]
    assert Pair().error("XINFO", "GROUPS", "missing") == "ERR no such key"
    p.call("SET", "str", "v")
    assert p.error("XINFO", "GROUPS", "str") == (
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    )
    p.call("XADD", "plain", "1-1", "f", "v")
    assert p.call("XINFO", "GROUPS", "plain") == []


def test_consumers_idle_and_inactive(p: Pair) -> None:
    p.call("XGROUP", "CREATE", "s", "g", "0")
    p.call("XGROUP", "CREATECONSUMER", "s", "g", "b-lazy", now=1000)
    p.call("XREADGROUP", "GROUP", "g", "a-busy", "COUNT", 2, "STREAMS", "s", ">", now=2000)
    p.call("XREADGROUP", "GROUP", "g", "a-busy", "STREAMS", "s", ">", now=2500)
    p.call("XREADGROUP", "GROUP", "g", "a-busy", "STREAMS", "s", ">", now=2700)  # nothing new
    assert p.call("XINFO", "CONSUMERS", "s", "g", now=3000) == [
        ReplyMap([(b"name", b"a-busy"), (b"pending", 5), (b"idle", 300), (b"inactive", 500)]),
        ReplyMap([(b"name", b"b-lazy"), (b"pending", 0), (b"idle", 2000), (b"inactive", -1)]),
    ]
    # with the clock behind: idle is clamped at 0, inactive is not (as Redis)
    busy = p.call("XINFO", "CONSUMERS", "s", "g", now=2000)[0]  # type: ignore[index]
    assert dict(busy)[b"idle"] == 0  # type: ignore[arg-type]
    assert dict(busy)[b"inactive"] == -500  # type: ignore[arg-type]


def test_consumers_errors(p: Pair) -> None:
    assert p.error("XINFO", "CONSUMERS", "s", "nog") == (
        "NOGROUP No such consumer group 'nog' for key name 's'"
    )
    assert p.error("XINFO", "CONSUMERS", "missing", "g") == "ERR no such key"
    assert p.error("XINFO", "CONSUMERS", "s") == (
        "ERR wrong number of arguments for 'xinfo|consumers' command"
    )


# -- XINFO STREAM FULL -----------------------------------------------------------------------


def test_stream_full_groups(p: Pair) -> None:
    p.call("XGROUP", "CREATE", "s", "g", "0")
    p.call("XREADGROUP", "GROUP", "g", "a", "COUNT", 3, "STREAMS", "s", ">", now=1000)
    p.call("XCLAIM", "s", "g", "b", 0, "2-1", "RETRYCOUNT", 7, now=1500)
    reply = p.call("XINFO", "STREAM", "s", "FULL", "COUNT", 2, now=9999)
    assert isinstance(reply, ReplyMap)
    assert reply.get(b"groups") == [
        ReplyMap(
            [
                (b"name", b"g"),
                (b"last-delivered-id", b"3-1"),
                (b"entries-read", 3),
                (b"lag", 2),
                (b"pel-count", 3),
                (b"nacked-count", 0),
                (b"pending", [[b"1-1", b"a", 1000, 1], [b"2-1", b"b", 1500, 7]]),  # COUNT 2
                (
                    b"consumers",
                    [
                        ReplyMap(
                            [
                                (b"name", b"a"),
                                (b"seen-time", 1000),
                                (b"active-time", 1000),
                                (b"pel-count", 2),
                                (b"pending", [[b"1-1", 1000, 1], [b"3-1", 1000, 1]]),
                            ]
                        ),
                        ReplyMap(
                            [
                                (b"name", b"b"),
                                (b"seen-time", 1500),
                                (b"active-time", 1500),
                                (b"pel-count", 1),
                                (b"pending", [[b"2-1", 1500, 7]]),
                            ]
                        ),
                    ],
                ),
            ]
        )
    ]
    everything = p.full_group()
    assert everything[b"pel-count"] == 3
    assert len(everything[b"pending"]) == 3  # type: ignore[arg-type]


# -- lag and entries-read (stream-commands.md 3.7) -------------------------------------------


def test_lag_of_a_never_written_stream_is_zero() -> None:
    p = Pair()
    p.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    assert p.lag() == (None, 0)


def test_reading_counts_exactly(p: Pair) -> None:
    p.call("XGROUP", "CREATE", "s", "g", "0")
    assert p.lag() == (None, 5)  # behind the first entry, no tombstone: lag = length
    p.call("XREADGROUP", "GROUP", "g", "c", "COUNT", 2, "STREAMS", "s", ">")
    assert p.lag() == (2, 3)
    p.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    assert p.lag() == (5, 0)
    p.add("s", "6-1")
    assert p.lag() == (5, 1)


def test_group_at_dollar_and_at_the_first_entry(p: Pair) -> None:
    p.call("XGROUP", "CREATE", "s", "end", "$")
    p.call("XGROUP", "CREATE", "s", "first", "1-1")
    p.call("XGROUP", "CREATE", "s", "middle", "3-1")
    assert p.lag("end") == (None, 0)  # at the last ID: exact
    assert p.lag("first") == (None, 4)  # at the first entry with no tombstone: exact
    assert p.lag("middle") == (None, None)  # an arbitrary ID: unknown
    p.call("XREADGROUP", "GROUP", "middle", "c", "STREAMS", "s", ">")
    assert p.lag("middle") == (5, 0)  # reading up to the last ID makes it exact


def test_xdel_past_the_groups_last_id_makes_lag_unknown(p: Pair) -> None:
    p.call("XGROUP", "CREATE", "s", "g", "0")
    p.call("XREADGROUP", "GROUP", "g", "c", "COUNT", 2, "STREAMS", "s", ">")
    p.call("XDEL", "s", "4-1")
    assert p.lag() == (2, None)
    p.call("XREADGROUP", "GROUP", "g", "c", "COUNT", 1, "STREAMS", "s", ">")
    assert p.lag() == (None, None)  # a read past the tombstone's left side loses the count
    p.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    assert p.lag() == (5, 0)  # reaching the last ID recovers it


def test_xdel_before_the_groups_last_id_keeps_lag(p: Pair) -> None:
    p.call("XGROUP", "CREATE", "s", "g", "0")
    p.call("XREADGROUP", "GROUP", "g", "c", "COUNT", 3, "STREAMS", "s", ">")
    p.call("XDEL", "s", "2-1")
    assert p.lag() == (3, 2)


def test_xdel_of_everything_gives_lag_zero(p: Pair) -> None:
    p.call("XGROUP", "CREATE", "s", "g", "0")
    p.call("XGROUP", "CREATE", "s", "counted", "0", "ENTRIESREAD", 0)
    p.call("XDEL", "s", "1-1", "2-1", "3-1", "4-1", "5-1")
    assert p.lag() == (None, 0)
    assert p.lag("counted") == (0, 0)  # 7.0 answered 5: it trusted the counter


def test_trim_past_a_group_with_a_valid_counter(p: Pair) -> None:
    p.call("XGROUP", "CREATE", "s", "g", "0", "ENTRIESREAD", 0)
    assert p.lag() == (0, 5)
    p.call("XTRIM", "s", "MAXLEN", 2)
    assert p.lag() == (0, 2)  # behind the first entry: the remaining length (7.0: 5)
    p.call("XREADGROUP", "GROUP", "g", "c", "COUNT", 1, "STREAMS", "s", ">")
    assert p.lag() == (4, 1)  # the counter is re-estimated, not incremented (7.0: 1, 4)


def test_tombstone_before_the_first_entry(p: Pair) -> None:
    # redis#13337: the last tombstone is before the first entry but after the group
    p.call("XGROUP", "CREATE", "s", "g", "0")
    p.call("XREADGROUP", "GROUP", "g", "c", "COUNT", 2, "STREAMS", "s", ">")
    p.call("XDEL", "s", "1-1", "2-1", "3-1")
    assert p.lag() == (2, 2)  # 4-1 and 5-1 (7.0 answered 3)


def test_setid_and_entriesread(p: Pair) -> None:
    p.call("XGROUP", "CREATE", "s", "g", "$")
    p.call("XGROUP", "SETID", "s", "g", "2-1", "ENTRIESREAD", 2)
    assert p.lag() == (2, 3)
    p.call("XGROUP", "SETID", "s", "g", "+")
    assert p.lag() == (None, None)  # beyond the last ID
    p.call("XGROUP", "SETID", "s", "g", "-")
    assert p.lag() == (None, 5)


def test_xsetid_entries_added_moves_lag(p: Pair) -> None:
    p.call("XGROUP", "CREATE", "s", "g", "$")
    p.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    p.call("XSETID", "s", "5-1", "ENTRIESADDED", 50)
    assert p.lag() == (None, 0)  # created at $ with an unknown counter: estimated at the end
    p.call("XGROUP", "SETID", "s", "g", "5-1", "ENTRIESREAD", 5)
    assert p.lag() == (5, 45)


def test_a_counter_set_too_high_keeps_counting_and_replicates(p: Pair) -> None:
    p.call("XGROUP", "CREATE", "s", "g", "$")
    p.call("XGROUP", "SETID", "s", "g", "1-1", "ENTRIESREAD", 3)  # 1-1 is really the 1st
    p.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    assert p.lag() == (7, -2)  # counted on past entries-added (5); Pair checks the replica
