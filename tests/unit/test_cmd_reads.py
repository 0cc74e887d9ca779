"""XLEN, XRANGE, XREVRANGE and XREAD (stream-commands.md 2 and 3.4): replies, COUNT, exclusive
bounds, missing keys, BLOCK specs, `$` / `+`, and every error. Reads never ship effects."""

from __future__ import annotations

import pytest
from enginecalls import call, engine, error, run, stream_of

from xstream.engine import NULL_ARRAY, BlockSpec, Engine

INVALID_ID = "ERR Invalid stream ID specified as stream command argument"
NOT_INT = "ERR value is not an integer or out of range"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
SYNTAX = "ERR syntax error"
MAX = "18446744073709551615"


def entry(id_: str) -> list[object]:
    return [id_.encode(), [b"f", id_.encode()]]


def five(max_entries: int = 2) -> Engine:
    """1-1 2-1 3-1 4-1 5-1 in nodes of two, with 3-1 deleted."""
    e = stream_of(engine(max_entries=max_entries), "s", "1-1", "2-1", "3-1", "4-1", "5-1")
    call(e, "XDEL", "s", "3-1")
    return e


LIVE = ["1-1", "2-1", "4-1", "5-1"]


def test_xlen() -> None:
    e = five()
    assert call(e, "XLEN", "s") == 4
    assert call(e, "XLEN", "nokey") == 0
    call(e, "SET", "str", "x")
    assert error(e, "XLEN", "str") == WRONGTYPE
    assert error(e, "XLEN", "s", "x") == "ERR wrong number of arguments for 'xlen' command"


# -- XRANGE / XREVRANGE ------------------------------------------------------------------------


@pytest.mark.parametrize("max_entries", [1, 2, 100])
@pytest.mark.parametrize(
    ("start", "end", "ids"),
    [
        ("-", "+", LIVE),
        ("2", "4", ["2-1", "4-1"]),
        ("2-1", "4-1", ["2-1", "4-1"]),
        ("2-2", "4-0", []),
        ("(2-1", "+", ["4-1", "5-1"]),
        ("-", "(4-1", ["1-1", "2-1"]),
        ("(1-1", "(5-1", ["2-1", "4-1"]),
        ("(1", "(5", LIVE),  # (1 is after 1-0, (5 before 5-MAX
        ("3", "3", []),  # deleted
        ("5", "1", []),  # start after end
        ("(4-1", "(4-1", []),
        ("0", "(0-1", []),
        (f"({MAX}-18446744073709551614", "+", []),
    ],
)
def test_ranges(max_entries: int, start: str, end: str, ids: list[str]) -> None:
    e = five(max_entries)
    assert call(e, "XRANGE", "s", start, end) == [entry(i) for i in ids]
    assert call(e, "XREVRANGE", "s", end, start) == [entry(i) for i in reversed(ids)]


def test_count() -> None:
    e = five()
    assert call(e, "XRANGE", "s", "-", "+", "COUNT", "2") == [entry("1-1"), entry("2-1")]
    assert call(e, "XREVRANGE", "s", "+", "-", "count", "3") == [entry(i) for i in LIVE[:0:-1]]
    assert call(e, "XRANGE", "s", "-", "+", "COUNT", "10") == [entry(i) for i in LIVE]
    assert call(e, "XRANGE", "s", "(1-1", "+", "COUNT", "1") == [entry("2-1")]
    assert call(e, "XRANGE", "s", "-", "+", "COUNT", "1", "COUNT", "3") == [
        entry(i) for i in LIVE[:3]
    ]


def test_count_zero_or_negative_is_a_null_array() -> None:
    e = five()
    for n in ("0", "-1", "-9223372036854775808"):
        assert call(e, "XRANGE", "s", "-", "+", "COUNT", n) is NULL_ARRAY
        assert call(e, "XREVRANGE", "s", "+", "-", "COUNT", n) is NULL_ARRAY
    # a missing key answers an empty array, even with COUNT 0 (checked after COUNT parsing)
    assert call(e, "XRANGE", "nokey", "-", "+", "COUNT", "0") == []
    assert call(e, "XRANGE", "nokey", "-", "+") == []


def test_empty_stream_is_an_empty_array() -> None:
    e = engine()
    call(e, "XADD", "s", "MAXLEN", "0", "1-1", "f", "v")
    assert call(e, "XRANGE", "s", "-", "+") == []
    assert call(e, "XREVRANGE", "s", "+", "-", "COUNT", "0") is NULL_ARRAY


@pytest.mark.parametrize(
    ("words", "line"),
    [
        (["x", "+"], INVALID_ID),
        (["-", "x"], INVALID_ID),
        (["(-", "+"], INVALID_ID),
        (["-", "(+"], INVALID_ID),
        (["(", "+"], INVALID_ID),
        ([f"({MAX}-{MAX}", "+"], "ERR invalid start ID for the interval"),
        (["-", "(0-0"], "ERR invalid end ID for the interval"),
        ([f"({MAX}-{MAX}", "(0-0"], "ERR invalid start ID for the interval"),
        (["x", "(0-0"], INVALID_ID),  # start parsed (and checked) before end
        (["-", "+", "COUNT"], SYNTAX),
        (["-", "+", "FOO", "1"], SYNTAX),
        (["-", "+", "COUNT", "1", "x"], SYNTAX),
        (["-", "+", "COUNT", "x"], NOT_INT),
        (["-", "+", "COUNT", "1.0"], NOT_INT),
    ],
)
def test_range_errors(words: list[str], line: str) -> None:
    e = five()
    call(e, "SET", "str", "x")
    for key in ("s", "nokey", "str"):
        assert error(e, "XRANGE", key, *words) == line  # arguments before the key
    assert error(e, "XREVRANGE", "s", words[1], words[0], *words[2:]) == line


def test_range_wrong_type_and_arity() -> None:
    e = five()
    call(e, "SET", "str", "x")
    assert error(e, "XRANGE", "str", "-", "+") == WRONGTYPE
    assert error(e, "XREVRANGE", "str", "+", "-", "COUNT", "0") == WRONGTYPE
    assert error(e, "XRANGE", "s", "-") == "ERR wrong number of arguments for 'xrange' command"
    assert error(e, "XREVRANGE", "s") == "ERR wrong number of arguments for 'xrevrange' command"


def test_range_reads_ship_nothing() -> None:
    result = run(five(), "XRANGE", "s", "-", "+")
    assert (result.effects, result.signaled, result.block) == ([], [], None)


# -- XREAD -------------------------------------------------------------------------------------


def two_streams() -> Engine:
    e = five()
    stream_of(e, "t", "7-0", "8-0")
    call(e, "SET", "str", "x")
    return e


def test_xread_replies() -> None:
    e = two_streams()
    assert call(e, "XREAD", "STREAMS", "s", "0") == [[b"s", [entry(i) for i in LIVE]]]
    assert call(e, "XREAD", "STREAMS", "s", "2-1") == [[b"s", [entry("4-1"), entry("5-1")]]]
    assert call(e, "XREAD", "STREAMS", "s", "2") == [[b"s", [entry(i) for i in LIVE[1:]]]]
    assert call(e, "XREAD", "STREAMS", "s", "5-1") is NULL_ARRAY
    assert call(e, "XREAD", "STREAMS", "s", f"{MAX}-{MAX}") is NULL_ARRAY
    # only streams with data are listed, in the order given
    assert call(e, "XREAD", "COUNT", "1", "STREAMS", "t", "nokey", "s", "0", "0", "4-1") == [
        [b"t", [entry("7-0")]],
        [b"s", [entry("5-1")]],
    ]
    assert call(e, "XREAD", "STREAMS", "s", "s", "4-1", "1-1") == [
        [b"s", [entry("5-1")]],
        [b"s", [entry("2-1"), entry("4-1"), entry("5-1")]],
    ]
    assert call(e, "XREAD", "STREAMS", "nokey", "0") is NULL_ARRAY


def test_xread_count() -> None:
    e = two_streams()
    assert call(e, "XREAD", "COUNT", "2", "STREAMS", "s", "0") == [
        [b"s", [entry("1-1"), entry("2-1")]]
    ]
    for n in ("0", "-3"):  # no limit
        assert call(e, "XREAD", "COUNT", n, "STREAMS", "s", "0") == [
            [b"s", [entry(i) for i in LIVE]]
        ]
    assert call(e, "XREAD", "count", "1", "COUNT", "3", "STREAMS", "s", "0") == [
        [b"s", [entry(i) for i in LIVE[:3]]]
    ]


def test_xread_dollar_and_plus() -> None:
    e = two_streams()
    assert call(e, "XREAD", "STREAMS", "s", "$") is NULL_ARRAY
    assert call(e, "XREAD", "STREAMS", "s", "t", "+", "+") == [
        [b"s", [entry("5-1")]],
        [b"t", [entry("8-0")]],
    ]
    assert call(e, "XREAD", "COUNT", "5", "STREAMS", "s", "+") == [[b"s", [entry("5-1")]]]
    assert call(e, "XREAD", "STREAMS", "nokey", "+") is NULL_ARRAY
    # `+` finds the last live entry, not last_id (redis#13632)
    call(e, "XDEL", "s", "5-1")
    assert call(e, "XREAD", "STREAMS", "s", "+") == [[b"s", [entry("4-1")]]]
    call(e, "XDEL", "s", "1-1", "2-1", "4-1")
    assert call(e, "XREAD", "STREAMS", "s", "+") is NULL_ARRAY


def test_xread_plus_on_an_empty_stream_with_last_id_zero() -> None:
    e = engine()
    call(e, "XADD", "s", "MAXLEN", "0", "1-1", "f", "v")
    call(e, "XSETID", "s", "0-0")
    assert call(e, "XREAD", "STREAMS", "s", "+") is NULL_ARRAY
    block = run(e, "XREAD", "BLOCK", "0", "STREAMS", "s", "+").block
    assert block == BlockSpec([b"s"], 0, [b"XREAD", b"BLOCK", b"0", b"STREAMS", b"s", b"+"])


def test_xread_block_spec() -> None:
    e = two_streams()
    call(e, "XADD", "u", "MAXLEN", "0", "3-3", "f", "v")  # empty: `+` has nothing to read
    result = run(e, "XREAD", "BLOCK", "100", "STREAMS", "s", "u", "nokey", "$", "+", "$", now=5000)
    assert result.reply is NULL_ARRAY
    assert result.effects == []
    # `$` becomes the concrete last ID (0-0 for a missing key); `+` stays
    assert result.block == BlockSpec(
        [b"s", b"u", b"nokey"],
        5100,
        [b"XREAD", b"BLOCK", b"100", b"STREAMS", b"s", b"u", b"nokey", b"5-1", b"+", b"0-0"],
    )
    forever = run(e, "XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", "9-0", now=5000)
    assert forever.block == BlockSpec(
        [b"s"], 0, [b"XREAD", b"COUNT", b"1", b"BLOCK", b"0", b"STREAMS", b"s", b"9-0"]
    )


def test_xread_block_with_data_answers_at_once() -> None:
    result = run(two_streams(), "XREAD", "BLOCK", "0", "STREAMS", "s", "4-1")
    assert result.reply == [[b"s", [entry("5-1")]]]
    assert result.block is None


def test_xread_dollar_after_deleting_the_tail_still_means_last_id() -> None:
    e = two_streams()
    call(e, "XDEL", "s", "5-1")
    result = run(e, "XREAD", "BLOCK", "10", "STREAMS", "s", "$", now=1)
    assert result.block is not None
    assert result.block.argv[-1] == b"5-1"


UNBALANCED = (
    "ERR Unbalanced 'xread' list of streams: for each stream key an ID, '+', or '$' must be "
    "specified."
)
ONLY_XREADGROUP = "ERR The {} option is only supported by XREADGROUP. You called XREAD instead."


@pytest.mark.parametrize(
    ("words", "line"),
    [
        (["STREAMS", "s", "t", "0"], UNBALANCED),
        (["streams", "s", "streams", "0"], UNBALANCED),
        (["COUNT", "1", "x", "STREAMS", "s", "0"], SYNTAX),
        (["COUNT", "1", "BLOCK", "1", "s", "0"], SYNTAX),  # no STREAMS
        (["FOO", "STREAMS", "s", "0"], SYNTAX),
        (["COUNT", "x", "STREAMS", "s", "0"], NOT_INT),
        (["BLOCK", "x", "STREAMS", "s", "0"], "ERR timeout is not an integer or out of range"),
        (["BLOCK", "1.5", "STREAMS", "s", "0"], "ERR timeout is not an integer or out of range"),
        (["BLOCK", "-1", "STREAMS", "s", "0"], "ERR timeout is negative"),
        (["BLOCK", "9223372036854775807", "STREAMS", "s", "0"], "ERR timeout is out of range"),
        (["GROUP", "g", "c", "STREAMS", "s", "0"], ONLY_XREADGROUP.format("GROUP")),
        (["group", "g", "c", "STREAMS", "s", "0"], ONLY_XREADGROUP.format("GROUP")),
        (["NOACK", "STREAMS", "s", "0"], ONLY_XREADGROUP.format("NOACK")),
        (["CLAIM", "5", "STREAMS", "s", "0"], ONLY_XREADGROUP.format("CLAIM")),
        (
            ["STREAMS", "s", ">"],
            "ERR The > ID can be specified only when calling XREADGROUP "
            "using the GROUP <group> <consumer> option.",
        ),
        (["STREAMS", "s", "-"], INVALID_ID),
        (["STREAMS", "s", "(1"], INVALID_ID),
        (["STREAMS", "s", "1-*"], INVALID_ID),
        (["STREAMS", "s", "nokey", "0", "x"], INVALID_ID),
        (["STREAMS", "s", "str", "x", "0"], INVALID_ID),  # s's ID is checked before str's type
        (["STREAMS", "s", "str", "0", "x"], WRONGTYPE),
        (["STREAMS", "nokey", "str", "0", "0"], WRONGTYPE),
    ],
)
def test_xread_errors(words: list[str], line: str) -> None:
    assert error(two_streams(), "XREAD", *words, now=10) == line


def test_xread_arity() -> None:
    e = two_streams()
    assert error(e, "XREAD", "STREAMS", "s") == "ERR wrong number of arguments for 'xread' command"


def test_xread_never_ships_effects() -> None:
    e = two_streams()
    for words in (["STREAMS", "s", "0"], ["BLOCK", "5", "STREAMS", "s", "$"]):
        result = run(e, "XREAD", *words)
        assert (result.effects, result.signaled) == ([], [])
