"""OBJECT ENCODING and FREQ against a real redis-server (Debian's 7.0), where 7.0 and 8.8
agree: streams, integers, long and short strings, integer sets and big sets, big lists, a
missing key, FREQ's error, unknown subcommands and arity errors. (7.0 has no listpack sets or
lists and embeds a string up to 44 bytes whatever its key: those encodings are checked
against 8.8's answers in tests/unit/test_cmd_objects.py.)
"""

from __future__ import annotations

import pytest
from redis_conn import RedisServer
from test_expire_compat import Pair

pytestmark = pytest.mark.compat


def test_encodings_and_errors(redis_server: RedisServer) -> None:
    p = Pair(redis_server)
    for ws in [
        ("XADD", "st", "1-1", "f", "v"), ("SET", "i", "12345"), ("SET", "neg", "-42"),
        ("SET", "big", "9223372036854775808"), ("SET", "r", "x" * 45), ("SET", "e", "abc"),
        ("SADD", "ints", *range(100)), ("SADD", "many", *(f"m{i}" for i in range(200))),
        ("RPUSH", "l", *(str(i) for i in range(3000))),
    ]:  # fmt: skip
        p.same(*ws)
    for key in ("st", "i", "neg", "big", "r", "e", "ints", "many", "l", "nokey"):
        p.same("OBJECT", "ENCODING", key)
    for ws in [
        ("OBJECT", "FREQ", "st"), ("OBJECT", "FREQ", "nokey"), ("OBJECT", "ENCODING"),
        ("OBJECT", "ENCODING", "st", "x"), ("OBJECT", "NOSUCH", "st"), ("OBJECT",),
        ("object", "encoding", "st"),
    ]:  # fmt: skip
        p.same(*ws)
