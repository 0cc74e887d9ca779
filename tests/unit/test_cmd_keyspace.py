"""The keyspace commands (DEL, EXISTS, TYPE, KEYS, SCAN, FLUSHALL, SET, GET), the KEYS/SCAN glob
matcher, command lookup: arity and unknown (sub)command errors with Redis's exact texts."""

from __future__ import annotations

import random

import pytest
from enginecalls import call, effects, engine, error, run, stream_of

from xstream.engine import Engine, Status, StreamError, glob
from xstream.server.resp.codec import encode_error

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
SYNTAX = "ERR syntax error"


def mixed() -> Engine:
    e = stream_of(engine(), "s1", "1-1")
    stream_of(e, "s2", "1-1")
    call(e, "SET", "k1", "v1")
    call(e, "SET", "k2", b"")
    return e


# -- DEL / EXISTS / TYPE -----------------------------------------------------------------------


def test_del_counts_each_key_once() -> None:
    e = mixed()
    result = run(e, "DEL", "s1", "k1", "s1", "nokey")
    assert result.reply == 2
    assert result.effects == [[b"DEL", b"s1", b"k1"]]
    assert result.signaled == [(0, b"s1"), (0, b"k1")]
    assert call(e, "EXISTS", "s1", "k1") == 0
    assert call(e, "EXISTS", "s2", "k2") == 2


def test_del_of_missing_keys_ships_nothing() -> None:
    result = run(mixed(), "DEL", "nokey", "other")
    assert (result.reply, result.effects, result.signaled) == (0, [], [])


def test_exists_counts_repeats() -> None:
    e = mixed()
    assert call(e, "EXISTS", "s1", "s1", "k2", "nokey") == 3
    assert run(e, "EXISTS", "s1").effects == []


def test_an_emptied_stream_still_exists() -> None:
    e = mixed()
    call(e, "XDEL", "s1", "1-1")
    assert call(e, "EXISTS", "s1") == 1
    assert call(e, "TYPE", "s1") == "stream"


def test_type() -> None:
    e = mixed()
    assert call(e, "TYPE", "s1") == Status("stream")
    assert call(e, "TYPE", "k2") == Status("string")
    assert call(e, "TYPE", "nokey") == Status("none")
    assert type(call(e, "TYPE", "s1")) is Status


# -- SET / GET ---------------------------------------------------------------------------------


def test_set_and_get() -> None:
    e = mixed()
    assert call(e, "GET", "k1") == b"v1"
    assert call(e, "GET", "k2") == b""
    assert call(e, "GET", "nokey") is None
    assert error(e, "GET", "s1") == WRONGTYPE
    assert effects(e, "SET", "k1", "v2") == [[b"SET", b"k1", b"v2"]]
    assert call(e, "GET", "k1") == b"v2"
    assert call(e, "SET", "s1", "now a string") == "OK"  # SET replaces any type
    assert call(e, "TYPE", "s1") == "string"
    assert error(e, "XLEN", "s1") == WRONGTYPE


def test_set_refuses_conflicting_options() -> None:
    assert error(mixed(), "SET", "k", "v", "EX", "10", "PX", "10") == SYNTAX
    assert error(mixed(), "SET", "k", "v", "NX", "XX") == SYNTAX
    assert error(mixed(), "SET", "k", "v", "KEEPTTL", "EX", "1") == SYNTAX


# -- FLUSHALL ----------------------------------------------------------------------------------


def test_flushall() -> None:
    e = mixed()
    result = run(e, "FLUSHALL")
    assert result.reply == "OK"
    assert result.effects == [[b"FLUSHALL"]]
    assert sorted(result.signaled) == [(0, b"k1"), (0, b"k2"), (0, b"s1"), (0, b"s2")]
    assert call(e, "KEYS", "*") == []
    for mode in ("ASYNC", "sync"):
        assert run(e, "FLUSHALL", mode).effects == [[b"FLUSHALL"]]
    for words in (["FOO"], ["SYNC", "ASYNC"]):
        assert error(e, "FLUSHALL", *words) == SYNTAX


# -- KEYS and glob -----------------------------------------------------------------------------

KEYS = [b"", b"a", b"ab", b"abc", b"a*", b"a?", b"[", b"]", b"\\", b"a\\b", b"\x80", b"\xff", b"-"]


@pytest.mark.parametrize(
    ("pattern", "matches"),
    [
        (b"a*", [b"a", b"ab", b"abc", b"a*", b"a?", b"a\\b"]),
        (b"a?", [b"ab", b"a*", b"a?"]),
        (b"a\\?", [b"a?"]),
        (b"a\\*", [b"a*"]),
        (b"*\\\\*", [b"\\", b"a\\b"]),
        (b"a[b*]", [b"ab", b"a*"]),
        (b"a[^b]", [b"a*", b"a?"]),
        (b"[a-a]", [b"a"]),
        (b"[\\]]", [b"]"]),
        (b"[[]", [b"["]),
        (b"a[b", [b"ab"]),  # unterminated class: ends at the pattern's end
        (b"[-]", [b"-"]),
        (b"[\x80]", [b"\x80"]),
        (b"[a-\xff]", [b"-", b"[", b"]", b"\\", b"a", b"\xff"]),  # signed chars: -1..97
        (b"**", [k for k in KEYS if k]),  # the empty key matches no non-empty pattern
        (b"", [b""]),
        (b"*c", [b"abc"]),
        (b"*b*c*", [b"abc"]),
    ],
)
def test_glob(pattern: bytes, matches: list[bytes]) -> None:
    assert sorted(k for k in KEYS if glob.match(pattern, k)) == sorted(matches)


def test_keys() -> None:
    e = engine()
    for k in KEYS:
        call(e, "SET", k, "x")
    assert sorted(call(e, "KEYS", "*")) == sorted(KEYS)  # "*" alone: everything, "" included
    assert sorted(call(e, "KEYS", "a?")) == [b"a*", b"a?", b"ab"]
    assert call(e, "KEYS", "nomatch*") == []


# -- SCAN --------------------------------------------------------------------------------------


def scan_all(e: Engine, *options: str, limit: int = 10_000) -> list[bytes]:
    found: list[bytes] = []
    cursor = b"0"
    for _ in range(limit):
        reply = call(e, "SCAN", cursor, *options)
        assert isinstance(reply, list)
        cursor, page = reply
        assert isinstance(cursor, bytes) and isinstance(page, list)
        found += page
        if cursor == b"0":
            return found
    raise AssertionError("SCAN did not finish")


def test_scan_walks_the_whole_keyspace() -> None:
    e = engine()
    keys = {b"key:%d" % i for i in range(250)}
    for k in keys:
        call(e, "SET", k, "x")
    found = scan_all(e)
    assert sorted(found) == sorted(keys)  # a stable keyspace: each key exactly once
    assert sorted(scan_all(e, "COUNT", "7")) == sorted(keys)
    assert sorted(scan_all(e, "COUNT", "1000")) == sorted(keys)
    assert call(e, "SCAN", "0", "COUNT", "1000")[0] == b"0"  # type: ignore[index]


def test_scan_is_complete_while_keys_come_and_go() -> None:
    rng = random.Random(20261121)
    e = engine()
    stable = {b"stable:%d" % i for i in range(150)}
    transient = [b"tmp:%d" % i for i in range(150)]
    for k in [*stable, *transient]:
        call(e, "SET", k, "x")
    ever = set(stable) | set(transient)
    found: set[bytes] = set()
    cursor = b"0"
    for step in range(10_000):
        reply = call(e, "SCAN", cursor, "COUNT", str(rng.randint(1, 12)))
        assert isinstance(reply, list)
        cursor, page = reply
        found.update(page)  # type: ignore[arg-type]
        if cursor == b"0":
            break
        for _ in range(3):
            gone = transient.pop(rng.randrange(len(transient)))
            call(e, "DEL", gone)
            new = b"new:%d:%d" % (step, rng.randrange(10**6))
            call(e, "SET", new, "x")
            ever.add(new)
            transient.append(new)
    else:
        raise AssertionError("SCAN did not finish")
    assert stable <= found  # present all along: returned
    assert found <= ever  # and nothing that never existed


def test_scan_match_and_type() -> None:
    e = mixed()
    call(e, "SET", "", "empty")
    assert sorted(scan_all(e, "MATCH", "s*")) == [b"s1", b"s2"]
    assert sorted(scan_all(e, "MATCH", "*")) == [b"", b"k1", b"k2", b"s1", b"s2"]
    assert sorted(scan_all(e, "TYPE", "stream")) == [b"s1", b"s2"]
    assert sorted(scan_all(e, "type", "STRING", "match", "k?")) == [b"k1", b"k2"]
    assert scan_all(e, "TYPE", "hash") == []
    assert scan_all(e, "TYPE", "nosuchtype") == []  # no error: redis#14830 (8.x) was declined


@pytest.mark.parametrize("cursor", ["5", "+5", " 5", "05", "18446744073709551615", "-01"])
def test_scan_cursor_parses_like_string2ull(cursor: str) -> None:
    reply = call(mixed(), "SCAN", cursor)
    assert isinstance(reply, list) and len(reply) == 2


@pytest.mark.parametrize(
    ("words", "line"),
    [
        (["x"], "ERR invalid cursor"),
        (["-1"], "ERR invalid cursor"),  # [7.0.15] accepts it (strtoul)
        (["18446744073709551616"], "ERR invalid cursor"),
        (["1.0"], "ERR invalid cursor"),
        (["0", "COUNT", "0"], SYNTAX),
        (["0", "COUNT", "-1"], SYNTAX),
        (["0", "COUNT", "x"], "ERR value is not an integer or out of range"),
        (["0", "COUNT"], SYNTAX),
        (["0", "MATCH"], SYNTAX),
        (["0", "TYPE"], SYNTAX),
        (["0", "FOO", "bar"], SYNTAX),
        (["x", "FOO"], "ERR invalid cursor"),  # the cursor first
    ],
)
def test_scan_errors(words: list[str], line: str) -> None:
    assert error(mixed(), "SCAN", *words) == line


# -- command lookup ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "name"),
    [
        (["XADD", "s", "*", "f"], "xadd"),
        (["xtrim", "s", "MAXLEN"], "xtrim"),
        (["XDEL", "s"], "xdel"),
        (["XLEN"], "xlen"),
        (["XLEN", "s", "t"], "xlen"),
        (["XRANGE", "s", "-"], "xrange"),
        (["XREVRANGE", "s", "+"], "xrevrange"),
        (["XREAD", "STREAMS", "s"], "xread"),
        (["XSETID", "s"], "xsetid"),
        (["DEL"], "del"),
        (["EXISTS"], "exists"),
        (["TYPE"], "type"),
        (["TYPE", "a", "b"], "type"),
        (["KEYS"], "keys"),
        (["KEYS", "a", "b"], "keys"),
        (["SCAN"], "scan"),
        (["SET", "k"], "set"),
        (["GET"], "get"),
        (["GET", "a", "b"], "get"),
        (["XINFO"], "xinfo"),
        (["XINFO", "STREAM"], "xinfo|stream"),
        (["XINFO", "help", "x"], "xinfo|help"),
    ],
)
def test_arity_errors(words: list[str], name: str) -> None:
    assert error(mixed(), *words) == f"ERR wrong number of arguments for '{name}' command"


def unknown(words: list[bytes]) -> str:
    with pytest.raises(StreamError) as err:
        engine().execute(words)
    return err.value.line


def test_unknown_command_text() -> None:
    prefix = "ERR unknown command"
    assert unknown([b"FOO"]) == f"{prefix} 'FOO'"  # Redis 8: no arguments' part without any
    assert (
        unknown([b"foo", b"a b", b"c"]) == f"{prefix} 'foo', with args beginning with: 'a b' 'c' "
    )
    assert unknown([b"x\r\ny", b"a\nb"]) == f"{prefix} 'x  y', with args beginning with: 'a b' "
    assert unknown([b"FOO", b"a\x00b"]) == f"{prefix} 'FOO', with args beginning with: 'a' "
    assert unknown([]) == f"{prefix} ''"
    assert unknown([b"xinfo\x00"]).startswith(f"{prefix} 'xinfo'")  # not XINFO: names are binary


def test_unknown_command_args_stop_after_128_bytes() -> None:
    line = unknown([b"F" * 200, b"a" * 100, b"b" * 100, b"c"])
    assert line == (
        f"ERR unknown command '{'F' * 128}', with args beginning with: '{'a' * 100}' '{'b' * 25}' "
    )
    multibyte = "é" * 100  # 200 bytes: cut at 128 bytes, not 128 characters
    line = unknown([b"FOO", multibyte.encode()])
    assert line == f"ERR unknown command 'FOO', with args beginning with: '{'é' * 64}' "


def test_unknown_command_keeps_non_utf8_bytes() -> None:
    with pytest.raises(StreamError) as err:
        engine().execute([b"FOO", b"\xff\xfe"])
    assert (
        encode_error(err.value)
        == b"-ERR unknown command 'FOO', with args beginning with: '\xff\xfe' \r\n"
    )


def test_commands_are_case_insensitive() -> None:
    e = mixed()
    assert call(e, "xLeN", "s1") == 1
    assert call(e, "XINFO", "sTrEaM", "s1") == call(e, "xinfo", "stream", "s1")
