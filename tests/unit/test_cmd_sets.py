"""Sets: SADD/SREM/SMEMBERS/SISMEMBER/SCARD replies and effects, type errors both ways with
streams, strings and lists, replay, snapshots, COPY and DUMP/RESTORE of a set."""

from __future__ import annotations

from enginecalls import call, effects, error, run

from xstream.engine import Engine, rdb, snapshot

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def test_add_remove_members_card() -> None:
    e = Engine()
    assert effects(e, "SADD", "k", "b", "a", "b") == [[b"SADD", b"k", b"b", b"a"]]
    assert call(e, "SADD", "k", "a", "c") == 1
    assert effects(e, "SADD", "k", "a") == []  # nothing added, nothing shipped
    assert call(e, "SMEMBERS", "k") == [b"a", b"b", b"c"]  # sorted, see sets.py
    assert call(e, "SISMEMBER", "k", "a") == 1 and call(e, "SISMEMBER", "k", "z") == 0
    assert call(e, "SCARD", "k") == 3 and call(e, "TYPE", "k") == "set"
    assert effects(e, "SREM", "k", "a", "z", "a") == [[b"SREM", b"k", b"a"]]
    assert effects(e, "SREM", "k", "z") == []
    assert call(e, "SREM", "k", "b", "c") == 2
    assert call(e, "EXISTS", "k") == 0 and call(e, "SCARD", "k") == 0
    assert call(e, "SMEMBERS", "k") == [] and call(e, "SISMEMBER", "k", "a") == 0
    assert call(e, "SREM", "k", "a") == 0


def test_arity() -> None:
    e = Engine()
    assert error(e, "SADD", "k") == "ERR wrong number of arguments for 'sadd' command"
    assert error(e, "SISMEMBER", "k") == "ERR wrong number of arguments for 'sismember' command"


def test_type_errors_both_ways() -> None:
    e = Engine()
    call(e, "XADD", "s", "1-1", "f", "v")
    call(e, "SET", "str", "x")
    call(e, "LPUSH", "l", "a")
    call(e, "SADD", "t", "a")
    for key in ("s", "str", "l"):
        for words in (("SADD", key, "a"), ("SREM", key, "a"), ("SMEMBERS", key),
                      ("SISMEMBER", key, "a"), ("SCARD", key)):  # fmt: skip
            assert error(e, *words) == WRONGTYPE
    for words in (("XADD", "t", "*", "f", "v"), ("XLEN", "t"), ("GET", "t"), ("LPUSH", "t", "a"),
                  ("LLEN", "t"), ("SET", "t", "x", "GET"),
                  ("XGROUP", "CREATE", "t", "g", "$")):  # fmt: skip
        assert error(e, *words) == WRONGTYPE


def test_replay_snapshot_copy_dump() -> None:
    e = Engine()
    words = [("SADD", "k", "a", "b", "c"), ("SREM", "k", "b"), ("SADD", "k", "d", "a"),
             ("COPY", "k", "m")]  # fmt: skip
    steps = [run(e, *ws).effects for ws in words]
    call(e, "PEXPIRE", "m", 5000)
    r = Engine()
    for step in steps:
        r.apply_record(step)
    r.apply_record([[b"PEXPIREAT", b"m", b"6000"]])
    assert r.digest() == e.digest()
    loaded = Engine()
    snapshot.restore(loaded, snapshot.dump(e))
    assert loaded.digest() == e.digest()
    assert call(loaded, "SMEMBERS", "m") == [b"a", b"c", b"d"]
    payload = call(e, "DUMP", "k")
    assert isinstance(payload, bytes) and payload[0] == rdb.TYPE_SET
    assert call(e, "RESTORE", "n", 0, payload) == "OK"
    assert call(e, "SMEMBERS", "n") == [b"a", b"c", b"d"]
    call(e, "SREM", "k", "a")
    assert call(e, "SMEMBERS", "m") == [b"a", b"c", b"d"]  # COPY copied, not shared
    usage = call(e, "MEMORY", "USAGE", "m")
    assert isinstance(usage, int) and usage > 0


def test_digest_ignores_insertion_order() -> None:
    a, b = Engine(), Engine()
    call(a, "SADD", "k", "x", "y")
    call(b, "SADD", "k", "y", "x")
    assert a.digest() == b.digest()
