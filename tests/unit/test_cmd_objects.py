"""OBJECT ENCODING, FREQ and HELP: each type's encodings at Redis 8.8's thresholds (checked by
hand against a Redis 8.8.0 server built from source: the boundaries below are its answers),
no effects, Redis's errors.

(tests/compat/test_objects_compat.py compares what Redis 7.0 answers alike.)
"""

from __future__ import annotations

from enginecalls import call, effects, error

from xstream.engine import Engine

NO_LFU = (
    "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note "
    "that when switching between policies at runtime LRU and LFU data will take some time to "
    "adjust."
)


def enc(e: Engine, key: str) -> object:
    return call(e, "OBJECT", "ENCODING", key)


def test_strings_by_value_and_key_length() -> None:
    e = Engine()
    for key, value, want in [
        ("a", "123", b"int"), ("a", "-9223372036854775808", b"int"),
        ("a", "9223372036854775808", b"embstr"), ("a", "0123", b"embstr"), ("a", " 1", b"embstr"),
        ("a", "", b"embstr"), ("a", "x" * 40, b"embstr"), ("a", "x" * 41, b"raw"),
        ("s5", "x" * 39, b"embstr"), ("s5", "x" * 40, b"raw"), ("key10chars", "x" * 31, b"embstr"),
        ("key10chars", "x" * 32, b"raw"), ("a", "x" * 45, b"raw"), ("k" * 50, "7", b"int"),
    ]:  # fmt: skip
        call(e, "SET", key, value)
        assert enc(e, key) == want, (key, value)


def test_streams_sets_and_lists() -> None:
    e = Engine()
    call(e, "XADD", "st", "*", "a", "b")
    call(e, "SADD", "ints", *range(512))
    call(e, "SADD", "many", *range(513))
    call(e, "SADD", "words", *(f"m{i}" for i in range(128)))
    call(e, "SADD", "more", *(f"m{i}" for i in range(129)))
    call(e, "SADD", "long", "x" * 64)
    call(e, "SADD", "longer", "x" * 65)
    call(e, "RPUSH", "short", *("x" * 100 for _ in range(79)))  # 8,144 bytes as a listpack
    call(e, "RPUSH", "big", *(str(i) for i in range(3000)))
    call(e, "RPUSH", "huge", "x" * 9000)
    assert [enc(e, k) for k in ("st", "ints", "many", "words", "more", "long", "longer")] == [
        b"stream", b"intset", b"hashtable", b"listpack", b"hashtable", b"listpack", b"hashtable"
    ]  # fmt: skip
    assert [enc(e, k) for k in ("short", "big", "huge", "nokey")] == [
        b"listpack", b"quicklist", b"quicklist", None
    ]  # fmt: skip
    call(e, "SADD", "ints", "a")  # no longer integers only: 513 members
    assert enc(e, "ints") == b"hashtable"
    call(e, "RPUSH", "short", "y" * 100)  # one more: past 8 KiB
    assert enc(e, "short") == b"quicklist"


def test_freq_help_errors_and_no_effects() -> None:
    e = Engine()
    call(e, "XADD", "st", "*", "a", "b")
    assert error(e, "OBJECT", "FREQ", "st") == NO_LFU
    assert call(e, "OBJECT", "FREQ", "nokey") is None
    assert effects(e, "OBJECT", "ENCODING", "st") == []
    help_lines = call(e, "object", "help")
    assert isinstance(help_lines, list) and len(help_lines) == 9
    assert help_lines[0] == "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    assert error(e, "OBJECT", "IDLETIME", "st") == (
        "ERR unknown subcommand 'IDLETIME'. Try OBJECT HELP."
    )
    for words in (["OBJECT", "ENCODING"], ["OBJECT", "ENCODING", "st", "x"]):
        assert error(e, *words) == "ERR wrong number of arguments for 'object|encoding' command"
    assert error(e, "OBJECT") == "ERR wrong number of arguments for 'object' command"
