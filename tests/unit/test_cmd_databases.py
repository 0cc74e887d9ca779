"""Databases 0 to 15 and the commands across keys and databases: MOVE, SWAPDB, COPY, RENAME,
RENAMENX, FLUSHDB, FLUSHALL, UNLINK, RANDOMKEY, DBSIZE; replies, errors, effects and signals
as Redis's (src/db.c; the same calls against redis-server are in tests/compat)."""

from __future__ import annotations

import pytest
from enginecalls import argv, call, effects, engine, error, ids_of, run, stream_of

from xstream.engine import Engine, EngineConfig, StreamError
from xstream.engine.reply import OK, Status

NOT_INT = "ERR value is not an integer or out of range"
OUT_OF_RANGE = "ERR DB index is out of range"
SAME = "ERR source and destination objects are the same"


def loaded() -> Engine:
    """db 0: stream s (1-1, 2-1) with group g (1-1 pending for c), string k; db 1: string k."""
    e = stream_of(engine(), "s", "1-1", "2-1")
    call(e, "XGROUP", "CREATE", "s", "g", "0")
    call(e, "XREADGROUP", "GROUP", "g", "c", "COUNT", 1, "STREAMS", "s", ">")
    call(e, "SET", "k", "zero")
    call(e, "SET", "k", "one", db=1)
    return e


# ---------------------------------------------------------------- databases and SELECT


@pytest.mark.parametrize(
    ("index", "expected"),
    [(b"0", 0), (b"15", 15), (7, 7), (b"16", OUT_OF_RANGE), (b"-1", OUT_OF_RANGE)]
    + [(w, NOT_INT) for w in (b"x", b"1.5", b" 1", b"01", b"+1", b"")],
)
def test_check_db_gives_selects_errors(index: bytes | int, expected: int | str) -> None:
    e = Engine()
    if isinstance(expected, int):
        assert e.check_db(index) == expected
    else:
        with pytest.raises(StreamError) as got:
            e.check_db(index)
        assert got.value.line == expected


def test_databases_setting() -> None:
    e = Engine(EngineConfig(databases=2))
    assert len(e.dbs) == 2
    assert error(e, "MOVE", "k", 2) == OUT_OF_RANGE


def test_each_database_is_its_own_keyspace() -> None:
    e = Engine()
    call(e, "XADD", "s", "1-1", "f", "v", db=3)
    assert (call(e, "DBSIZE"), call(e, "DBSIZE", db=3)) == (0, 1)
    assert call(e, "TYPE", "s") == Status("none") and call(e, "TYPE", "s", db=3) == "stream"
    assert call(e, "KEYS", "*", db=3) == [b"s"] and call(e, "KEYS", "*") == []
    assert call(e, "SCAN", 0, db=3) == [b"0", [b"s"]]
    assert call(e, "EXISTS", "s", db=3) == 1 and call(e, "EXISTS", "s") == 0
    assert ids_of(e) == [] and call(e, "XLEN", "s", db=3) == 1


def test_effects_of_a_command_outside_db_0_start_with_select() -> None:
    e = Engine()
    assert effects(e, "XADD", "s", "1-1", "f", "v") == [argv("XADD", "s", "1-1", "f", "v")]
    assert effects(e, "XADD", "s", "1-1", "f", "v", db=12) == [
        argv("SELECT", 12),
        argv("XADD", "s", "1-1", "f", "v"),
    ]
    assert effects(e, "XLEN", "s", db=12) == []  # reads ship nothing, SELECT neither
    assert run(e, "XADD", "s", "2-1", "f", "v", db=12).signaled == [(12, b"s")]
    batch = e.xadd_many(b"b", [[b"f", b"v"]], 5, db=4)
    assert batch.effects[0] == argv("SELECT", 4) and batch.signaled == [(4, b"b")]


def test_apply_record_starts_in_db_0_and_select_moves_it() -> None:
    e = Engine()
    e.apply_record([argv("SELECT", 5), argv("SET", "k", "five")])
    e.apply_record([argv("SET", "k", "zero")])  # an old record: no SELECT, db 0
    assert call(e, "GET", "k", db=5) == b"five" and call(e, "GET", "k") == b"zero"
    with pytest.raises(StreamError):
        e.apply_record([argv("SELECT", 16)])


def test_digest_tells_databases_apart() -> None:
    a, b = Engine(), Engine()
    call(a, "SET", "k", "v", db=1)
    call(b, "SET", "k", "v", db=2)
    assert a.digest() != b.digest()
    assert a.key_digest(b"k", 1) == b.key_digest(b"k", 2) and a.key_digest(b"k") is None


# ---------------------------------------------------------------- MOVE


def test_move() -> None:
    e = loaded()
    result = run(e, "MOVE", "s", 9)
    assert result.reply == 1
    assert result.effects == [argv("MOVE", "s", 9)]
    assert result.signaled == [(0, b"s"), (9, b"s")]
    assert call(e, "EXISTS", "s") == 0 and ids_of(e, "s") == []
    assert call(e, "XPENDING", "s", "g", db=9)[0] == 1  # type: ignore[index]
    assert call(e, "XRANGE", "s", "-", "+", db=9) == [
        [b"1-1", [b"f", b"1-1"]],
        [b"2-1", [b"f", b"2-1"]],
    ]


def test_move_does_nothing_when_missing_or_taken() -> None:
    e = loaded()
    assert run(e, "MOVE", "nokey", 1).effects == []
    assert call(e, "MOVE", "nokey", 1) == 0
    assert call(e, "MOVE", "k", 1) == 0  # db 1 has k
    assert call(e, "GET", "k") == b"zero" and call(e, "GET", "k", db=1) == b"one"


def test_move_errors_in_redis_order() -> None:
    e = loaded()
    assert error(e, "MOVE", "nokey", "x") == NOT_INT
    assert error(e, "MOVE", "nokey", 16) == OUT_OF_RANGE
    assert error(e, "MOVE", "nokey", 0) == SAME
    assert error(e, "MOVE", "k", 1, db=1) == SAME
    assert error(e, "MOVE", "k") == "ERR wrong number of arguments for 'move' command"


# ---------------------------------------------------------------- SWAPDB


def test_swapdb() -> None:
    e = loaded()
    result = run(e, "SWAPDB", 0, 1)
    assert result.reply == OK and result.effects == [argv("SWAPDB", 0, 1)]
    assert sorted(result.signaled) == [(0, b"k"), (0, b"s"), (1, b"k"), (1, b"s")]
    assert call(e, "GET", "k") == b"one" and call(e, "GET", "k", db=1) == b"zero"
    assert call(e, "XLEN", "s", db=1) == 2 and call(e, "DBSIZE") == 1


def test_swapdb_with_itself_is_ok_and_ships() -> None:
    e = loaded()
    before = e.digest()
    assert run(e, "SWAPDB", 3, 3).effects == [argv("SWAPDB", 3, 3)]
    assert e.digest() == before


@pytest.mark.parametrize(
    ("a", "b", "line"),
    [
        ("x", "0", "ERR invalid first DB index"),
        ("0", "x", "ERR invalid second DB index"),
        ("16", "x", "ERR invalid second DB index"),  # both parsed before either is checked
        ("0", "16", OUT_OF_RANGE),
        ("-1", "0", OUT_OF_RANGE),
    ],
)
def test_swapdb_errors(a: str, b: str, line: str) -> None:
    assert error(loaded(), "SWAPDB", a, b) == line


# ---------------------------------------------------------------- COPY


def test_copy_of_a_stream_is_deep() -> None:
    e = loaded()
    result = run(e, "COPY", "s", "t")
    assert result.reply == 1 and result.effects == [argv("COPY", "s", "t", "DB", 0)]
    assert result.signaled == [(0, b"t")]
    assert e.key_digest(b"t") == e.key_digest(b"s")
    call(e, "XACK", "t", "g", "1-1")
    call(e, "XADD", "t", "3-1", "f", "v")
    call(e, "XGROUP", "CREATECONSUMER", "t", "g", "d")
    assert call(e, "XPENDING", "s", "g")[0] == 1  # type: ignore[index]
    assert ids_of(e, "s") == [b"1-1", b"2-1"]
    assert len(call(e, "XINFO", "CONSUMERS", "s", "g")) == 1  # type: ignore[arg-type]


def test_copy_to_another_database_and_replace() -> None:
    e = loaded()
    assert call(e, "COPY", "s", "k", "DB", 1) == 0  # db 1 has k
    result = run(e, "COPY", "s", "k", "db", 1, "replace")
    assert result.reply == 1
    assert result.effects == [argv("COPY", "s", "k", "DB", 1, "REPLACE")]
    assert call(e, "TYPE", "k", db=1) == "stream" and call(e, "GET", "k") == b"zero"
    assert call(e, "COPY", "s", "s", "DB", 2) == 1  # same name, another database
    assert call(e, "COPY", "nokey", "x") == 0
    assert call(e, "COPY", "k", "k2", "REPLACE") == 1
    assert effects(e, "COPY", "k", "k3", "REPLACE") == [argv("COPY", "k", "k3", "DB", 0)]


@pytest.mark.parametrize(
    ("words", "line"),
    [
        (("s", "s"), SAME),
        (("s", "s", "DB", 0), SAME),
        (("s", "t", "DB", 16), OUT_OF_RANGE),
        (("nokey", "t", "DB", 16), OUT_OF_RANGE),
        (("s", "t", "DB", "x"), NOT_INT),
        (("s", "t", "DB"), "ERR syntax error"),
        (("s", "t", "FOO"), "ERR syntax error"),
        (("s",), "ERR wrong number of arguments for 'copy' command"),
    ],
)
def test_copy_errors(words: tuple[str | int, ...], line: str) -> None:
    assert error(loaded(), "COPY", *words) == line


# ---------------------------------------------------------------- RENAME, RENAMENX


def test_rename() -> None:
    e = loaded()
    digest = e.key_digest(b"s")
    result = run(e, "RENAME", "s", "k")
    assert result.reply == OK and result.effects == [argv("RENAME", "s", "k")]
    assert result.signaled == [(0, b"s"), (0, b"k")]
    assert e.key_digest(b"k") == digest and call(e, "EXISTS", "s") == 0


def test_renamenx() -> None:
    e = loaded()
    assert run(e, "RENAMENX", "s", "k").reply == 0
    result = run(e, "RENAMENX", "s", "t")
    assert result.reply == 1 and result.effects == [argv("RENAME", "s", "t")]


def test_rename_to_itself_changes_nothing() -> None:
    e = loaded()
    assert run(e, "RENAME", "s", "s").effects == []
    assert call(e, "RENAME", "s", "s") == OK and call(e, "RENAMENX", "s", "s") == 0
    assert error(e, "RENAME", "nokey", "nokey") == "ERR no such key"
    assert error(e, "RENAMENX", "nokey", "t") == "ERR no such key"


# ---------------------------------------------------------------- FLUSHDB, FLUSHALL


def test_flushdb_empties_its_database_only() -> None:
    e = loaded()
    result = run(e, "FLUSHDB", "ASYNC", db=1)
    assert result.effects == [argv("SELECT", 1), argv("FLUSHDB")]
    assert result.signaled == [(1, b"k")]
    assert call(e, "DBSIZE", db=1) == 0 and call(e, "DBSIZE") == 2
    assert effects(e, "FLUSHDB", db=1) == [argv("SELECT", 1), argv("FLUSHDB")]  # always


def test_flushall_empties_every_database() -> None:
    e = loaded()
    result = run(e, "FLUSHALL", "sync", db=4)
    assert result.effects == [argv("SELECT", 4), argv("FLUSHALL")]
    assert sorted(result.signaled) == [(0, b"k"), (0, b"s"), (1, b"k")]
    assert e.key_count() == 0


@pytest.mark.parametrize("name", ["FLUSHDB", "FLUSHALL"])
@pytest.mark.parametrize("extra", [("x",), ("ASYNC", "SYNC")])
def test_flush_syntax(name: str, extra: tuple[str, ...]) -> None:
    assert error(loaded(), name, *extra) == "ERR syntax error"


# ---------------------------------------------------------------- UNLINK, RANDOMKEY, DBSIZE


def test_unlink_is_del() -> None:
    e = loaded()
    result = run(e, "UNLINK", "k", "k", "nokey")
    assert result.reply == 1 and result.effects == [argv("DEL", "k")]


def test_randomkey() -> None:
    e = Engine()
    assert call(e, "RANDOMKEY") is None
    for i in range(20):
        call(e, "SET", f"k{i}", "v", db=2)
    drawn = {call(e, "RANDOMKEY", db=2) for _ in range(200)}
    assert drawn == {f"k{i}".encode() for i in range(20)}
    assert call(e, "RANDOMKEY") is None
    assert error(e, "RANDOMKEY", "x") == "ERR wrong number of arguments for 'randomkey' command"


def test_randomkey_is_deterministic() -> None:
    a, b = Engine(), Engine()
    for e in (a, b):
        for i in range(20):
            call(e, "SET", f"k{i}", "v")
    assert [call(a, "RANDOMKEY") for _ in range(30)] == [call(b, "RANDOMKEY") for _ in range(30)]
    c = Engine(EngineConfig(random_seed=7))
    for i in range(20):
        call(c, "SET", f"k{i}", "v")
    assert [call(a, "RANDOMKEY") for _ in range(30)] != [call(c, "RANDOMKEY") for _ in range(30)]


def test_dbsize_arity() -> None:
    assert error(Engine(), "DBSIZE", "x") == "ERR wrong number of arguments for 'dbsize' command"


def test_copy_of_a_restored_stream_keeps_its_foreign_layout() -> None:
    big = stream_of(engine(4096, 100), "s", *[f"{i}-1" for i in range(1, 30)])
    payload = call(big, "DUMP", "s")
    assert isinstance(payload, bytes)
    small = engine(100, 2)  # nodes of 100 entries break its limits: the copy skips them too
    call(small, "RESTORE", "s", 0, payload)
    assert call(small, "COPY", "s", "t", "DB", 1) == 1
    assert small.key_digest(b"t", 1) == big.key_digest(b"s")


def test_randomkey_skips_keys_past_their_time_and_changes_nothing() -> None:
    e = Engine()
    for i in range(20):
        call(e, "SET", f"k{i}", "v", now=1000)
    for i in range(0, 20, 2):  # the even keys end at 1500, k1 and k3 at 5000
        call(e, "PEXPIREAT", f"k{i}", 1500, now=1000)
    call(e, "PEXPIREAT", "k1", 5000, now=1000)
    call(e, "PEXPIREAT", "k3", 5000, now=1000)
    before = e.digest()
    drawn = [call(e, "RANDOMKEY", now=2000) for _ in range(300)]
    assert set(drawn) == {f"k{i}".encode() for i in range(1, 20, 2)}  # every live key, only
    assert e.digest() == before  # a read: nothing deleted, nothing shipped
    assert run(e, "RANDOMKEY", now=2000).effects == []
    assert {call(e, "RANDOMKEY", now=6000) for _ in range(300)} == {
        f"k{i}".encode() for i in range(5, 20, 2)
    }
