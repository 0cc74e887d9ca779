"""XADD and XTRIM: IDs, options in any order, every error in Redis's order, trimming (exact,
`~`, LIMIT, policies) and the effects each write ships (stream-commands.md 3.1-3.2,
stream-errors.md B, propagation.md 1-2)."""

from __future__ import annotations

import pytest
from enginecalls import call, effects, engine, error, ids_of, info, run, stream_of

from xstream.engine.commands import add_trim

INVALID_ID = "ERR Invalid stream ID specified as stream command argument"
NOT_INT = "ERR value is not an integer or out of range"
ARITY = "ERR wrong number of arguments for 'xadd' command"
SMALLER = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
EXHAUSTED = "ERR The stream has exhausted the last possible ID, unable to add more items"
ZERO = "ERR The ID specified in XADD must be greater than 0-0"
BOTH = "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
LIMIT_NO_STRATEGY = "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"
LIMIT_NO_TILDE = "ERR syntax error, LIMIT cannot be used without the special ~ option"
NO_STRATEGY = "ERR syntax error, XTRIM must be called with a trimming strategy"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
MAX = "18446744073709551615"


# -- IDs ---------------------------------------------------------------------------------------


def test_explicit_id_and_entry_content() -> None:
    e = engine()
    assert call(e, "XADD", "s", "1-1", "f", "v", "f", b"\x00\r\n", "n", "05") == b"1-1"
    assert call(e, "XADD", "s", "2", "a", "-0", "b", "123") == b"2-0"
    assert call(e, "XRANGE", "s", "-", "+") == [
        [b"1-1", [b"f", b"v", b"f", b"\x00\r\n", b"n", b"05"]],
        [b"2-0", [b"a", b"-0", b"b", b"123"]],
    ]
    assert call(e, "XLEN", "s") == 2


def test_star_uses_the_clock_and_never_goes_back() -> None:
    e = engine()
    assert call(e, "XADD", "s", "*", "f", "v", now=5000) == b"5000-0"
    assert call(e, "XADD", "s", "*", "f", "v", now=5000) == b"5000-1"
    assert call(e, "XADD", "s", "*", "f", "v", now=4000) == b"5000-2"  # clock went backwards
    assert call(e, "XADD", "s", "*", "f", "v", now=6000) == b"6000-0"
    call(e, "XADD", "s", "6000-18446744073709551615", "f", "v")
    assert call(e, "XADD", "s", "*", "f", "v", now=6000) == b"6001-0"


def test_auto_sequence() -> None:
    e = engine()
    assert call(e, "XADD", "s", "0-*", "f", "v") == b"0-1"  # never 0-0
    assert call(e, "XADD", "s", "5-*", "f", "v") == b"5-0"
    assert call(e, "XADD", "s", "5-*", "f", "v") == b"5-1"
    assert error(e, "XADD", "s", "4-*", "f", "v") == SMALLER
    call(e, "XADD", "s", "7-18446744073709551615", "f", "v")
    assert error(e, "XADD", "s", "7-*", "f", "v") == SMALLER  # [7.0.15] says "too large"
    assert call(e, "XADD", "s", "8-*", "f", "v") == b"8-0"


def test_zero_id_is_rejected_before_the_key_is_looked_up() -> None:
    e = engine()
    call(e, "SET", "str", "x")
    for id_ in ("0-0", "0", "00-0"):
        assert error(e, "XADD", "s", id_, "f", "v") == ZERO
        assert error(e, "XADD", "str", id_, "f", "v") == ZERO
        assert error(e, "XADD", "nokey", "NOMKSTREAM", id_, "f", "v") == ZERO
    assert call(e, "EXISTS", "s") == 0
    assert error(e, "XADD", "str", "0-*", "f", "v") == WRONGTYPE


def test_equal_or_smaller_ids() -> None:
    e = stream_of(engine(), "s", "5-5")
    for id_ in ("5-5", "5-4", "4-9", "5", "1"):
        assert error(e, "XADD", "s", id_, "f", "v") == SMALLER
    assert call(e, "XADD", "s", "5-6", "f", "v") == b"5-6"


def test_exhausted_stream() -> None:
    e = engine()
    call(e, "XADD", "s", f"{MAX}-{MAX}", "f", "v")
    for id_ in ("*", f"{MAX}-*", "1-1", f"{MAX}-{MAX}"):
        assert error(e, "XADD", "s", id_, "f", "v") == EXHAUSTED
    call(e, "XDEL", "s", f"{MAX}-{MAX}")
    assert error(e, "XADD", "s", "*", "f", "v") == EXHAUSTED  # last_id, not the last entry


def test_last_sequence_then_auto_ms_rollover() -> None:
    e = engine()
    assert call(e, "XADD", "s", f"{MAX}-*", "f", "v") == f"{MAX}-0".encode()
    call(e, "XADD", "s", f"{MAX}-18446744073709551614", "f", "v")
    assert call(e, "XADD", "s", "*", "f", "v", now=1) == f"{MAX}-{MAX}".encode()


@pytest.mark.parametrize(
    "words",
    [
        ["s", "1-1", "f"],
        ["s", "1-1", "f", "v", "g"],
        ["s", "NOMKSTREAM", "*", "f"],
        ["s", "NOMKSTREAM", "NOMKSTREAM", "NOMKSTREAM"],  # options only, no ID
        ["s", "MAXLEN", "~", "5"],
        ["s", "*", "a", "b", "c"],
    ],
)
def test_field_value_arity(words: list[str]) -> None:
    assert error(engine(), "XADD", *words) == ARITY


def test_error_precedence() -> None:
    e = stream_of(engine(), "s", "5-0")
    call(e, "SET", "str", "x")
    assert error(e, "XADD", "s", "MAXLEN", "x", "1-1", "f") == NOT_INT  # options before arity
    assert error(e, "XADD", "s", "0-0", "f") == ARITY  # arity before 0-0
    assert error(e, "XADD", "str", "NOMKSTREAM", "1-1", "f", "v") == WRONGTYPE
    assert error(e, "XADD", "s", "x", "f", "v", "g") == INVALID_ID  # ID parsed before arity


def test_too_large_comes_after_the_id_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    # The real limit is 1 GiB; a smaller one exercises the same check.
    monkeypatch.setattr(add_trim, "LISTPACK_MAX_SIZE", 10)
    e = stream_of(engine(), "s", "5-0")
    too_large = "ERR Elements are too large to be stored"
    assert error(e, "XADD", "s", "6-0", "f", "0123456789") == too_large
    assert error(e, "XADD", "s", "4-0", "f", "0123456789") == SMALLER
    assert error(e, "XADD", "new", "*", "f", "0123456789") == too_large
    assert call(e, "EXISTS", "new") == 0  # all-or-nothing (Redis leaves an empty key here)
    assert call(e, "XADD", "s", "6-0", "f", "012345678") == b"6-0"


# -- options -----------------------------------------------------------------------------------


def test_nomkstream() -> None:
    e = engine()
    result = run(e, "XADD", "s", "NOMKSTREAM", "*", "f", "v")
    assert result.reply is None
    assert result.effects == []
    assert result.signaled == []
    assert call(e, "EXISTS", "s") == 0
    call(e, "XADD", "s", "1-1", "f", "v")
    assert call(e, "XADD", "s", "nomkstream", "2-1", "f", "v") == b"2-1"


def test_options_in_any_order_and_any_case() -> None:
    e = stream_of(engine(), "s", "1-0", "2-0", "3-0")
    assert call(e, "XADD", "s", "NOMKSTREAM", "maxlen", "=", "2", "4-0", "f", "v") == b"4-0"
    assert ids_of(e) == [b"3-0", b"4-0"]
    assert call(e, "XADD", "s", "MinId", "4", "NoMkStream", "5-0", "f", "v") == b"5-0"
    assert ids_of(e) == [b"4-0", b"5-0"]
    assert call(e, "XADD", "s", "LIMIT", "5", "MAXLEN", "~", "1", "DELREF", "6-0", "f", "v")
    assert call(e, "XADD", "s", "acked", "MAXLEN", "9", "7-0", "f", "v") == b"7-0"


def test_star_ends_the_options() -> None:
    e = engine()
    id_ = call(e, "XADD", "s", "*", "MAXLEN", "1", now=9)
    assert call(e, "XRANGE", "s", "-", "+") == [[id_, [b"MAXLEN", b"1"]]]


@pytest.mark.parametrize(
    ("words", "line"),
    [
        (["MAXLEN", "1", "MINID", "1"], BOTH),
        (["MINID", "1", "MAXLEN", "1"], BOTH),
        (["MAXLEN", "1", "MAXLEN", "1"], BOTH),
        (["MINID", "1", "MINID", "1"], BOTH),
        (["MAXLEN", "-1"], "ERR The MAXLEN argument must be >= 0."),
        (["MAXLEN", "~", "-1"], "ERR The MAXLEN argument must be >= 0."),
        (["MAXLEN", "x"], NOT_INT),
        (["MAXLEN", "1.5"], NOT_INT),
        (["MAXLEN", "9223372036854775808"], NOT_INT),
        (["MAXLEN", "~", "~"], NOT_INT),
        (["MINID", "-"], INVALID_ID),
        (["MINID", "+"], INVALID_ID),
        (["MINID", "~", "x"], INVALID_ID),
        (["LIMIT", "5"], LIMIT_NO_STRATEGY),
        (["LIMIT", "0"], LIMIT_NO_TILDE),  # limit 0 skips the strategy check
        (["MAXLEN", "5", "LIMIT", "5"], LIMIT_NO_TILDE),
        (["MAXLEN", "=", "5", "LIMIT", "5"], LIMIT_NO_TILDE),
        (["MINID", "5", "LIMIT", "0"], LIMIT_NO_TILDE),
        (["MAXLEN", "~", "5", "LIMIT", "-1"], "ERR The LIMIT argument must be >= 0."),
        (["MAXLEN", "~", "5", "LIMIT", "x"], NOT_INT),
        (["KEEPREF", "DELREF"], INVALID_ID),  # a second policy word is taken as the ID
        (["ACKED", "ACKED"], INVALID_ID),
        (["FOO"], INVALID_ID),
    ],
)
def test_option_errors(words: list[str], line: str) -> None:
    e = stream_of(engine(), "s", "1-0")
    assert error(e, "XADD", "s", *words, "9-0", "f", "v") == line


def test_maxlen_tilde_limit_zero_is_unlimited() -> None:
    e = engine(max_entries=2)
    stream_of(e, "s", *(f"{i}-0" for i in range(1, 11)))
    assert call(e, "XADD", "s", "MAXLEN", "~", "3", "LIMIT", "0", "11-0", "f", "v") == b"11-0"
    assert call(e, "XLEN", "s") == 3


def test_maxlen_zero_leaves_an_empty_stream() -> None:
    e = engine()
    assert call(e, "XADD", "s", "MAXLEN", "0", "5-1", "f", "v") == b"5-1"
    meta = info(e)
    assert meta.get(b"length") == 0
    assert meta.get(b"radix-tree-keys") == 0
    assert meta.get(b"radix-tree-nodes") == 1
    assert meta.get(b"last-generated-id") == b"5-1"
    assert meta.get(b"entries-added") == 1
    assert meta.get(b"recorded-first-entry-id") == b"0-0"
    assert meta.get(b"max-deleted-entry-id") == b"0-0"
    assert meta.get(b"first-entry") is None
    assert meta.get(b"last-entry") is None
    assert error(e, "XADD", "s", "5-1", "f", "v") == SMALLER


# -- trimming ----------------------------------------------------------------------------------


def ten(max_entries: int = 3) -> object:
    """Entries 1-0 .. 10-0 in nodes of `max_entries`."""
    return stream_of(engine(max_entries=max_entries), "s", *(f"{i}-0" for i in range(1, 11)))


def test_xtrim_exact() -> None:
    e = ten()
    assert call(e, "XTRIM", "s", "MAXLEN", "7") == 3
    assert ids_of(e)[0] == b"4-0"
    assert call(e, "XTRIM", "s", "MAXLEN", "=", "7") == 0
    assert call(e, "XTRIM", "s", "MINID", "6") == 2
    assert ids_of(e)[0] == b"6-0"
    assert call(e, "XTRIM", "s", "MINID", "=", "5-0") == 0
    assert call(e, "XTRIM", "s", "MAXLEN", "0") == 5
    assert call(e, "XLEN", "s") == 0
    assert call(e, "EXISTS", "s") == 1  # trimming never deletes the key


def test_xtrim_approximate_removes_whole_nodes_only() -> None:
    e = ten()  # nodes [1-3] [4-6] [7-9] [10]
    assert call(e, "XTRIM", "s", "MAXLEN", "~", "5") == 3  # 7 left: [4-6] would leave 4 < 5
    assert call(e, "XTRIM", "s", "MAXLEN", "~", "5") == 0
    assert call(e, "XTRIM", "s", "MINID", "~", "9") == 3  # [4-6] ends below 9, [7-9] does not
    assert ids_of(e) == [b"7-0", b"8-0", b"9-0", b"10-0"]
    assert info(e).get(b"recorded-first-entry-id") == b"7-0"


def test_xtrim_limit_is_checked_per_node() -> None:
    e = ten()
    assert call(e, "XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "5") == 3
    assert call(e, "XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "6") == 6
    assert call(e, "XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "0") == 1


def test_default_limit_is_100_times_node_entries() -> None:
    e = stream_of(engine(max_entries=1), "s", *(f"{i}-0" for i in range(1, 251)))
    assert call(e, "XTRIM", "s", "MAXLEN", "~", "0") == 100
    assert call(e, "XTRIM", "s", "MAXLEN", "0") == 150  # exact trims are never limited
    e = stream_of(engine(max_bytes=0, max_entries=0), "s", *(f"{i}-0" for i in range(1, 251)))
    assert call(e, "XTRIM", "s", "MAXLEN", "~", "0") == 250  # one node: limit 10000


def test_exact_minid_can_leave_a_node_of_tombstones() -> None:
    e = ten()
    call(e, "XDEL", "s", "6-0")
    assert call(e, "XTRIM", "s", "MINID", "6") == 5  # node [4-6] keeps only tombstones
    meta = info(e)
    assert meta.get(b"radix-tree-keys") == 3
    assert meta.get(b"recorded-first-entry-id") == b"7-0"
    assert meta.get(b"max-deleted-entry-id") == b"6-0"  # trims never raise it


@pytest.mark.parametrize("policy", ["KEEPREF", "DELREF", "ACKED", "delref"])
def test_policies_without_groups_trim_the_same(policy: str) -> None:
    e = ten()
    assert call(e, "XTRIM", "s", "MAXLEN", "4", policy) == 6
    assert call(e, "XTRIM", "s", policy, "MINID", "9") == 2  # policy word before the strategy


def test_delref_approximate_trims_entry_by_entry() -> None:
    e = ten()
    assert call(e, "XTRIM", "s", "MINID", "~", "5", "DELREF") == 4
    assert ids_of(e)[0] == b"5-0"
    e = ten()
    assert call(e, "XTRIM", "s", "MINID", "~", "5") == 3  # KEEPREF: whole nodes


@pytest.mark.parametrize(
    ("words", "line"),
    [
        (["LIMIT", "0"], NO_STRATEGY),
        (["LIMIT", "1"], LIMIT_NO_STRATEGY),
        (["KEEPREF", "LIMIT", "0"], NO_STRATEGY),
        (["MAXLEN", "1", "LIMIT", "1"], LIMIT_NO_TILDE),
        (["FOO", "BAR"], "ERR syntax error"),
        (["NOMKSTREAM", "MAXLEN", "1"], "ERR syntax error"),
        (["MAXLEN", "1", "*"], "ERR syntax error"),
        (["MAXLEN", "1", "KEEPREF", "KEEPREF"], "ERR syntax error"),
        (["MAXLEN", "1", "KEEPREF", "ACKED"], "ERR syntax error"),
        (["MAXLEN", "~", "1", "~"], "ERR syntax error"),
        (["MAXLEN", "~"], NOT_INT),
        (["MAXLEN", "1", "MINID", "1"], BOTH),
        (["MINID", "-"], INVALID_ID),
    ],
)
def test_xtrim_errors(words: list[str], line: str) -> None:
    e = ten()
    assert error(e, "XTRIM", "s", *words) == line
    assert error(e, "XTRIM", "nokey", *words) == line  # parsed before the key is looked up


def test_xtrim_arity_missing_key_and_wrong_type() -> None:
    e = engine()
    assert error(e, "XTRIM", "s", "MAXLEN") == "ERR wrong number of arguments for 'xtrim' command"
    assert run(e, "XTRIM", "nokey", "MAXLEN", "0").reply == 0
    assert call(e, "EXISTS", "nokey") == 0
    call(e, "SET", "str", "x")
    assert error(e, "XTRIM", "str", "MAXLEN", "0") == WRONGTYPE


# -- effects -----------------------------------------------------------------------------------


def test_xadd_effects_carry_the_concrete_id() -> None:
    e = engine()
    assert effects(e, "XADD", "s", "*", "f", "v", now=5000) == [
        [b"XADD", b"s", b"5000-0", b"f", b"v"]
    ]
    assert effects(e, "XADD", "s", "5000-*", "f", "v") == [[b"XADD", b"s", b"5000-1", b"f", b"v"]]
    assert error(e, "XADD", "s", "NOMKSTREAM", "9-9", "a", "b") == SMALLER
    assert effects(e, "XADD", "s", "NOMKSTREAM", "6000-1", "a", "b") == [
        [b"XADD", b"s", b"6000-1", b"a", b"b"]
    ]


def test_xadd_signals_its_key() -> None:
    assert run(engine(), "XADD", "s", "1-1", "f", "v").signaled == [(0, b"s")]


def test_xadd_approximate_maxlen_ships_the_length_after() -> None:
    e = ten()
    assert effects(e, "XADD", "s", "MAXLEN", "~", "5", "LIMIT", "50", "11-0", "f", "v") == [
        [b"XADD", b"s", b"MAXLEN", b"=", b"5", b"11-0", b"f", b"v"]
    ]
    # nothing trimmed: no trim part (the entry alone reproduces the state)
    assert effects(e, "XADD", "s", "MAXLEN", "~", "5", "12-0", "f", "v") == [
        [b"XADD", b"s", b"12-0", b"f", b"v"]
    ]


def test_xadd_exact_trims_ship_their_threshold() -> None:
    e = ten()
    assert effects(e, "XADD", "s", "MAXLEN", "3", "11-0", "f", "v") == [
        [b"XADD", b"s", b"MAXLEN", b"=", b"3", b"11-0", b"f", b"v"]
    ]
    assert effects(e, "XADD", "s", "DELREF", "MINID", "=", "10", "12-0", "f", "v") == [
        [b"XADD", b"s", b"DELREF", b"MINID", b"=", b"10-0", b"12-0", b"f", b"v"]
    ]


def test_approximate_minid_ships_the_first_kept_id_tombstones_included() -> None:
    e = ten()
    call(e, "XDEL", "s", "4-0")  # head of the second node
    assert effects(e, "XTRIM", "s", "MINID", "~", "6") == [[b"XTRIM", b"s", b"MINID", b"=", b"4-0"]]
    assert ids_of(e)[0] == b"5-0"
    assert effects(e, "XTRIM", "s", "MINID", "~", "99") == [
        [b"XTRIM", b"s", b"MINID", b"=", f"{MAX}-{MAX}".encode()]
    ]
    assert call(e, "XLEN", "s") == 0


def test_approximate_minid_with_delref_and_limit_ships_what_was_removed() -> None:
    e = ten()
    assert effects(e, "XTRIM", "s", "MINID", "~", "8", "LIMIT", "4", "DELREF") == [
        [b"XTRIM", b"s", b"MINID", b"=", b"4-0", b"DELREF"]
    ]
    assert ids_of(e)[0] == b"4-0"
    assert effects(e, "XTRIM", "s", "MINID", "~", "5", "DELREF") == [
        [b"XTRIM", b"s", b"MINID", b"=", b"5-0", b"DELREF"]
    ]


def test_xtrim_effects_only_when_something_went() -> None:
    e = ten()
    assert effects(e, "XTRIM", "s", "MAXLEN", "~", "9") == []
    assert effects(e, "XTRIM", "s", "MAXLEN", "20") == []
    assert effects(e, "XTRIM", "s", "MINID", "1") == []
    assert effects(e, "XTRIM", "nokey", "MAXLEN", "0") == []
    assert effects(e, "XTRIM", "s", "MAXLEN", "~", "4", "LIMIT", "100") == [
        [b"XTRIM", b"s", b"MAXLEN", b"=", b"4"]
    ]
    assert effects(e, "XTRIM", "s", "maxlen", "2", "acked") == [
        [b"XTRIM", b"s", b"MAXLEN", b"=", b"2", b"ACKED"]
    ]


@pytest.mark.parametrize("name", ["XADD", "xadd", "XAdd", "xADD"])
def test_command_names_match_in_any_case(name: str) -> None:
    """Lower and upper case are looked up as spelled, any other case folded: the same
    command, the same arity error."""
    e = engine()
    assert call(e, name, "s", "1-1", "f", "v") == b"1-1"
    assert error(e, name, "s", "2-0") == "ERR wrong number of arguments for 'xadd' command"
    assert error(e, name) == "ERR wrong number of arguments for 'xadd' command"
