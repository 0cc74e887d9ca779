"""Sets against a real redis-server (Debian's 7.0): adds, removals, membership, counts and type
errors, replies compared (SMEMBERS sorted on both sides: Redis answers in hash order)."""

from __future__ import annotations

import pytest
from redis_conn import RedisServer
from test_expire_compat import Pair

pytestmark = pytest.mark.compat


def test_set_replies_and_type_errors(redis_server: RedisServer) -> None:
    p = Pair(redis_server)
    p.same("XADD", "s", "1-1", "f", "v")
    p.same("SET", "str", "x")
    p.same("RPUSH", "l", "a")
    for ws in [
        ("SADD", "k", "b", "a", "b"), ("SADD", "k", "a", "c"), ("SADD", "k", "a"),
        ("SISMEMBER", "k", "a"), ("SISMEMBER", "k", "z"), ("SISMEMBER", "nope", "a"),
        ("SCARD", "k"), ("SCARD", "nope"), ("TYPE", "k"), ("SMEMBERS", "nope"),
        ("SREM", "k", "a", "z", "a"), ("SREM", "nope", "a"), ("SADD", "k"), ("SREM", "k"),
        ("SMEMBERS", "k", "x"), ("SISMEMBER", "k"),
        ("SADD", "s", "a"), ("SREM", "str", "a"), ("SMEMBERS", "l"), ("SISMEMBER", "s", "a"),
        ("SCARD", "str"), ("XADD", "k", "*", "f", "v"), ("XLEN", "k"), ("GET", "k"),
        ("LPUSH", "k", "a"), ("SET", "k", "x", "GET"), ("XGROUP", "CREATE", "k", "g", "$"),
        ("SREM", "k", "b", "c"), ("EXISTS", "k"), ("SCARD", "k"),
    ]:  # fmt: skip
        p.same(*ws)
    p.same("SADD", "k", "x", "y", "z")
    ours, theirs = p.both("SMEMBERS", "k")
    assert isinstance(ours, list) and isinstance(theirs, list)
    assert ours == sorted(theirs)
