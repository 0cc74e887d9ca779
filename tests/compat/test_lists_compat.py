"""Lists against a real redis-server (Debian's 7.0): pushes, pops, lengths, ranges and type
errors, replies compared."""

from __future__ import annotations

import pytest
from redis_conn import RedisServer
from test_expire_compat import Pair

pytestmark = pytest.mark.compat


def test_list_replies_and_type_errors(redis_server: RedisServer) -> None:
    p = Pair(redis_server)
    p.same("XADD", "s", "1-1", "f", "v")
    for ws in [
        ("LPUSH", "l", "a", "b"), ("RPUSH", "l", "c", "d"), ("LRANGE", "l", 0, -1),
        ("LRANGE", "l", -3, 1), ("LRANGE", "l", 5, 10), ("LRANGE", "l", -100, 100),
        ("LRANGE", "l", "x", 1), ("LLEN", "l"), ("LLEN", "nope"), ("LPOP", "l"), ("RPOP", "l"),
        ("TYPE", "l"), ("LPUSH", "s", "x"), ("XADD", "l", "*", "f", "v"), ("GET", "l"),
        ("SET", "l", "x", "GET"), ("LPOP", "nope"), ("LPUSH", "l"), ("LPOP", "l"),
        ("RPOP", "l"), ("EXISTS", "l"), ("LRANGE", "nope", 0, -1),
        ("STRLEN", "s"), ("STRLEN", "nope"), ("SET", "str", "hello"), ("STRLEN", "str"),
        ("SET", "str", ""), ("STRLEN", "str"), ("STRLEN", "str", "x"), ("STRLEN",),
    ]:  # fmt: skip
        p.same(*ws)


def test_pops_with_a_count(redis_server: RedisServer) -> None:
    p = Pair(redis_server)
    for ws in [
        ("LPOP", "nope", 0), ("LPOP", "nope", 2), ("RPUSH", "l", "a", "b", "c", "d"),
        ("LPOP", "l", 0), ("LPOP", "l", 2), ("RPOP", "l", 1), ("RPOP", "l", 5),
        ("EXISTS", "l"), ("RPUSH", "l", "a"), ("LPOP", "l", -1), ("LPOP", "l", "x"),
        ("LPOP", "l", 1, 2), ("RPOP", "l", "1.5"), ("SET", "s", "x"), ("LPOP", "s", 1),
        ("LPOP", "s", 0), ("LPOP", "s", "x"), ("LRANGE", "l", 0, -1),
    ]:  # fmt: skip
        p.same(*ws)
