"""XDEL, XSETID, XINFO STREAM and XINFO HELP (stream-commands.md 3.3, 3.6, 3.7;
stream-errors.md B): counters, every error in Redis's order, and the effects of the writes."""

from __future__ import annotations

import pytest
from enginecalls import call, effects, engine, error, ids_of, info, run, stream_of

from xstream.engine import Engine, ReplyMap, Status

INVALID_ID = "ERR Invalid stream ID specified as stream command argument"
NOT_INT = "ERR value is not an integer or out of range"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
MAX = "18446744073709551615"


def six() -> Engine:
    """Entries 1-0 .. 6-0 in nodes of two, and a string key."""
    e = stream_of(engine(max_entries=2), "s", *(f"{i}-0" for i in range(1, 7)))
    call(e, "SET", "str", "x")
    return e


# -- XDEL --------------------------------------------------------------------------------------


def test_xdel_counts_what_it_deleted() -> None:
    e = six()
    assert call(e, "XDEL", "s", "2-0", "9-9", "2-0", "4") == 2  # a repeat counts once
    assert ids_of(e) == [b"1-0", b"3-0", b"5-0", b"6-0"]
    assert call(e, "XDEL", "s", "2-0") == 0
    assert call(e, "XLEN", "s") == 4


def test_xdel_missing_key_answers_zero_before_parsing() -> None:
    e = six()
    assert call(e, "XDEL", "nokey", "x", "-") == 0
    assert call(e, "EXISTS", "nokey") == 0
    assert error(e, "XDEL", "str", "x") == WRONGTYPE


@pytest.mark.parametrize("bad", ["x", "-", "+", "1-*", "*", "(1"])
def test_xdel_parses_every_id_before_deleting(bad: str) -> None:
    e = six()
    assert error(e, "XDEL", "s", "1-0", bad) == INVALID_ID
    assert call(e, "XLEN", "s") == 6


def test_xdel_metadata() -> None:
    e = six()
    call(e, "XDEL", "s", "4-0")
    meta = info(e)
    assert meta.get(b"max-deleted-entry-id") == b"4-0"
    assert meta.get(b"recorded-first-entry-id") == b"1-0"
    call(e, "XDEL", "s", "3-0", "1-0")  # frees the node [3-4]
    meta = info(e)
    assert meta.get(b"max-deleted-entry-id") == b"4-0"  # never lowered
    assert meta.get(b"recorded-first-entry-id") == b"2-0"
    assert meta.get(b"radix-tree-keys") == 2
    assert meta.get(b"entries-added") == 6
    call(e, "XDEL", "s", "2-0", "5-0", "6-0")
    meta = info(e)
    assert meta.get(b"length") == 0
    assert meta.get(b"radix-tree-keys") == 0
    assert meta.get(b"recorded-first-entry-id") == b"0-0"
    assert meta.get(b"max-deleted-entry-id") == b"6-0"
    assert meta.get(b"last-generated-id") == b"6-0"
    assert call(e, "EXISTS", "s") == 1  # an emptied stream stays


def test_xdel_effects_list_only_what_went() -> None:
    e = six()
    assert effects(e, "XDEL", "s", "9-9", "3", "0-1", "5-0") == [[b"XDEL", b"s", b"3-0", b"5-0"]]
    assert effects(e, "XDEL", "s", "3-0") == []
    assert effects(e, "XDEL", "nokey", "1-0") == []


def test_xdel_arity() -> None:
    assert error(six(), "XDEL", "s") == "ERR wrong number of arguments for 'xdel' command"


# -- XSETID ------------------------------------------------------------------------------------

PROVIDED = "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"
CURRENT = "ERR The ID specified in XSETID is smaller than current max_deleted_entry_id"
TOP = "ERR The ID specified in XSETID is smaller than the target stream top item"
ADDED = "ERR The entries_added specified in XSETID is smaller than the target stream length"


@pytest.mark.parametrize(
    ("words", "line"),
    [
        (["x"], INVALID_ID),
        (["-"], INVALID_ID),
        (["+"], INVALID_ID),
        (["x", "ENTRIESADDED", "-1"], INVALID_ID),  # the ID first
        (["9-0", "ENTRIESADDED", "-1"], "ERR entries_added must be positive"),
        (["9-0", "ENTRIESADDED", "x"], NOT_INT),
        (["9-0", "ENTRIESADDED"], "ERR syntax error"),
        (["9-0", "MAXDELETEDID", "-"], INVALID_ID),
        (["9-0", "MAXDELETEDID", "9-1"], PROVIDED),
        (["9-0", "MAXDELETEDID", "9-1", "ENTRIESADDED", "-1"], PROVIDED),  # left to right
        (
            ["9-0", "ENTRIESADDED", "-1", "MAXDELETEDID", "9-1"],
            "ERR entries_added must be positive",
        ),
        (["9-0", "0"], "ERR syntax error"),
        (["9-0", "FOO", "1"], "ERR syntax error"),
        (["9-0", "ENTRIESADDED", "10", "MAXDELETEDID"], "ERR syntax error"),
    ],
)
def test_xsetid_argument_errors_come_before_the_key(words: list[str], line: str) -> None:
    e = six()
    for key in ("s", "nokey", "str"):
        assert error(e, "XSETID", key, *words) == line


def test_xsetid_key_errors() -> None:
    e = six()
    assert error(e, "XSETID", "nokey", "9-0") == "ERR no such key"
    assert error(e, "XSETID", "str", "9-0") == WRONGTYPE
    assert error(e, "XSETID", "s") == "ERR wrong number of arguments for 'xsetid' command"


def test_xsetid_state_errors_in_order() -> None:
    e = six()
    call(e, "XDEL", "s", "4-0")
    assert error(e, "XSETID", "s", "3-9") == CURRENT  # checked before the top item
    assert error(e, "XSETID", "s", "5-9") == TOP
    assert error(e, "XSETID", "s", "5-9", "ENTRIESADDED", "0") == TOP
    assert error(e, "XSETID", "s", "6-0", "ENTRIESADDED", "4") == ADDED
    assert call(e, "XSETID", "s", "6-0", "ENTRIESADDED", "5") == Status("OK")
    assert info(e).get(b"entries-added") == 5


def test_xsetid_sets_the_counters() -> None:
    e = six()
    assert call(e, "XSETID", "s", "7-7", "ENTRIESADDED", "100", "MAXDELETEDID", "7-1") == "OK"
    meta = info(e)
    assert meta.get(b"last-generated-id") == b"7-7"
    assert meta.get(b"entries-added") == 100
    assert meta.get(b"max-deleted-entry-id") == b"7-1"
    assert call(e, "XSETID", "s", "7-7", "MAXDELETEDID", "0-0") == "OK"  # 0-0: unchanged
    assert info(e).get(b"max-deleted-entry-id") == b"7-1"
    assert call(e, "XSETID", "s", "8-0", "maxdeletedid", "7-0", "entriesadded", "6") == "OK"
    assert info(e).get(b"max-deleted-entry-id") == b"7-0"  # can be lowered explicitly
    assert error(e, "XADD", "s", "8-0", "f", "v").startswith("ERR The ID specified in XADD")
    assert call(e, "XADD", "s", "8-*", "f", "v") == b"8-1"


def test_xsetid_can_move_back_to_the_last_live_entry() -> None:
    e = six()
    call(e, "XDEL", "s", "6-0")
    call(e, "XSETID", "s", "6-0", "MAXDELETEDID", "0-0")
    assert error(e, "XSETID", "s", "5-0") == CURRENT  # 6-0 was deleted
    e = six()
    call(e, "XTRIM", "s", "MAXLEN", "0")  # trims never raise max-deleted-entry-id
    assert call(e, "XSETID", "s", "0-1") == "OK"
    assert call(e, "XADD", "s", "0-2", "f", "v") == b"0-2"
    e = six()
    call(e, "XADD", "s", "MAXLEN", "6", "9-0", "f", "v")
    assert call(e, "XSETID", "s", "9-0") == "OK"
    assert error(e, "XSETID", "s", "8-9") == TOP


def test_xsetid_effect_is_the_command_itself() -> None:
    e = six()
    assert effects(e, "XSETID", "s", "6-0") == [[b"XSETID", b"s", b"6-0"]]  # even if unchanged
    assert effects(e, "XSETID", "s", "7", "entriesadded", "9") == [
        [b"XSETID", b"s", b"7", b"entriesadded", b"9"]
    ]


# -- XINFO STREAM ------------------------------------------------------------------------------

SUMMARY_KEYS = [
    b"length",
    b"radix-tree-keys",
    b"radix-tree-nodes",
    b"last-generated-id",
    b"max-deleted-entry-id",
    b"entries-added",
    b"recorded-first-entry-id",
    b"idmp-duration",
    b"idmp-maxsize",
    b"pids-tracked",
    b"iids-tracked",
    b"iids-added",
    b"iids-duplicates",
]


def test_xinfo_stream_fields_in_order() -> None:
    e = six()
    call(e, "XDEL", "s", "1-0", "6-0")
    meta = info(e)
    assert [k for k, _ in meta] == [*SUMMARY_KEYS, b"groups", b"first-entry", b"last-entry"]
    assert dict(meta) == {
        b"length": 4,
        b"radix-tree-keys": 3,
        b"radix-tree-nodes": meta.get(b"radix-tree-nodes"),  # compared with Redis in compat
        b"last-generated-id": b"6-0",
        b"max-deleted-entry-id": b"6-0",
        b"entries-added": 6,
        b"recorded-first-entry-id": b"2-0",
        b"idmp-duration": 100,
        b"idmp-maxsize": 100,
        b"pids-tracked": 0,
        b"iids-tracked": 0,
        b"iids-added": 0,
        b"iids-duplicates": 0,
        b"groups": 0,
        b"first-entry": [b"2-0", [b"f", b"2-0"]],
        b"last-entry": [b"5-0", [b"f", b"5-0"]],
    }


def test_xinfo_stream_full() -> None:
    e = stream_of(engine(), "s", *(f"{i}-0" for i in range(1, 13)))
    full = call(e, "XINFO", "STREAM", "s", "FULL")
    assert isinstance(full, ReplyMap)
    assert [k for k, _ in full] == [*SUMMARY_KEYS, b"entries", b"groups"]
    assert full.get(b"groups") == []
    assert full.get(b"entries") == [[b"%d-0" % i, [b"f", b"%d-0" % i]] for i in range(1, 11)]

    def count(n: str) -> int:
        reply = call(e, "XINFO", "STREAM", "s", "full", "count", n)
        assert isinstance(reply, ReplyMap)
        entries = reply.get(b"entries")
        assert isinstance(entries, list)
        return len(entries)

    assert (count("1"), count("0"), count("-5"), count("12"), count("99")) == (1, 12, 10, 12, 12)


def test_xinfo_stream_of_an_empty_stream() -> None:
    e = engine()
    call(e, "XADD", "s", "MAXLEN", "0", "3-3", "f", "v")
    meta = info(e)
    assert (meta.get(b"first-entry"), meta.get(b"last-entry")) == (None, None)
    assert (meta.get(b"radix-tree-keys"), meta.get(b"radix-tree-nodes")) == (0, 1)
    full = call(e, "XINFO", "STREAM", "s", "FULL")
    assert isinstance(full, ReplyMap)
    assert full.get(b"entries") == []


def stream_syntax(sub: str) -> str:
    return f"ERR unknown subcommand or wrong number of arguments for '{sub}'. Try XINFO HELP."


@pytest.mark.parametrize(
    ("words", "line"),
    [
        (["STREAM", "s", "FOO"], stream_syntax("STREAM")),
        (["stream", "s", "FULL", "COUNT"], stream_syntax("stream")),
        (["StReAm", "s", "FULL", "COUNT", "1", "x"], stream_syntax("StReAm")),
        (["STREAM", "s", "FULL", "FOO", "1"], stream_syntax("STREAM")),
        (["STREAM", "s", "COUNT", "1"], stream_syntax("STREAM")),
        (["STREAM", "s", "FULL", "COUNT", "x"], NOT_INT),
        (["STREAM", "nokey", "FOO"], "ERR no such key"),  # the key is looked up first
        (["STREAM", "nokey", "FULL", "COUNT", "x"], "ERR no such key"),
        (["STREAM", "str", "FOO"], WRONGTYPE),
        (["STREAM", "nokey"], "ERR no such key"),
        (["STREAM"], "ERR wrong number of arguments for 'xinfo|stream' command"),
        (["HELP", "x"], "ERR wrong number of arguments for 'xinfo|help' command"),
        ([], "ERR wrong number of arguments for 'xinfo' command"),
        (["FOO"], "ERR unknown subcommand 'FOO'. Try XINFO HELP."),
        (["foo", "s"], "ERR unknown subcommand 'foo'. Try XINFO HELP."),
    ],
)
def test_xinfo_errors(words: list[str], line: str) -> None:
    assert error(six(), "XINFO", *words) == line


def test_xinfo_unknown_subcommand_text_is_truncated_like_redis() -> None:
    e = six()
    assert error(e, "xinfo", "x" * 200) == f"ERR unknown subcommand '{'x' * 128}'. Try XINFO HELP."
    assert error(e, "XINFO", b"ab\x00cd") == "ERR unknown subcommand 'ab'. Try XINFO HELP."
    assert error(e, "XINFO", "a\r\nb") == "ERR unknown subcommand 'a  b'. Try XINFO HELP."


XINFO_HELP = [
    "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Print this help.",  # [7.0.15] "Prints this help."
]


def test_xinfo_help() -> None:
    e = engine()
    for words in (["XINFO", "HELP"], ["xinfo", "help"], ["Xinfo", "Help"]):
        reply = call(e, *words)
        assert reply == XINFO_HELP
        assert isinstance(reply, list)
        assert all(type(line) is Status for line in reply)


def test_xinfo_is_a_pure_read() -> None:
    result = run(six(), "XINFO", "STREAM", "s", "FULL")
    assert (result.effects, result.signaled, result.block) == ([], [], None)
