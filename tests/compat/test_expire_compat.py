"""Key expiry against a real redis-server (Debian's 7.0): EXPIRE and friends with NX/XX/GT/LT,
TTL and friends, PERSIST, SET's times and NX/XX/GET, replies and errors compared.

The engine runs at the wall clock's ms, the server at its own: relative times are compared in
whole seconds (TTL) or as a range (PTTL); absolute ones (EXPIREAT, EXPIRETIME) exactly.
"""

from __future__ import annotations

import time

import pytest
from redis_conn import RedisServer

from xstream.engine import Engine, StreamError
from xstream.engine.reply import Reply, flatten

pytestmark = pytest.mark.compat

Word = str | bytes | int
FAR = 4_000_000_000  # an EXPIREAT far ahead (2096)


class Pair:
    def __init__(self, server: RedisServer) -> None:
        self.conn = server.conn()
        self.conn.call(b"FLUSHALL")
        self.engine = Engine()

    def both(self, *ws: Word) -> tuple[Reply | StreamError, Reply | StreamError]:
        argv = [w if isinstance(w, bytes) else str(w).encode() for w in ws]
        ours: Reply | StreamError
        try:
            ours = flatten(self.engine.execute(argv, int(time.time() * 1000)).reply)
        except StreamError as err:
            ours = err
        self.engine.check_integrity()
        return ours, self.conn.call(*argv)

    def same(self, *ws: Word) -> Reply | StreamError:
        ours, theirs = self.both(*ws)
        assert ours == theirs, ws
        return ours


def test_expire_family_replies(redis_server: RedisServer) -> None:
    p = Pair(redis_server)
    p.same("SET", "k", "v")
    p.same("XADD", "s", "1-1", "f", "v")
    for ws in [
        ("TTL", "k"), ("PTTL", "nope"), ("EXPIRETIME", "k"), ("PEXPIRETIME", "nope"),
        ("EXPIRE", "nope", 10), ("EXPIRE", "k", 100, "XX"), ("EXPIRE", "k", 100, "GT"),
        ("EXPIRE", "k", 100, "LT"), ("TTL", "k"), ("EXPIRE", "k", 200, "NX"),
        ("EXPIRE", "k", 50, "GT"), ("EXPIRE", "k", 200, "gt", "xx"), ("TTL", "k"),
        ("EXPIREAT", "s", FAR), ("EXPIRETIME", "s"), ("PEXPIRETIME", "s"),
        ("PEXPIREAT", "s", FAR * 1000 + 5, "LT"), ("PEXPIREAT", "s", FAR * 1000 - 5, "LT"),
        ("PEXPIRETIME", "s"), ("PERSIST", "s"), ("PERSIST", "s"), ("PERSIST", "nope"),
        ("TTL", "s"), ("PEXPIRE", "s", 0), ("EXISTS", "s"), ("EXPIREAT", "k", 1),
        ("EXISTS", "k"), ("DBSIZE",),
    ]:  # fmt: skip
        p.same(*ws)


def test_expire_errors(redis_server: RedisServer) -> None:
    p = Pair(redis_server)
    p.same("SET", "k", "v")
    for ws in [
        ("EXPIRE", "k", 10, "NX", "XX"), ("EXPIRE", "k", 10, "NX", "GT"),
        ("EXPIRE", "k", 10, "GT", "LT"), ("EXPIRE", "k", 10, "BOGUS"), ("EXPIRE", "k", "x"),
        ("EXPIRE", "k", 2**62), ("EXPIRE", "k", -(2**62)), ("PEXPIRE", "k", 2**63 - 1),
        ("EXPIREAT", "k", 2**62), ("PEXPIREAT", "k", "1.5"), ("TTL",), ("PERSIST", "a", "b"),
        ("EXPIRE", "k"), ("EXPIRETIME", "k", "x"), ("EXPIRE", "nope", "x"),
        ("EXPIRE", "nope", 10, "FOO"),
    ]:  # fmt: skip
        p.same(*ws)


def test_set_options(redis_server: RedisServer) -> None:
    p = Pair(redis_server)
    p.same("XADD", "s", "1-1", "f", "v")
    for ws in [
        ("SET", "a", "1", "EX", 100), ("TTL", "a"), ("SET", "a", "2", "KEEPTTL"), ("TTL", "a"),
        ("SET", "a", "3"), ("TTL", "a"), ("SET", "a", "4", "PX", 100_000), ("TTL", "a"),
        ("SET", "a", "5", "EXAT", FAR), ("EXPIRETIME", "a"), ("SET", "a", "6", "PXAT", FAR),
        ("PEXPIRETIME", "a"), ("SET", "a", "7", "NX"), ("SET", "b", "7", "XX"),
        ("SET", "a", "8", "GET"), ("SET", "a", "9", "NX", "GET"), ("SET", "c", "1", "GET"),
        ("GET", "a"), ("SET", "s", "x", "GET"), ("SET", "a", "1", "EX", 0),
        ("SET", "a", "1", "PX", -1), ("SET", "a", "1", "EX", "x"), ("SET", "a", "1", "EX"),
        ("SET", "a", "1", "EX", 1, "PX", 1), ("SET", "a", "1", "EX", 1, "EX", 100),
        ("TTL", "a"), ("SET", "a", "1", "KEEPTTL", "EX", 1), ("SET", "a", "1", "NX", "XX"),
        ("SET", "a", "1", "EX", 2**62), ("SET", "a", "1", "PXAT", 2**63 - 1),
        ("SET", "a", "1", "BOGUS"), ("SET", "s", "1", "XX", "GET"),
    ]:  # fmt: skip
        p.same(*ws)


def test_pttl_and_restore_ttl(redis_server: RedisServer) -> None:
    p = Pair(redis_server)
    p.same("XADD", "s", "1-1", "f", "v")
    p.same("PEXPIRE", "s", 100_000)
    ours, theirs = p.both("PTTL", "s")
    assert isinstance(ours, int) and isinstance(theirs, int) and abs(ours - theirs) < 1000
    payload = p.conn.call(b"DUMP", b"s")
    assert isinstance(payload, bytes)
    p.same("RESTORE", "t", 50_000, payload)
    p.same("TTL", "t")
    p.same("RESTORE", "u", FAR * 1000, payload, "ABSTTL")
    p.same("PEXPIRETIME", "u")
    p.same("RESTORE", "t", 1, payload, "ABSTTL", "REPLACE")
    p.same("EXISTS", "t")
    p.same("RESTORE", "t", -1, payload)
