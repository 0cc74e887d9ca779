"""XREADGROUP (`>`, history, NOACK, COUNT, several keys, BLOCK) and XACK: replies, errors and
the effects that make every delivery replay exactly on a replica (Pair checks the replay)."""

from __future__ import annotations

import pytest
from enginecalls import argv
from groupcalls import Pair, consumer_effect, setid_effect, xclaim_effect

from xstream.engine import NULL_ARRAY

NOGROUP_READ = "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option"
MEANINGLESS = (
    "ERR The {0} ID is meaningless in the context of XREADGROUP: you want to read the history "
    "of this consumer by specifying a proper ID, or use the > ID to get new messages. The {0} "
    "ID would just return an empty result set."
)
INVALID_ID = "ERR Invalid stream ID specified as stream command argument"
MAX = "18446744073709551615-18446744073709551615"


def entry(i: str) -> list[object]:
    return [i.encode(), [b"f", i.encode()]]


@pytest.fixture
def p() -> Pair:
    pair = Pair()
    pair.add("s", "1-1", "2-1", "3-1", "4-1")
    pair.call("XGROUP", "CREATE", "s", "g", "0")
    return pair


# -- `>`: new entries ------------------------------------------------------------------------


def test_new_entries_go_to_the_pel_and_ship_as_claims(p: Pair) -> None:
    result = p.run("XREADGROUP", "GROUP", "g", "c", "COUNT", 2, "STREAMS", "s", ">", now=5000)
    assert result.reply == [[b"s", [entry("1-1"), entry("2-1")]]]
    assert result.effects == [
        xclaim_effect("c", "1-1", 5000, 1, "0-0"),
        xclaim_effect("c", "2-1", 5000, 1, "0-0"),
        setid_effect("2-1", 2),
        consumer_effect("c", 5000, 5000),
    ]
    assert p.pending(now=5000) == [[b"1-1", b"c", 0, 1], [b"2-1", b"c", 0, 1]]
    assert p.lag() == (2, 2)
    result = p.run("XREADGROUP", "GROUP", "g", "d", "STREAMS", "s", ">", now=6000)
    assert result.reply == [[b"s", [entry("3-1"), entry("4-1")]]]
    assert result.effects[0] == xclaim_effect("d", "3-1", 6000, 1, "2-1")  # LASTID: before
    assert result.effects[2:] == [setid_effect("4-1", 4), consumer_effect("d", 6000, 6000)]
    assert p.call("XPENDING", "s", "g") == [4, b"1-1", b"4-1", [[b"c", b"2"], [b"d", b"2"]]]


def test_count_zero_or_negative_means_no_limit(p: Pair) -> None:
    reply = p.call("XREADGROUP", "GROUP", "g", "c", "COUNT", -3, "STREAMS", "s", ">")
    assert reply == [[b"s", [entry(i) for i in ("1-1", "2-1", "3-1", "4-1")]]]


def test_noack_advances_the_group_without_a_pel(p: Pair) -> None:
    result = p.run("XREADGROUP", "GROUP", "g", "c", "NOACK", "STREAMS", "s", ">", now=7000)
    assert result.reply == [[b"s", [entry(i) for i in ("1-1", "2-1", "3-1", "4-1")]]]
    assert result.effects == [setid_effect("4-1", 4), consumer_effect("c", 7000, -1)]
    assert p.call("XPENDING", "s", "g") == [0, None, None, NULL_ARRAY]
    assert p.consumers()[b"c"][b"active-time"] == -1  # NOACK deliveries do not count


def test_nothing_new_still_creates_and_ships_the_consumer(p: Pair) -> None:
    p.call("XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", ">")
    result = p.run("XREADGROUP", "GROUP", "g", "late", "STREAMS", "s", ">", now=8000)
    assert result.reply == NULL_ARRAY
    assert result.block is None
    assert result.effects == [consumer_effect("late", 8000, -1)]
    assert p.group()[b"consumers"] == 2
    # an existing consumer is marked seen on every call
    assert p.effects("XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", ">", now=9000) == [
        consumer_effect("a", 9000, 1000)
    ]


def test_deleted_entries_are_skipped_by_new_reads(p: Pair) -> None:
    p.call("XDEL", "s", "2-1", "3-1")
    reply = p.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    assert reply == [[b"s", [entry("1-1"), entry("4-1")]]]


def test_setid_back_redelivers_to_the_new_reader(p: Pair) -> None:
    p.call("XREADGROUP", "GROUP", "g", "a", "COUNT", 2, "STREAMS", "s", ">", now=1000)
    p.call("XCLAIM", "s", "g", "a", 0, "1-1", "RETRYCOUNT", 5, now=1500)
    p.call("XGROUP", "SETID", "s", "g", "0")
    result = p.run("XREADGROUP", "GROUP", "g", "b", "COUNT", 1, "STREAMS", "s", ">", now=2000)
    assert result.reply == [[b"s", [entry("1-1")]]]
    assert result.effects[0] == xclaim_effect("b", "1-1", 2000, 1, "0-0")
    assert p.pending(now=2000) == [[b"1-1", b"b", 0, 1], [b"2-1", b"a", 1000, 1]]


def test_an_explicit_maximum_id_reads_new_entries_like_gt(p: Pair) -> None:
    # Redis encodes `>` as UINT64_MAX-UINT64_MAX, so that ID behaves as `>` (checked on 7.0.15)
    reply = p.call("XREADGROUP", "GROUP", "g", "c", "COUNT", 1, "STREAMS", "s", MAX)
    assert reply == [[b"s", [entry("1-1")]]]
    assert p.group()[b"last-delivered-id"] == b"1-1"


# -- history ---------------------------------------------------------------------------------


def test_history_rereads_own_pel_and_ships_the_new_counts(p: Pair) -> None:
    p.call("XREADGROUP", "GROUP", "g", "c", "COUNT", 3, "STREAMS", "s", ">", now=1000)
    p.call("XREADGROUP", "GROUP", "g", "other", "STREAMS", "s", ">", now=1000)
    p.call("XDEL", "s", "2-1")
    result = p.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0", now=3000)
    assert result.reply == [[b"s", [entry("1-1"), [b"2-1", NULL_ARRAY], entry("3-1")]]]
    # Redis ships nothing here and its replicas keep the old counts (propagation.md B3)
    assert result.effects == [
        xclaim_effect("c", "1-1", 3000, 2, "4-1"),
        xclaim_effect("c", "3-1", 3000, 2, "4-1"),
        consumer_effect("c", 3000, 1000),  # history reads do not make a consumer active
    ]
    assert p.pending(now=3000) == [
        [b"1-1", b"c", 0, 2],
        [b"2-1", b"c", 2000, 1],  # a deleted entry stays pending, untouched
        [b"3-1", b"c", 0, 2],
        [b"4-1", b"other", 2000, 1],
    ]
    assert p.lag() == (4, 0)


def test_history_count_includes_deleted_entries_and_starts_after_the_id(p: Pair) -> None:
    p.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    p.call("XDEL", "s", "2-1")
    reply = p.call("XREADGROUP", "GROUP", "g", "c", "COUNT", 2, "STREAMS", "s", "1-1")
    assert reply == [[b"s", [[b"2-1", NULL_ARRAY], entry("3-1")]]]
    reply = p.call("XREADGROUP", "GROUP", "g", "c", "COUNT", 1, "STREAMS", "s", "3")
    assert reply == [[b"s", [entry("3-1")]]]  # `3` is 3-0: 3-1 is after it


def test_history_with_nothing_pending_lists_the_key_empty(p: Pair) -> None:
    result = p.run("XREADGROUP", "GROUP", "g", "c", "BLOCK", 0, "STREAMS", "s", "0", now=500)
    assert result.reply == [[b"s", []]]
    assert result.block is None  # a history read never blocks
    assert result.effects == [consumer_effect("c", 500, -1)]


def test_history_after_ack(p: Pair) -> None:
    p.call("XREADGROUP", "GROUP", "g", "c", "COUNT", 2, "STREAMS", "s", ">")
    p.call("XACK", "s", "g", "1-1")
    assert p.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0-0") == [
        [b"s", [entry("2-1")]]
    ]


# -- several keys ----------------------------------------------------------------------------


def test_several_keys_mix_new_and_history(p: Pair) -> None:
    p.add("t", "9-1")
    p.call("XGROUP", "CREATE", "t", "g", "$")
    p.add("t", "10-1")
    p.add("u", "1-1")
    p.call("XGROUP", "CREATE", "u", "g", "$")
    result = p.run(
        "XREADGROUP", "GROUP", "g", "c", "COUNT", 1, "STREAMS", "s", "t", "u", ">", ">", ">",
        now=2000,
    )  # fmt: skip
    assert result.reply == [[b"s", [entry("1-1")]], [b"t", [entry("10-1")]]]  # u: nothing new
    assert consumer_effect("c", 2000, -1, key="u") in result.effects
    reply = p.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "t", "0", ">")
    assert reply == [[b"s", [entry("1-1")]]]


def test_every_key_is_checked_before_any_is_served(p: Pair) -> None:
    p.add("nogroup", "1-1")
    p.call("SET", "str", "v")
    assert p.error("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "nogroup", ">", ">") == (
        NOGROUP_READ.format("nogroup", "g")
    )
    assert p.error("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "missing", ">", ">") == (
        NOGROUP_READ.format("missing", "g")
    )
    assert p.error("XREADGROUP", "GROUP", "g", "c", "STREAMS", "str", "missing", ">", ">") == (
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    )
    assert p.error("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "s", ">", "x") == INVALID_ID
    assert p.group()[b"consumers"] == 0  # nothing was served, no consumer was created


# -- BLOCK -----------------------------------------------------------------------------------


def test_block_returns_a_block_spec_and_still_ships_the_consumer(p: Pair) -> None:
    p.call("XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", ">")
    words = ["XREADGROUP", "GROUP", "g", "c", "BLOCK", 250, "STREAMS", "s", ">"]
    result = p.run(*words, now=4000)
    assert result.reply == NULL_ARRAY
    assert result.block is not None
    assert (result.block.keys, result.block.deadline_ms, result.block.argv) == (
        [b"s"],
        4250,
        argv(*words),
    )
    assert result.effects == [consumer_effect("c", 4000, -1)]
    blocked = p.run("XREADGROUP", "GROUP", "g", "c", "BLOCK", 0, "STREAMS", "s", ">")
    assert blocked.block is not None and blocked.block.deadline_ms == 0  # forever
    p.add("s", "5-1")
    served = p.run(*words, now=4100)
    assert (served.reply, served.block) == ([[b"s", [entry("5-1")]]], None)


# -- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "error"),
    [
        (["GROUP", "nog", "c", "STREAMS", "s", ">"], NOGROUP_READ.format("s", "nog")),
        (["GROUP", "g", "c", "STREAMS", "missing", ">"], NOGROUP_READ.format("missing", "g")),
        (["GROUP", "g", "c", "STREAMS", "s", "$"], MEANINGLESS.format("$")),
        (["GROUP", "g", "c", "STREAMS", "s", "+"], MEANINGLESS.format("+")),
        (["GROUP", "g", "c", "STREAMS", "s", b"$\0x"], MEANINGLESS.format("$")),
        (["GROUP", "g", "c", "STREAMS", "s", "-"], INVALID_ID),
        (["GROUP", "g", "c", "STREAMS", "s", "1-x"], INVALID_ID),
        (["COUNT", 1, "BLOCK", 1, "STREAMS", "s", ">"], "ERR Missing GROUP option for XREADGROUP"),
        (["GROUP", "g", "c", "STREAMS", "s", "t", ">"],
         "ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' must be "
         "specified."),
        (["GROUP", "g", "c", "FOO", "STREAMS", "s", ">"], "ERR syntax error"),
        (["GROUP", "g", "c", "COUNT", 1, "s", ">"], "ERR syntax error"),
        (["GROUP", "g", "c", "COUNT", "x", "STREAMS", "s", ">"],
         "ERR value is not an integer or out of range"),
        (["GROUP", "g", "c", "BLOCK", -1, "STREAMS", "s", ">"], "ERR timeout is negative"),
        (["GROUP", "g", "c", "BLOCK", "x", "STREAMS", "s", ">"],
         "ERR timeout is not an integer or out of range"),
    ],
)  # fmt: skip
def test_errors(p: Pair, words: list[str | int | bytes], error: str) -> None:
    assert p.error("XREADGROUP", *words) == error


def test_arity() -> None:
    assert Pair().error("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s") == (
        "ERR wrong number of arguments for 'xreadgroup' command"
    )


# -- XACK ------------------------------------------------------------------------------------


def test_xack_acknowledges_and_ships_only_what_it_acked(p: Pair) -> None:
    p.call("XREADGROUP", "GROUP", "g", "c", "COUNT", 3, "STREAMS", "s", ">")
    result = p.run("XACK", "s", "g", "1-1", "1-1", "4-1", "3-1", "9")
    assert result.reply == 2
    assert result.effects == [argv("XACK", "s", "g", "1-1", "3-1")]
    assert p.call("XPENDING", "s", "g") == [1, b"2-1", b"2-1", [[b"c", b"1"]]]
    result = p.run("XACK", "s", "g", "1-1")
    assert (result.reply, result.effects) == (0, [])
    assert p.effects("XACK", "s", "g", "2") == []  # `2` is 2-0, not 2-1


def test_xack_is_all_or_nothing(p: Pair) -> None:
    p.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    assert p.error("XACK", "s", "g", "1-1", "2-1", "bad") == INVALID_ID
    assert p.error("XACK", "s", "g", "1-1", "-") == INVALID_ID  # strict parsing
    assert p.error("XACK", "s", "g", "+") == INVALID_ID
    assert p.call("XPENDING", "s", "g")[0] == 4  # type: ignore[index]


def test_xack_missing_key_or_group_is_zero_before_parsing(p: Pair) -> None:
    assert p.call("XACK", "missing", "g", "bad") == 0
    assert p.call("XACK", "s", "nog", "bad") == 0
    p.call("SET", "str", "v")
    assert p.error("XACK", "str", "g", "1-1") == (
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    )
    assert p.error("XACK", "s", "g") == "ERR wrong number of arguments for 'xack' command"
