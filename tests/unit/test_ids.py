"""Stream IDs: formatting, ordering, incr/decr, and parsing exactly as Redis's
streamGenericParseIDOrReply does it, strtoull quirks included (ids.py)."""

from __future__ import annotations

import copy
import pickle

import pytest

from xstream.engine.errors import INVALID_ID, StreamError
from xstream.engine.ids import (
    INT64_MAX,
    INT64_MIN,
    MAX_ID,
    MIN_ID,
    UINT64_MAX,
    StreamID,
    next_auto_id,
    parse_id,
    parse_interval,
    parse_loose,
    parse_strict,
    string2ll,
    string2ull,
)

U = UINT64_MAX


# -- the value type ----------------------------------------------------------------------------


def test_encode_and_str() -> None:
    assert StreamID(1526919030474, 55).encode() == b"1526919030474-55"
    assert str(StreamID(0, 1)) == "0-1"
    assert MAX_ID.encode() == b"18446744073709551615-18446744073709551615"
    assert MIN_ID.encode() == b"0-0"


def test_order_is_ms_then_seq() -> None:
    ids = [StreamID(2, 0), StreamID(1, U), StreamID(1, 0), StreamID(0, 5), StreamID(U, 0)]
    assert sorted(ids) == [StreamID(0, 5), StreamID(1, 0), StreamID(1, U), StreamID(2, 0), ids[4]]


def test_comparisons_equality_and_hash_follow_ms_then_seq() -> None:
    ids = [StreamID(ms, seq) for ms in (0, 1, 2, U) for seq in (0, 1, U - 1, U)]
    for a in ids:
        for b in ids:
            pair = ((a.ms, a.seq), (b.ms, b.seq))
            assert (a < b, a <= b, a > b, a >= b) == (
                pair[0] < pair[1],
                pair[0] <= pair[1],
                pair[0] > pair[1],
                pair[0] >= pair[1],
            )
            assert (a == b, a != b) == (pair[0] == pair[1], pair[0] != pair[1])
    assert len({StreamID(1, 2), StreamID(1, 2), StreamID(2, 1)}) == 2
    assert {StreamID(7, 8): "x"}[StreamID(7, 8)] == "x"
    assert StreamID(1, 2) != (1, 2)  # a value of its own, not a tuple
    assert StreamID(U, 3) != "x"


def test_repr_and_pickle_round_trip() -> None:
    a = StreamID(1526919030474, U)
    assert repr(a) == "StreamID(ms=1526919030474, seq=18446744073709551615)"
    assert pickle.loads(pickle.dumps(a)) == a
    assert copy.copy(a) == a


def test_rax_key_is_big_endian_and_sorts_like_ids() -> None:
    a = StreamID(1, U)
    b = StreamID(2, 0)
    assert a.key() == b"\x00" * 7 + b"\x01" + b"\xff" * 8
    assert a.key() < b.key()
    assert StreamID.from_key(a.key()) == a
    assert StreamID.from_key(MAX_ID.key()) == MAX_ID
    assert len(MIN_ID.key()) == 16


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (StreamID(5, 7), StreamID(5, 8)),
        (StreamID(5, U), StreamID(6, 0)),
        (StreamID(U, U - 1), MAX_ID),
        (MIN_ID, StreamID(0, 1)),
    ],
)
def test_incr_and_decr_are_inverse(before: StreamID, after: StreamID) -> None:
    assert before.incr() == after
    assert after.decr() == before


def test_incr_past_max_and_decr_below_min_are_none() -> None:
    assert MAX_ID.incr() is None
    assert MIN_ID.decr() is None


# -- integer parsing ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (b"0", 0),
        (b"7", 7),
        (b"-7", -7),
        (b"9223372036854775807", INT64_MAX),
        (b"-9223372036854775808", INT64_MIN),
        (b"9223372036854775808", None),  # overflow
        (b"-9223372036854775809", None),
        (b"-0", None),
        (b"01", None),
        (b"+1", None),
        (b" 1", None),
        (b"1 ", None),
        (b"", None),
        (b"-", None),
        (b"1" * 21, None),
        (b"1.0", None),
    ],
)
def test_string2ll_is_canonical_only(text: bytes, value: int | None) -> None:
    assert string2ll(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (b"5", 5),
        (b"18446744073709551615", U),  # beyond int64: the strtoull fallback
        (b"18446744073709551616", None),  # ERANGE
        (b"-1", None),  # canonical negative: rejected
        (b"-01", U),  # not canonical, so strtoull, which negates modulo 2**64
        (b"-0", 0),
        (b"-18446744073709551615", 1),
        (b"+5", 5),
        (b" 5", 5),
        (b"\t\n\v\f\r 5", 5),
        (b"007", 7),
        (b"5 ", None),
        (b" ", None),
        (b"+", None),
        (b"++5", None),
        (b"0x10", None),
        (b"1e3", None),
    ],
)
def test_string2ull_strtoull_fallback(text: bytes, value: int | None) -> None:
    assert string2ull(text) == value


# -- ID arguments ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b"1-1", StreamID(1, 1)),
        (b"1526919030474-55", StreamID(1526919030474, 55)),
        (b"18446744073709551615-18446744073709551615", MAX_ID),
        (b"0-0", MIN_ID),
        (b" 5-1", StreamID(5, 1)),
        (b"+6-1", StreamID(6, 1)),
        (b"01-1", StreamID(1, 1)),
        (b"1-01", StreamID(1, 1)),
        (b"7--01", StreamID(7, U)),
        (b"7--0", StreamID(7, 0)),
        (b"9-+5", StreamID(9, 5)),
        (b"9- 5", StreamID(9, 5)),
        (b"9223372036854775808-0", StreamID(1 << 63, 0)),
    ],
)
def test_parse_full_ids(text: bytes, expected: StreamID) -> None:
    assert parse_strict(text) == expected
    assert parse_loose(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        b"",
        b"x",
        b"1-x",
        b"1-",
        b"-1",
        b"-5-1",
        b"1-2-3",
        b"7--1",
        b"18446744073709551616-0",
        b"0-18446744073709551616",
        b"1.5",
        b"5 -1",
        b"5-1 ",
        b"*",
        b"5-*",  # only XADD allows the auto sequence
        b"(5",
        b"$",
        b">",
    ],
)
def test_malformed_ids_are_rejected_with_redis_text(text: bytes) -> None:
    with pytest.raises(StreamError) as err:
        parse_loose(text)
    assert err.value.line == "ERR " + INVALID_ID
    with pytest.raises(StreamError):
        parse_strict(text)


def test_incomplete_ids_take_the_callers_sequence() -> None:
    assert parse_loose(b"5") == StreamID(5, 0)
    assert parse_loose(b"5", missing_seq=U) == StreamID(5, U)
    assert parse_strict(b"+5", missing_seq=3) == StreamID(5, 3)
    assert parse_id(b"5") == (StreamID(5, 0), True)


def test_minus_and_plus_are_loose_only() -> None:
    assert parse_loose(b"-") == MIN_ID
    assert parse_loose(b"+") == MAX_ID
    assert parse_loose(b"-", missing_seq=U) == MIN_ID  # not an incomplete ID
    for text in (b"-", b"+"):
        with pytest.raises(StreamError, match=INVALID_ID):
            parse_strict(text)


def test_auto_sequence_form_is_xadd_only() -> None:
    assert parse_id(b"5-*", strict=True, allow_auto_seq=True) == (StreamID(5, 0), False)
    assert parse_id(b"18446744073709551615-*", allow_auto_seq=True) == (StreamID(U, 0), False)
    assert parse_id(b"5-1", allow_auto_seq=True) == (StreamID(5, 1), True)
    for text in (b"*", b"-*", b"5-**", b"*-1", b"5- *"):
        with pytest.raises(StreamError, match=INVALID_ID):
            parse_id(text, allow_auto_seq=True)


def test_length_limit_is_127_bytes() -> None:
    ok = b"1-" + b"0" * 124 + b"1"  # leading zeros are fine for strtoull
    assert len(ok) == 127
    assert parse_strict(ok) == StreamID(1, 1)
    with pytest.raises(StreamError, match=INVALID_ID):
        parse_strict(b"0" + ok)
    # the limit counts bytes after a NUL too: the C buffer holds the whole argument
    with pytest.raises(StreamError, match=INVALID_ID):
        parse_strict(b"1-1\x00" + b"x" * 124)


def test_parsing_stops_at_nul_like_a_c_string() -> None:
    assert parse_strict(b"5-1\x00junk") == StreamID(5, 1)
    assert parse_strict(b"5\x00-1") == StreamID(5, 0)
    assert parse_loose(b"-\x00x") == MIN_ID
    assert parse_loose(b"+\x00") == MAX_ID
    with pytest.raises(StreamError, match=INVALID_ID):
        parse_strict(b"-\x00x")
    with pytest.raises(StreamError, match=INVALID_ID):
        parse_loose(b"\x005-1")


# -- range bounds ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        (b"-", MIN_ID, MIN_ID),
        (b"+", MAX_ID, MAX_ID),
        (b"5", StreamID(5, 0), StreamID(5, U)),
        (b"5-3", StreamID(5, 3), StreamID(5, 3)),
        (b"(5-3", StreamID(5, 4), StreamID(5, 2)),
        (b"(5", StreamID(5, 1), StreamID(5, U - 1)),
        (b"(5-0", StreamID(5, 1), StreamID(4, U)),
        (b"(5-18446744073709551615", StreamID(6, 0), StreamID(5, U - 1)),
        (b"(0-0", StreamID(0, 1), None),
        (b"(18446744073709551615-18446744073709551615", None, StreamID(U, U - 1)),
    ],
)
def test_interval_bounds(text: bytes, start: StreamID | None, end: StreamID | None) -> None:
    for is_start, want in ((True, start), (False, end)):
        if want is None:
            which = "start" if is_start else "end"
            with pytest.raises(StreamError) as err:
                parse_interval(text, start=is_start)
            assert err.value.line == f"ERR invalid {which} ID for the interval"
        else:
            assert parse_interval(text, start=is_start) == want


@pytest.mark.parametrize("text", [b"(", b"(-", b"(+", b"((5", b"(5-*", b"( 5x", b"(\x00"])
def test_bad_exclusive_bounds_are_invalid_ids(text: bytes) -> None:
    for is_start in (True, False):
        with pytest.raises(StreamError, match=INVALID_ID):
            parse_interval(text, start=is_start)


def test_exclusive_bound_uses_strtoull_too() -> None:
    assert parse_interval(b"( 5-1", start=True) == StreamID(5, 2)
    assert parse_interval(b"(+5", start=False) == StreamID(5, U - 1)


# -- automatic IDs -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("last", "now", "expected"),
    [
        (MIN_ID, 1000, StreamID(1000, 0)),
        (StreamID(999, 7), 1000, StreamID(1000, 0)),
        (StreamID(1000, 7), 1000, StreamID(1000, 8)),  # same millisecond
        (StreamID(2000, 7), 1000, StreamID(2000, 8)),  # the clock went backwards
        (StreamID(2000, U), 1000, StreamID(2001, 0)),  # and the sequence is exhausted
        (MIN_ID, 0, StreamID(0, 1)),
        (StreamID(U, U - 1), 5, MAX_ID),
        (MAX_ID, 5, None),
    ],
)
def test_next_auto_id(last: StreamID, now: int, expected: StreamID | None) -> None:
    assert next_auto_id(last, now) == expected
