"""Databases and the commands across keys and databases, sent to the engine and to a real
redis-server (Debian's 7.0.15; these commands did not change up to 8.8), replies compared.

The engine runs each command in the database the connection SELECTed, as the RESP edge does:
SELECT goes to `Engine.check_db` here and to the server there. KEYS is compared as a set
(hash order is Redis's own) and RANDOMKEY by membership (its draws are the engine's).
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from redis_conn import RedisConn, RedisServer

from xstream.engine import Engine, StreamError
from xstream.engine.reply import OK, Reply, flatten

pytestmark = pytest.mark.compat

Word = str | bytes | int


def words(*ws: Word) -> list[bytes]:
    return [w if isinstance(w, bytes) else str(w).encode() for w in ws]


class DbPair:
    """An engine and one server connection, each with its selected database."""

    def __init__(self, server: RedisServer) -> None:
        self.conn: RedisConn = server.conn()
        self.engine = Engine()
        self.db = 0

    def both(self, *ws: Word) -> tuple[Reply | StreamError, Reply | StreamError]:
        argv = words(*ws)
        ours: Reply | StreamError
        try:
            if argv[0].upper() == b"SELECT":
                if len(argv) != 2:
                    raise StreamError("wrong number of arguments for 'select' command")
                self.db = self.engine.check_db(argv[1])
                ours = OK
            else:
                ours = flatten(self.engine.execute(argv, 1, self.db).reply)
        except StreamError as err:
            ours = err
        self.engine.check_integrity()
        return ours, self.conn.call(*argv)

    def same(self, *ws: Word) -> Reply | StreamError:
        ours, theirs = self.both(*ws)
        if ws[0] == "KEYS" and isinstance(ours, list) and isinstance(theirs, list):
            ours, theirs = sorted(ours), sorted(theirs)  # type: ignore[type-var]
        assert ours == theirs, ws
        return ours

    def state_matches(self) -> None:
        """Every database's keys, and each key's type and contents."""
        for db in range(16):
            self.same("SELECT", db)
            self.same("DBSIZE")
            keys = self.same("KEYS", "*")
            assert isinstance(keys, list)
            for key in keys:
                kind = self.same("TYPE", key)
                if kind == "stream":
                    self.same("XRANGE", key, "-", "+")
                    self.same("XPENDING", key, "g")
                else:
                    self.same("GET", key)
        self.same("SELECT", 0)


@pytest.fixture
def pair(redis_server: RedisServer) -> Iterator[DbPair]:
    redis_server.flushall()
    p = DbPair(redis_server)
    yield p
    p.conn.close()


SELECT_CASES: list[Word] = [0, 15, 16, -1, "x", "1.5", " 1", "01", "+1", ""]


@pytest.mark.parametrize("index", SELECT_CASES)
def test_select(pair: DbPair, index: Word) -> None:
    pair.same("SELECT", index)


SCRIPT: list[tuple[Word, ...]] = [
    ("XADD", "s", "1-1", "f", "v"),
    ("XADD", "s", "2-1", "f", "w"),
    ("XGROUP", "CREATE", "s", "g", "0"),
    ("XREADGROUP", "GROUP", "g", "c", "COUNT", 1, "STREAMS", "s", ">"),
    ("SET", "k", "zero"),
    ("MOVE", "k", 0),
    ("MOVE", "k", "x"),
    ("MOVE", "k", 16),
    ("MOVE", "nokey", 1),
    ("MOVE", "k", 1),
    ("MOVE", "k", 1),
    ("SET", "k", "again"),
    ("MOVE", "k", 1),
    ("COPY", "s", "s"),
    ("COPY", "s", "s", "DB", 0),
    ("COPY", "s", "t", "DB", 16),
    ("COPY", "nokey", "t", "DB", 16),
    ("COPY", "s", "t", "DB", "x"),
    ("COPY", "s", "t", "DB"),
    ("COPY", "s", "t", "FOO"),
    ("COPY", "s"),
    ("COPY", "nokey", "t"),
    ("COPY", "s", "t"),
    ("COPY", "s", "t"),
    ("XACK", "t", "g", "1-1"),
    ("XPENDING", "s", "g"),
    ("XPENDING", "t", "g"),
    ("COPY", "s", "k", "DB", 1),
    ("COPY", "s", "k", "REPLACE", "DB", 1, "DB", 2, "REPLACE"),
    ("COPY", "s", "s", "DB", 1),
    ("SELECT", 1),
    ("XPENDING", "s", "g"),
    ("GET", "k"),
    ("SWAPDB", 0, 1),
    ("SWAPDB", "x", 0),
    ("SWAPDB", 0, "x"),
    ("SWAPDB", 16, "x"),
    ("SWAPDB", 0, 16),
    ("SWAPDB", -1, 0),
    ("SWAPDB", 5, 5),
    ("DBSIZE",),
    ("KEYS", "*"),
    ("SELECT", 0),
    ("KEYS", "*"),
    ("RENAME", "nokey", "x"),
    ("RENAME", "nokey", "nokey"),
    ("RENAME", "k", "k"),
    ("RENAMENX", "k", "k"),
    ("RENAMENX", "k", "s"),
    ("RENAME", "k", "s"),
    ("TYPE", "s"),
    ("RENAMENX", "s", "fresh"),
    ("UNLINK", "fresh", "fresh", "nokey"),
    ("UNLINK",),
    ("DEL", "t", "t"),
    ("RANDOMKEY", "x"),
    ("DBSIZE", "x"),
    ("FLUSHDB", "x"),
    ("FLUSHDB", "ASYNC", "SYNC"),
    ("FLUSHALL", "x"),
    ("SELECT", 2),
    ("FLUSHDB", "sync"),
    ("DBSIZE",),
    ("SELECT", 0),
    ("FLUSHALL", "ASYNC"),
    ("DBSIZE",),
    ("RANDOMKEY",),
]


def test_script(pair: DbPair) -> None:
    for ws in SCRIPT:
        pair.same(*ws)
    pair.state_matches()


def test_randomkey_returns_a_key_of_the_selected_database(pair: DbPair) -> None:
    pair.same("SELECT", 3)
    for i in range(10):
        pair.same("SET", f"k{i}", "v")
    keys = {f"k{i}".encode() for i in range(10)}
    for _ in range(20):
        ours, theirs = pair.both("RANDOMKEY")
        assert ours in keys and theirs in keys


@pytest.mark.parametrize("seed", [1, 2])
def test_random_commands_across_databases(pair: DbPair, seed: int) -> None:
    rng = random.Random(seed)
    keys = ["s", "t", "k"]
    dbs = [0, 1, 2, 15]
    for i in range(300):
        key, other, db = rng.choice(keys), rng.choice(keys), rng.choice(dbs)
        cmd: tuple[Word, ...] = rng.choice(
            [
                ("XADD", key, f"{i + 1}-1", "f", i),
                ("XADD", key, f"{i + 1}-1", "f", i),
                ("XGROUP", "CREATE", key, "g", "0", "MKSTREAM"),
                ("XREADGROUP", "GROUP", "g", "c", "COUNT", 2, "STREAMS", key, ">"),
                ("XACK", key, "g", f"{rng.randrange(1, i + 2)}-1"),
                ("SELECT", db),
                ("MOVE", key, db),
                ("SWAPDB", rng.choice(dbs), db),
                ("COPY", key, other, "DB", db),
                ("COPY", key, other, "DB", db, "REPLACE"),
                ("RENAME", key, other),
                ("RENAMENX", key, other),
                ("SET", key, "x"),
                ("UNLINK", key),
                ("FLUSHDB",),
                ("EXISTS", key, other),
                ("DBSIZE",),
            ]
        )
        pair.same(*cmd)
    pair.state_matches()
