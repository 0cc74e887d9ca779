"""Lists: LPUSH/RPUSH/LPOP/RPOP/LLEN/LRANGE replies and effects, type errors both ways, replay,
snapshots, COPY and DUMP/RESTORE of a list, and a blocked XREAD a push does not wake."""

from __future__ import annotations

from enginecalls import call, effects, error, run

from xstream.engine import Engine, StreamError, snapshot
from xstream.engine.reply import NULL_ARRAY

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


def test_blpop_pops_or_blocks_waiting_for_a_list() -> None:
    e = Engine()
    e.execute([b"RPUSH", b"b", b"x", b"y"], 1000)
    r = e.execute([b"BLPOP", b"a", b"b", b"0"], 1000)
    assert r.reply == [b"b", b"x"] and r.effects == [[b"LPOP", b"b"]] and r.block is None
    r = e.execute([b"BRPOP", b"a", b"b", b"0"], 1000)
    assert r.reply == [b"b", b"y"] and r.effects == [[b"RPOP", b"b"]]
    r = e.execute([b"BLPOP", b"a", b"b", b"1.5"], 1000)
    assert r.reply is NULL_ARRAY and r.block is not None and r.effects == []
    assert (r.block.keys, r.block.deadline_ms, r.block.waits_for) == ([b"a", b"b"], 2500, "list")
    e.execute([b"XADD", b"a", b"1-1", b"f", b"v"], 1000)
    assert not e.wakes(r.block, b"a")  # a stream is not what it waits for
    e.execute([b"LPUSH", b"b", b"z"], 1000)
    assert e.wakes(r.block, b"b")
    for bad, line in ((b"x", "ERR timeout is not a float or out of range"),
                      (b"-1", "ERR timeout is negative"),
                      (b"inf", "ERR timeout is not a float or out of range")):  # fmt: skip
        try:
            e.execute([b"BLPOP", b"b", bad], 1000)
        except StreamError as err:
            assert err.line == line
        else:
            raise AssertionError(bad)


def test_pops_with_a_count_replay_what_they_popped() -> None:
    e, r = Engine(), Engine()
    steps = [effects(e, "RPUSH", "l", "a", "b", "c", "d")]
    assert call(e, "LPOP", "l", 0) == [] and effects(e, "LPOP", "l", 0) == []
    steps.append(effects(e, "LPOP", "l", 2))
    assert steps[-1] == [[b"LPOP", b"l", b"2"]]
    steps.append(effects(e, "RPOP", "l", 9))  # two left: the effect names two
    assert steps[-1] == [[b"RPOP", b"l", b"2"]]
    assert call(e, "EXISTS", "l") == 0
    assert call(e, "LPOP", "l", 3) is NULL_ARRAY and call(e, "LPOP", "l") is None
    assert error(e, "LPOP", "l", -1) == "ERR value is out of range, must be positive"
    assert error(e, "RPOP", "l", 1, 2) == "ERR wrong number of arguments for 'rpop' command"
    for step in steps:
        r.apply_record(step)
    assert r.digest() == e.digest()
