"""Lists: LPUSH/RPUSH/LPOP/RPOP/LLEN/LRANGE replies and effects, type errors both ways, replay,
snapshots, COPY and DUMP/RESTORE of a list, and a blocked XREAD a push does not wake."""

from __future__ import annotations

from enginecalls import call, effects, error, run

from xstream.engine import Engine, snapshot

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def test_push_pop_len_range() -> None:
    e = Engine()
    assert effects(e, "LPUSH", "l", "a", "b") == [[b"LPUSH", b"l", b"a", b"b"]]
    assert call(e, "RPUSH", "l", "c") == 3
    assert call(e, "LRANGE", "l", 0, -1) == [b"b", b"a", b"c"]
    assert call(e, "LRANGE", "l", -2, 10) == [b"a", b"c"]
    assert call(e, "LRANGE", "l", 2, 1) == []
    assert call(e, "LLEN", "l") == 3 and call(e, "TYPE", "l") == "list"
    assert effects(e, "LPOP", "l") == [[b"LPOP", b"l"]]
    assert call(e, "RPOP", "l") == b"c"
    assert call(e, "RPOP", "l") == b"a"
    assert call(e, "EXISTS", "l") == 0 and call(e, "LPOP", "l") is None
    assert call(e, "LLEN", "l") == 0 and call(e, "LRANGE", "l", 0, -1) == []


def test_type_errors_both_ways() -> None:
    e = Engine()
    call(e, "XADD", "s", "1-1", "f", "v")
    call(e, "LPUSH", "l", "a")
    assert error(e, "LPUSH", "s", "a") == WRONGTYPE
    assert error(e, "XADD", "l", "*", "f", "v") == WRONGTYPE
    assert error(e, "GET", "l") == WRONGTYPE
    assert error(e, "XLEN", "l") == WRONGTYPE


def test_replay_snapshot_copy_dump() -> None:
    e = Engine()
    steps = [run(e, *ws).effects for ws in [("RPUSH", "l", "a", "b"), ("LPOP", "l")]]
    steps.append(run(e, "COPY", "l", "m").effects)
    call(e, "PEXPIRE", "m", 5000)
    r = Engine()
    for step in steps:
        r.apply_record(step)
    r.apply_record([[b"PEXPIREAT", b"m", b"6000"]])
    assert r.digest() == e.digest()
    loaded = Engine()
    snapshot.restore(loaded, snapshot.dump(e))
    assert loaded.digest() == e.digest()
    payload = call(e, "DUMP", "l")
    assert call(e, "RESTORE", "n", 0, payload) == "OK"
    assert call(e, "LRANGE", "n", 0, -1) == [b"b"]


def test_a_push_does_not_wake_an_xread() -> None:
    e = Engine()
    blocked = run(e, "XREAD", "BLOCK", 0, "STREAMS", "s", "$").block
    assert blocked is not None
    call(e, "LPUSH", "s", "a")
    assert not e.wakes(blocked, b"s")
