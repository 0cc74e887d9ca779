"""Key expiry in the engine: EXPIRE and friends, TTL and friends, PERSIST, SET's times, lazy
expiry on writes (a DEL first), reads that hide expired keys, active expiry, replay and
snapshots."""

from __future__ import annotations

import hashlib

from enginecalls import call, effects, error, run

from xstream.engine import Engine, snapshot

T = 1_000_000  # the tests' now


def with_keys() -> Engine:
    e = Engine()
    call(e, "SET", "k", "v", now=T)
    call(e, "XADD", "s", "1-1", "f", "v", now=T)
    return e


def replay(e: Engine, *steps: list[list[bytes]]) -> Engine:
    """A replica of `with_keys()` that applied `steps`, checked equal to `e`."""
    r = with_keys()
    for step in steps:
        r.apply_record(step)
    assert r.digest() == e.digest()
    return r


def test_expire_family_ship_pexpireat() -> None:
    e = with_keys()
    assert effects(e, "EXPIRE", "k", 10, now=T) == [[b"PEXPIREAT", b"k", b"%d" % (T + 10_000)]]
    assert effects(e, "PEXPIRE", "s", 250, "NX", now=T) == [[b"PEXPIREAT", b"s", b"%d" % (T + 250)]]
    assert call(e, "TTL", "k", now=T) == 10
    assert call(e, "PTTL", "k", now=T + 1) == 9_999
    assert call(e, "TTL", "k", now=T + 1_499) == 9  # rounded: (ms + 500) / 1000
    assert call(e, "EXPIRETIME", "k", now=T) == T // 1000 + 10
    assert call(e, "PEXPIRETIME", "s", now=T) == T + 250
    assert effects(e, "EXPIREAT", "k", 5_000, now=T) == [[b"PEXPIREAT", b"k", b"5000000"]]
    assert effects(e, "PEXPIREAT", "k", 5_000_001, "GT", now=T) == [
        [b"PEXPIREAT", b"k", b"5000001"]
    ]


def test_ttl_of_missing_and_persistent_keys() -> None:
    e = with_keys()
    assert call(e, "TTL", "nope", now=T) == -2
    assert call(e, "PTTL", "k", now=T) == -1
    assert call(e, "EXPIRETIME", "k", now=T) == -1
    assert call(e, "PEXPIRETIME", "nope", now=T) == -2
    assert call(e, "EXPIRE", "nope", 10, now=T) == 0


def test_nx_xx_gt_lt() -> None:
    e = with_keys()
    assert run(e, "EXPIRE", "k", 10, "XX", now=T).reply == 0
    assert run(e, "EXPIRE", "k", 10, "GT", now=T).reply == 0  # no TTL: infinite, never less
    assert run(e, "EXPIRE", "k", 10, "LT", now=T).reply == 1
    assert run(e, "EXPIRE", "k", 20, "NX", now=T).reply == 0
    assert run(e, "EXPIRE", "k", 20, "LT", now=T).reply == 0
    r = run(e, "EXPIRE", "k", 5, "gt", now=T)
    assert r.reply == 0 and r.effects == []
    assert call(e, "EXPIRE", "k", 20, "GT", "XX", now=T) == 1
    assert call(e, "TTL", "k", now=T) == 20


def test_errors() -> None:
    e = with_keys()
    assert error(e, "EXPIRE", "k", 10, "NX", "XX") == (
        "ERR NX and XX, GT or LT options at the same time are not compatible"
    )
    assert error(e, "EXPIRE", "k", 10, "GT", "LT") == (
        "ERR GT and LT options at the same time are not compatible"
    )
    assert error(e, "EXPIRE", "k", 10, "FOO") == "ERR Unsupported option FOO"
    assert error(e, "EXPIRE", "k", "x") == "ERR value is not an integer or out of range"
    assert error(e, "EXPIRE", "k", 2**62) == "ERR invalid expire time in 'expire' command"
    assert error(e, "PEXPIRE", "k", 2**63 - 1, now=T) == (
        "ERR invalid expire time in 'pexpire' command"
    )
    assert error(e, "SET", "k", "v", "EX", 0) == "ERR invalid expire time in 'set' command"
    assert error(e, "SET", "k", "v", "PX", -5) == "ERR invalid expire time in 'set' command"
    assert error(e, "SET", "k", "v", "EX", "x") == "ERR value is not an integer or out of range"
    assert error(e, "SET", "k", "v", "EX") == "ERR syntax error"
    assert error(e, "SET", "s", "v", "GET") == (
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    )
    assert error(e, "TTL") == "ERR wrong number of arguments for 'ttl' command"


def test_a_time_already_reached_deletes_and_ships_del() -> None:
    e = with_keys()
    r = run(e, "EXPIRE", "k", 0, now=T)
    assert r.reply == 1 and r.effects == [[b"DEL", b"k"]]
    assert call(e, "EXISTS", "k", now=T) == 0
    r = run(e, "PEXPIREAT", "s", T - 1, now=T)
    assert r.effects == [[b"DEL", b"s"]] and (0, b"s") in r.signaled


def test_persist() -> None:
    e = with_keys()
    assert call(e, "PERSIST", "k", now=T) == 0
    call(e, "EXPIRE", "k", 10, now=T)
    assert effects(e, "PERSIST", "k", now=T) == [[b"PERSIST", b"k"]]
    assert call(e, "TTL", "k", now=T) == -1


def test_set_times_and_keepttl() -> None:
    e = with_keys()
    assert effects(e, "SET", "a", "1", "EX", 10, now=T) == [
        [b"SET", b"a", b"1", b"PXAT", b"%d" % (T + 10_000)]
    ]
    assert effects(e, "SET", "a", "2", "KEEPTTL", now=T) == [
        [b"SET", b"a", b"2", b"PXAT", b"%d" % (T + 10_000)]
    ]
    assert call(e, "PTTL", "a", now=T) == 10_000
    assert effects(e, "SET", "a", "3", now=T) == [[b"SET", b"a", b"3"]]
    assert call(e, "TTL", "a", now=T) == -1
    call(e, "SET", "b", "1", "PXAT", T + 5, now=T)
    assert call(e, "PEXPIRETIME", "b", now=T) == T + 5
    call(e, "SET", "b", "1", "EXAT", 7, now=T)
    assert call(e, "PEXPIRETIME", "b", now=T) == -2  # stored as given: past, so gone
    assert e.dbs[0].expires[b"b"] == 7000


def test_set_nx_xx_get() -> None:
    e = with_keys()
    assert call(e, "SET", "k", "w", "NX", now=T) is None
    assert call(e, "SET", "new", "w", "XX", now=T) is None
    assert call(e, "SET", "k", "w", "GET", now=T) == b"v"
    assert call(e, "SET", "k", "x", "NX", "GET", now=T) == b"w"
    assert call(e, "SET", "fresh", "x", "GET", now=T) is None
    assert call(e, "GET", "k", now=T) == b"w"


def test_reads_hide_expired_keys_and_change_nothing() -> None:
    e = with_keys()
    call(e, "PEXPIRE", "s", 100, now=T)
    later = T + 101
    before = e.digest()
    assert call(e, "XLEN", "s", now=T + 100) == 1  # at its time it is still there
    assert call(e, "EXISTS", "s", now=later) == 0
    assert call(e, "TYPE", "s", now=later) == "none"
    assert call(e, "KEYS", "*", now=later) == [b"k"]
    assert call(e, "TTL", "s", now=later) == -2
    assert call(e, "XRANGE", "s", "-", "+", now=later) == []
    assert call(e, "DBSIZE", now=later) == 2  # counted until deleted, as Redis's
    assert e.digest() == before


def test_a_write_deletes_expired_keys_first_and_ships_the_del() -> None:
    e = with_keys()
    call(e, "PEXPIRE", "s", 100, now=T)
    r = run(e, "XADD", "s", "5-1", "g", "w", now=T + 101)
    assert r.effects == [[b"DEL", b"s"], [b"XADD", b"s", b"5-1", b"g", b"w"]]
    assert call(e, "XLEN", "s", now=T + 101) == 1
    assert call(e, "TTL", "s", now=T + 101) == -1
    call(e, "PEXPIRE", "k", 100, now=T)
    r = run(e, "DEL", "k", now=T + 101)
    assert r.reply == 0 and r.effects == [[b"DEL", b"k"]]


def test_a_failed_write_puts_expired_keys_back() -> None:
    e = with_keys()
    call(e, "PEXPIRE", "s", 100, now=T)
    before = e.digest()
    assert error(e, "RENAME", "s", "t", now=T + 101) == "ERR no such key"
    assert e.digest() == before


def test_expired_keys_in_another_database() -> None:
    e = with_keys()
    call(e, "SET", "k", "old", "PX", 100, now=T, db=3)
    r = run(e, "MOVE", "k", 3, now=T + 101)
    assert r.reply == 1
    assert r.effects == [
        [b"SELECT", b"3"],
        [b"DEL", b"k"],
        [b"SELECT", b"0"],
        [b"MOVE", b"k", b"3"],
    ]


def test_rename_move_copy_keep_the_time() -> None:
    e = with_keys()
    call(e, "PEXPIRE", "s", 5_000, now=T)
    call(e, "RENAME", "s", "s2", now=T)
    assert call(e, "PEXPIRETIME", "s2", now=T) == T + 5_000
    call(e, "COPY", "s2", "s3", now=T)
    assert call(e, "PEXPIRETIME", "s3", now=T) == T + 5_000
    call(e, "MOVE", "s3", 2, now=T)
    assert call(e, "PEXPIRETIME", "s3", now=T, db=2) == T + 5_000
    call(e, "SWAPDB", 0, 2, now=T)
    assert call(e, "PEXPIRETIME", "s2", now=T, db=2) == T + 5_000
    call(e, "FLUSHDB", now=T, db=2)
    assert all(not ks.expires for ks in e.dbs[1:])


def test_active_expiry_deletes_due_keys_in_every_database() -> None:
    e = with_keys()
    call(e, "PEXPIRE", "k", 10, now=T)
    call(e, "SET", "x", "1", "PX", 10, now=T, db=5)
    call(e, "SET", "y", "1", "PX", 10_000, now=T, db=5)
    assert e.expire_cycle(T + 10).effects == []
    r = e.expire_cycle(T + 11)
    assert r.effects == [[b"DEL", b"k"], [b"SELECT", b"5"], [b"DEL", b"x"]]
    assert (0, b"k") in r.signaled and (5, b"x") in r.touched
    assert len(e.dbs[0]) == 1 and list(e.dbs[5]) == [b"y"]
    e.check_integrity()


def test_active_expiry_is_bounded() -> None:
    e = Engine()
    for i in range(10):
        call(e, "SET", f"k{i}", "v", "PX", 1, now=T)
    assert len(e.expire_cycle(T + 2, limit=4).effects) == 4
    assert len(e.dbs[0]) == 6


def test_active_expiry_takes_the_earliest_and_only_current_times() -> None:
    e = Engine()
    for i in range(50):  # later times given first
        call(e, "SET", f"k{i}", "v", "PX", 1_000 - 10 * i, now=T)
    call(e, "PEXPIRE", "k49", 5_000, now=T)  # its earlier time is stale
    call(e, "PERSIST", "k48", now=T)  # no time at all
    call(e, "PEXPIRE", "k47", 510, now=T)  # the same time again: one DEL
    call(e, "PEXPIRE", "k47", 510, now=T)
    r = e.expire_cycle(T + 600, limit=3)
    assert r.effects == [[b"DEL", b"k47"], [b"DEL", b"k46"], [b"DEL", b"k45"]]
    r = e.expire_cycle(T + 600)
    assert [d[1] for d in r.effects] == [b"k%d" % i for i in range(44, 40, -1)]
    assert b"k49" in e.dbs[0] and b"k48" in e.dbs[0]
    e.check_integrity()


def test_a_key_put_back_is_still_found() -> None:
    e = with_keys()
    call(e, "PEXPIRE", "s", 100, now=T)
    assert error(e, "RENAME", "s", "t", now=T + 101) == "ERR no such key"  # expired, put back
    e.check_integrity()
    assert e.expire_cycle(T + 101).effects == [[b"DEL", b"s"]]


def test_refreshed_times_keep_the_heap_bounded() -> None:
    e = with_keys()
    for i in range(5_000):
        call(e, "PEXPIRE", "k", 10_000 + i, now=T)
    ks = e.dbs[0]
    assert len(ks.expires) == 1 and len(ks.deadlines) <= 2 + 64
    e.check_integrity()
    assert e.expire_cycle(T + 20_000).effects == [[b"DEL", b"k"]]


def test_replay_gives_the_same_digest() -> None:
    e = with_keys()
    steps = [
        run(e, "PEXPIRE", "s", 100, now=T).effects,
        run(e, "SET", "a", "1", "EX", 100, now=T).effects,
        run(e, "EXPIRE", "k", 100, now=T).effects,
        run(e, "PERSIST", "k", now=T).effects,
        run(e, "XADD", "s", "9-1", "f", "v", now=T + 101).effects,  # DEL s first
        run(e, "SET", "a", "2", "KEEPTTL", now=T).effects,
    ]
    r = replay(e, *steps)
    # the replica keeps keys past their time until the primary's DEL, but its reads hide them
    call(e, "PEXPIRE", "a", 1, now=T)
    r.apply_record([[b"PEXPIREAT", b"a", b"%d" % (T + 1)]])
    assert r.execute([b"GET", b"a"], T + 2).reply is None and b"a" in r.dbs[0].data
    r.apply_record(e.expire_cycle(T + 2).effects)
    assert r.digest() == e.digest()


def test_snapshot_round_trip_keeps_expires() -> None:
    e = with_keys()
    call(e, "PEXPIRE", "s", 100, now=T)
    call(e, "SET", "z", "1", "PXAT", T + 9, now=T, db=4)
    data = snapshot.dump(e)
    r = Engine()
    snapshot.restore(r, data)
    assert r.digest() == e.digest()
    assert call(r, "PEXPIRETIME", "z", now=T, db=4) == T + 9
    assert call(r, "PTTL", "s", now=T) == 100
    assert call(r, "TTL", "k", now=T) == -1


def test_snapshot_version_3_still_loads() -> None:
    e = with_keys()
    data = snapshot.dump(e)
    assert data[8:10] == (5).to_bytes(2, "big")
    # a key without a TTL has no expiry record: a version 3 header over the same body loads
    old = data[:8] + (3).to_bytes(2, "big") + data[10:-4]  # less version 5's CRC-32
    old += hashlib.blake2b(old, digest_size=16).digest()
    r = Engine()
    snapshot.restore(r, old)
    assert r.digest() == e.digest()
