"""XGROUP CREATE / SETID / DESTROY / CREATECONSUMER / DELCONSUMER / HELP: replies, errors in
Redis 8.8's precedence, and the effects each write ships (replayed on a replica by Pair)."""

from __future__ import annotations

import pytest
from enginecalls import argv
from groupcalls import Pair, consumer_effect, xclaim_effect

from xstream.engine import NULL_ARRAY, OK, Status

NEEDS_KEY = (
    "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want "
    "to use the MKSTREAM option to create an empty stream automatically."
)
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
INVALID_ID = "ERR Invalid stream ID specified as stream command argument"


def create_syntax(sub: str) -> str:
    return f"ERR unknown subcommand or wrong number of arguments for '{sub}'. Try XGROUP HELP."


@pytest.fixture
def p() -> Pair:
    pair = Pair()
    pair.add("s", "1-1", "2-1", "3-1")
    return pair


# -- CREATE ----------------------------------------------------------------------------------


def test_create_at_an_explicit_id_ships_the_id_and_counter(p: Pair) -> None:
    assert p.effects("XGROUP", "CREATE", "s", "g", "2") == [
        argv("XGROUP", "CREATE", "s", "g", "2-0", "ENTRIESREAD", -1)
    ]
    g = p.group()
    assert g[b"last-delivered-id"] == b"2-0"
    assert (g[b"consumers"], g[b"pending"]) == (0, 0)
    assert p.lag() == (None, None)  # an arbitrary ID inside the stream: unknown


def test_create_dollar_is_the_last_generated_id(p: Pair) -> None:
    p.call("XDEL", "s", "3-1")  # last-generated-id stays 3-1
    assert p.effects("XGROUP", "CREATE", "s", "g", "$") == [
        argv("XGROUP", "CREATE", "s", "g", "3-1", "ENTRIESREAD", -1)
    ]
    assert p.group()[b"last-delivered-id"] == b"3-1"


def test_create_dollar_compares_as_a_c_string(p: Pair) -> None:
    assert p.call("XGROUP", "CREATE", "s", "g", b"$\0junk") == OK
    assert p.group()[b"last-delivered-id"] == b"3-1"


def test_create_mkstream_on_a_missing_key_creates_an_empty_stream() -> None:
    p = Pair()
    assert p.effects("XGROUP", "CREATE", "new", "g", "$", "MKSTREAM") == [
        argv("XGROUP", "CREATE", "new", "g", "0-0", "ENTRIESREAD", -1, "MKSTREAM")
    ]
    assert p.call("XLEN", "new") == 0
    assert p.lag("g", "new") == (None, 0)  # a never-written stream has lag 0
    p.call("XGROUP", "CREATE", "new2", "g", "$", "MKSTREAM", "ENTRIESREAD", 5)
    assert p.lag("g", "new2") == (0, 0)  # capped at entries-added, 0


def test_create_mkstream_on_an_existing_key_does_not_ship_mkstream(p: Pair) -> None:
    assert p.effects("XGROUP", "CREATE", "s", "g", "0", "MKSTREAM") == [
        argv("XGROUP", "CREATE", "s", "g", "0-0", "ENTRIESREAD", -1)
    ]


def test_create_with_entriesread_and_its_cap_at_entries_added(p: Pair) -> None:
    assert p.effects("XGROUP", "CREATE", "s", "g", "1-1", "ENTRIESREAD", 1) == [
        argv("XGROUP", "CREATE", "s", "g", "1-1", "ENTRIESREAD", 1)
    ]
    assert p.lag("g") == (1, 2)
    # 8.2+: capped at entries-added (3); 7.0 keeps 10 and reports lag -7
    assert p.effects("XGROUP", "CREATE", "s", "big", "3-1", "ENTRIESREAD", 10) == [
        argv("XGROUP", "CREATE", "s", "big", "3-1", "ENTRIESREAD", 3)
    ]
    assert p.lag("big") == (3, 0)
    p.call("XGROUP", "CREATE", "s", "unknown", "3-1", "ENTRIESREAD", -1)
    assert p.lag("unknown") == (None, 0)  # -1: unknown, estimated from the last ID
    p.call("XGROUP", "CREATE", "s", "zero", "0", "ENTRIESREAD", 0)
    assert p.lag("zero") == (0, 3)


def test_create_options_in_any_order_and_case(p: Pair) -> None:
    assert p.call("XGROUP", "create", "t", "g", "$", "entriesread", 0, "mkstream") == OK
    assert p.call("XGROUP", "CREATE", "s", "g", "0", "MKSTREAM", "MKSTREAM") == OK


def test_create_existing_group_is_busygroup_after_the_id_is_parsed(p: Pair) -> None:
    p.call("XGROUP", "CREATE", "s", "g", "0")
    assert p.error("XGROUP", "CREATE", "s", "g", "0") == (
        "BUSYGROUP Consumer Group name already exists"
    )
    assert p.error("XGROUP", "CREATE", "s", "g", "bad") == INVALID_ID


@pytest.mark.parametrize(
    ("words", "error"),
    [
        (["nokey", "g", "$"], NEEDS_KEY),
        (["s", "g", "-"], INVALID_ID),  # strict: bare - and + are rejected
        (["s", "g", "+"], INVALID_ID),
        (["s", "g", "1-x"], INVALID_ID),
        (["s", "g", "0", "ENTRIESREAD", -2], "ERR value for ENTRIESREAD must be positive or -1"),
        (["s", "g", "0", "ENTRIESREAD", "x"], "ERR value is not an integer or out of range"),
        (["s", "g", "0", "ENTRIESREAD"], create_syntax("CREATE")),
        (["s", "g", "0", "FOO"], create_syntax("CREATE")),
        (["str", "g", "0"], WRONGTYPE),
        (["str", "g", "0", "MKSTREAM"], WRONGTYPE),
        # options are parsed before the key is looked up ...
        (["nokey", "g", "0", "ENTRIESREAD", "x"], "ERR value is not an integer or out of range"),
        (["nokey", "g", "0", "BAD"], create_syntax("CREATE")),
        # ... and the word count is checked after it
        (["nokey", "g", "$", "ENTRIESREAD", 1, "ENTRIESREAD", 2], NEEDS_KEY),
        (["s", "g", "$", "ENTRIESREAD", 1, "ENTRIESREAD", 2], create_syntax("CREATE")),
        (["nokey", "g", "$", "MKSTREAM", "MKSTREAM", "MKSTREAM", "MKSTREAM"],
         create_syntax("CREATE")),
        (["nokey", "g", "x", "MKSTREAM"], INVALID_ID),
    ],
)  # fmt: skip
def test_create_errors(p: Pair, words: list[str | int], error: str) -> None:
    p.call("SET", "str", "v")
    assert p.error("XGROUP", "CREATE", *words) == error
    assert p.call("EXISTS", "nokey") == 0  # a failed MKSTREAM creates nothing


def test_subcommand_name_and_arity_errors(p: Pair) -> None:
    assert p.error("XGROUP") == "ERR wrong number of arguments for 'xgroup' command"
    assert p.error("XGROUP", "FOO", "s", "g") == "ERR unknown subcommand 'FOO'. Try XGROUP HELP."
    assert p.error("XGROUP", "CREATE", "s", "g") == (
        "ERR wrong number of arguments for 'xgroup|create' command"
    )
    assert p.error("XGROUP", "DESTROY", "s", "g", "x") == (
        "ERR wrong number of arguments for 'xgroup|destroy' command"
    )
    assert p.error("XGROUP", "CREATECONSUMER", "s", "g") == (
        "ERR wrong number of arguments for 'xgroup|createconsumer' command"
    )
    assert p.error("XGROUP", "HELP", "x") == (
        "ERR wrong number of arguments for 'xgroup|help' command"
    )


# -- SETID -----------------------------------------------------------------------------------


def test_setid_moves_the_group_and_always_ships_concrete_values(p: Pair) -> None:
    p.call("XGROUP", "CREATE", "s", "g", "0")
    assert p.effects("XGROUP", "SETID", "s", "g", "2-1", "ENTRIESREAD", 2) == [
        argv("XGROUP", "SETID", "s", "g", "2-1", "ENTRIESREAD", 2)
    ]
    assert p.lag() == (2, 1)
    assert p.effects("XGROUP", "SETID", "s", "g", "$") == [
        argv("XGROUP", "SETID", "s", "g", "3-1", "ENTRIESREAD", -1)
    ]
    assert p.lag() == (None, 0)  # the counter goes back to unknown without ENTRIESREAD
    # the same value again still ships (Redis propagates every successful SETID)
    assert p.effects("XGROUP", "SETID", "s", "g", "3-1") == [
        argv("XGROUP", "SETID", "s", "g", "3-1", "ENTRIESREAD", -1)
    ]


def test_setid_parses_loosely(p: Pair) -> None:
    p.call("XGROUP", "CREATE", "s", "g", "$")
    assert p.effects("XGROUP", "SETID", "s", "g", "-") == [
        argv("XGROUP", "SETID", "s", "g", "0-0", "ENTRIESREAD", -1)
    ]
    assert p.lag() == (None, 3)
    assert p.call("XGROUP", "SETID", "s", "g", "+") == OK
    assert p.group()[b"last-delivered-id"] == b"18446744073709551615-18446744073709551615"
    assert p.lag() == (None, None)
    assert p.call("XGROUP", "SETID", "s", "g", "2") == OK
    assert p.group()[b"last-delivered-id"] == b"2-0"


def test_setid_caps_entriesread_at_entries_added(p: Pair) -> None:
    p.call("XGROUP", "CREATE", "s", "g", "0")
    assert p.effects("XGROUP", "SETID", "s", "g", "3-1", "ENTRIESREAD", 99) == [
        argv("XGROUP", "SETID", "s", "g", "3-1", "ENTRIESREAD", 3)
    ]
    assert p.lag() == (3, 0)


def test_setid_does_not_touch_the_pel(p: Pair) -> None:
    p.call("XGROUP", "CREATE", "s", "g", "0")
    p.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    p.call("XGROUP", "SETID", "s", "g", "0")
    assert p.call("XPENDING", "s", "g") == [3, b"1-1", b"3-1", [[b"c", b"3"]]]


@pytest.mark.parametrize(
    ("words", "error"),
    [
        (["nokey", "g", "0"], NEEDS_KEY),
        (["s", "nog", "0"], "NOGROUP No such consumer group 'nog' for key name 's'"),
        (["s", "g", "bad"], INVALID_ID),
        (["s", "g", "0", "MKSTREAM"], create_syntax("SETID")),
        (["s", "g", "0", "ENTRIESREAD"], create_syntax("SETID")),
        (["s", "g", "0", "ENTRIESREAD", -5], "ERR value for ENTRIESREAD must be positive or -1"),
        (["nokey", "g", "0", "ENTRIESREAD", "x"], "ERR value is not an integer or out of range"),
        (["nokey", "g", "0", "ENTRIESREAD", 1, "ENTRIESREAD", 2], NEEDS_KEY),
        (["s", "nog", "0", "ENTRIESREAD", 1, "ENTRIESREAD", 2],
         "NOGROUP No such consumer group 'nog' for key name 's'"),
        (["s", "g", "0", "ENTRIESREAD", 1, "ENTRIESREAD", 2], create_syntax("SETID")),
        (["str", "g", "0"], WRONGTYPE),
    ],
)  # fmt: skip
def test_setid_errors(p: Pair, words: list[str | int], error: str) -> None:
    p.call("SET", "str", "v")
    p.call("XGROUP", "CREATE", "s", "g", "0")
    assert p.error("XGROUP", "SETID", *words) == error


def test_nogroup_names_print_as_c_strings(p: Pair) -> None:
    assert p.error("XGROUP", "SETID", "s", b"a\r\nb\0tail\xff", "0") == (
        "NOGROUP No such consumer group 'a  b' for key name 's'"
    )
    line = p.error("XGROUP", "CREATECONSUMER", "s", b"\xff\xfe", "c")
    assert line.encode("utf-8", "surrogateescape") == (
        b"NOGROUP No such consumer group '\xff\xfe' for key name 's'"
    )


# -- DESTROY ---------------------------------------------------------------------------------


def test_destroy(p: Pair) -> None:
    p.call("XGROUP", "CREATE", "s", "g", "0")
    p.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    result = p.run("XGROUP", "DESTROY", "s", "g")
    assert result.reply == 1
    assert result.effects == [argv("XGROUP", "DESTROY", "s", "g")]
    assert result.signaled == [(0, b"s")]  # blocked readers wake to their NOGROUP error
    assert p.groups() == []
    result = p.run("XGROUP", "DESTROY", "s", "g")
    assert (result.reply, result.effects, result.signaled) == (0, [], [])
    assert p.error("XGROUP", "DESTROY", "nokey", "g") == NEEDS_KEY


# -- CREATECONSUMER / DELCONSUMER ------------------------------------------------------------


def test_createconsumer(p: Pair) -> None:
    p.call("XGROUP", "CREATE", "s", "g", "0")
    assert p.effects("XGROUP", "CREATECONSUMER", "s", "g", "c", now=5000) == [
        argv("XGROUP", "CREATECONSUMER", "s", "g", "c"),
        consumer_effect("c", 5000, -1),
    ]
    assert p.consumers()[b"c"] | {} == {
        b"name": b"c",
        b"seen-time": 5000,
        b"active-time": -1,
        b"pel-count": 0,
        b"pending": [],
    }
    result = p.run("XGROUP", "CREATECONSUMER", "s", "g", "c", now=6000)
    assert (result.reply, result.effects) == (0, [])
    assert p.consumers()[b"c"][b"seen-time"] == 5000  # an existing consumer is not touched
    assert p.error("XGROUP", "CREATECONSUMER", "s", "nog", "c") == (
        "NOGROUP No such consumer group 'nog' for key name 's'"
    )
    assert p.error("XGROUP", "CREATECONSUMER", "nokey", "g", "c") == NEEDS_KEY


def test_delconsumer_forgets_its_pending_entries(p: Pair) -> None:
    p.call("XGROUP", "CREATE", "s", "g", "0")
    p.call("XREADGROUP", "GROUP", "g", "a", "COUNT", 2, "STREAMS", "s", ">")
    p.call("XREADGROUP", "GROUP", "g", "b", "STREAMS", "s", ">")
    assert p.effects("XGROUP", "DELCONSUMER", "s", "g", "a") == [
        argv("XGROUP", "DELCONSUMER", "s", "g", "a")
    ]
    assert p.call("XPENDING", "s", "g") == [1, b"3-1", b"3-1", [[b"b", b"1"]]]
    assert p.group()[b"consumers"] == 1
    result = p.run("XGROUP", "DELCONSUMER", "s", "g", "a")
    assert (result.reply, result.effects) == (0, [])
    assert p.call("XGROUP", "DELCONSUMER", "s", "g", "b") == 1
    assert p.call("XPENDING", "s", "g") == [0, None, None, NULL_ARRAY]
    assert p.error("XGROUP", "DELCONSUMER", "s", "nog", "a") == (
        "NOGROUP No such consumer group 'nog' for key name 's'"
    )


def test_delconsumer_reply_counts_pending_entries(p: Pair) -> None:
    p.call("XGROUP", "CREATE", "s", "g", "0")
    p.call("XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", ">")
    assert p.call("XGROUP", "DELCONSUMER", "s", "g", "a") == 3


def test_createconsumer_then_claim_replicates_times(p: Pair) -> None:
    p.call("XGROUP", "CREATE", "s", "g", "0")
    p.call("XGROUP", "CREATECONSUMER", "s", "g", "c", now=100)
    assert p.effects("XCLAIM", "s", "g", "c", 0, "1-1", "FORCE", "JUSTID", now=200) == [
        xclaim_effect("c", "1-1", 200, 1, "0-0"),
        consumer_effect("c", 200, 200),
    ]


# -- HELP ------------------------------------------------------------------------------------


def test_help_lines() -> None:
    p = Pair()
    reply = p.call("XGROUP", "help")
    assert reply == [
        Status(line)
        for line in (
            "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
            "HELP",
            "    Print this help.",
        )
    ]
    assert p.run("XGROUP", "HELP").effects == []
