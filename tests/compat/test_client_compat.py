"""xstream.client.Client against redis-py: the same method calls on both, results compared.

redis-py 8.1 (`protocol=2`, the RESP2 shapes) talks to a real redis-server 7.0.15; our Client
talks to an in-process engine (`EngineTransport`). Every call is made on both sides with the
same arguments and both `decode_responses` settings, and the Python values (or the exception
class name and `str()`) must be equal. IDs are explicit, so the two clocks never matter; only
clock readings are blanked (idle times, delivery and seen times), and fields Redis 7.0 does not
have (IDMP, 8.6+; nacked-count, 8.8; active-time / inactive, 7.2) are dropped from our side.
Commands 7.0 lacks (XDELEX, XACKDEL, XNACK, XCFGSET, IDMP, XREADGROUP CLAIM) are compared here
only for their client-side DataErrors; tests/unit/test_client_shapes.py covers their replies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
import redis.connection
from redis_conn import RedisServer

from xstream.client import Client, EngineTransport, ResponseError

pytestmark = pytest.mark.compat

NEWER_STREAM_FIELDS = {
    "idmp-duration", "idmp-maxsize", "pids-tracked", "iids-tracked", "iids-added",
    "iids-duplicates",
}  # fmt: skip
NEWER_GROUP_FIELDS = {"nacked-count"}
NEWER_CONSUMER_FIELDS = {"active-time", "inactive"}

Norm = Callable[[Any], Any]
Args = tuple[Any, ...]
Kwargs = dict[str, Any]


def outcome(value: Any) -> Any:
    """A comparable form: an exception by its class name and message."""
    if isinstance(value, BaseException):
        return ("raised", type(value).__name__, str(value))
    if isinstance(value, list):
        return [outcome(v) for v in value]
    return value


class Both:
    """redis-py on redis-server and our Client on an engine, fed the same calls."""

    def __init__(self, server: RedisServer, decode: bool) -> None:
        self.decode = decode
        self.theirs = redis.Redis(
            host="127.0.0.1", port=server.port, protocol=2, decode_responses=decode
        )
        self.theirs.flushall()
        self.ours = Client(transport=EngineTransport(), decode_responses=decode)

    def close(self) -> None:
        self.theirs.close()
        self.ours.close()

    def run(self, method: str, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        results = []
        for client in (self.ours, self.theirs):
            try:
                results.append(getattr(client, method)(*args, **kwargs))
            except (redis.RedisError, ResponseError, Exception) as e:
                results.append(e)
        return results[0], results[1]

    def same(self, method: str, *args: Any, norm: Norm | None = None, **kwargs: Any) -> Any:
        ours, theirs = self.run(method, *args, **kwargs)
        if norm is not None and not isinstance(theirs, BaseException):
            ours, theirs = norm(ours), norm(theirs)
        assert outcome(ours) == outcome(theirs), (method, args, kwargs)
        if isinstance(theirs, redis.ResponseError):
            assert isinstance(ours, ResponseError)
        return ours

    def ok(self, method: str, *args: Any, norm: Norm | None = None, **kwargs: Any) -> Any:
        result = self.same(method, *args, norm=norm, **kwargs)
        assert not isinstance(result, BaseException), result
        return result


@pytest.fixture(params=[False, True], ids=["bytes", "decoded"])
def both(
    request: pytest.FixtureRequest, redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Both]:
    # redis-py's own command encoder, the one our Client mirrors: with hiredis installed (the
    # server extra brings it) redis-py packs commands with hiredis, whose type errors read
    # differently ("A tuple item must be ...").
    monkeypatch.setattr(redis.connection, "HIREDIS_AVAILABLE", False)
    b = Both(redis_server, request.param)
    yield b
    b.close()


# --- normalizers: clocks blanked, post-7.0 fields dropped ------------------------------------


def norm_info(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in NEWER_STREAM_FIELDS}


def norm_full(d: dict[str, Any]) -> dict[str, Any]:
    d = norm_info(d)
    d["groups"] = [norm_full_group(g) for g in d["groups"]]
    return d


def norm_full_group(group: dict[str, Any]) -> dict[str, Any]:
    g = {k: v for k, v in group.items() if k not in NEWER_GROUP_FIELDS}
    g["pending"] = [[p[0], p[1], None, p[3]] for p in g["pending"]]
    g["consumers"] = [norm_full_consumer(c) for c in g["consumers"]]
    return g


def norm_full_consumer(consumer: dict[str, Any]) -> dict[str, Any]:
    c = {k: v for k, v in consumer.items() if k not in NEWER_CONSUMER_FIELDS}
    c["seen-time"] = None
    c["pending"] = [[p[0], None, p[2]] for p in c["pending"]]
    return c


def norm_consumers(cs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    kept = [{k: v for k, v in c.items() if k not in NEWER_CONSUMER_FIELDS} for c in cs]
    return [{**c, "idle": None} for c in kept]


def norm_pending(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "time_since_delivered": None} for r in rows]


def sort_keys(keys: list[Any]) -> list[Any]:
    return sorted(keys)


# --- appending, ranges, trimming --------------------------------------------------------------


def test_xadd_xrange_xtrim(both: Both) -> None:
    both.ok("xadd", "s", {"a": 1, "b": 2.5, "c": "x", b"d": b"y"}, id="1-1")
    both.ok("xadd", "s", {"a": 2}, id=b"2-0")
    both.ok("xadd", "s", {"a": 3}, id="2-*")
    both.ok("xadd", "s", {"k": ""}, id=3)  # an int ID: 3-0
    both.ok("xadd", "s", {"a": 5}, id="4-1", maxlen=10, approximate=False)
    both.ok("xadd", "s", {"a": 6}, id="5-1", maxlen=100, limit=10)
    both.ok("xadd", "s", {"a": 7}, id="6-1", minid="0-1")
    both.ok("xadd", "s", {"a": 8}, id="7-1", minid="0-2", approximate=False)
    both.same("xadd", "nokey", {"a": 1}, id="1-1", nomkstream=True)
    both.ok("xlen", "s")
    both.ok("xlen", "nokey")
    both.ok("xrange", "s")
    both.ok("xrange", "s", "2", "4-1")
    both.ok("xrange", "s", min="(2-0", count=2)
    both.ok("xrange", "nokey")
    both.ok("xrevrange", "s")
    both.ok("xrevrange", "s", "4", "2", count=1)
    both.ok("xrevrange", "s", max="+", min="-", count=3)
    both.ok("xdel", "s", "2-0", "2-1", "99-0")
    both.ok("xdel", "nokey", "1-1")
    both.ok("xtrim", "s", maxlen=5, approximate=False)
    both.ok("xtrim", "s", maxlen=0)  # ~ with a node this small: nothing goes
    both.ok("xtrim", "s", minid="5-0", approximate=False)
    both.ok("xtrim", "s", maxlen=1, limit=10)
    both.ok("xtrim", "nokey", maxlen=1)
    both.ok("xrange", "s")
    both.ok("xinfo_stream", "s", norm=norm_info)


def test_xadd_limits_trim_like_redis(both: Both) -> None:
    for i in range(1, 251):
        both.ok("xadd", "big", {"i": i}, id=f"{i}-0", maxlen=200, approximate=False)
    both.ok("xtrim", "big", maxlen=10)  # approximate: whole nodes only
    both.ok("xlen", "big")
    both.ok("xtrim", "big", minid="230-0", limit=100)
    both.ok("xlen", "big")
    both.ok("xrange", "big", count=3)


def test_xread_several_streams(both: Both) -> None:
    for i in range(1, 4):
        both.ok("xadd", "s", {"n": i}, id=f"{i}-0")
    both.ok("xadd", "t", {"m": "x"}, id="5-5")
    both.ok("xread", {"s": 0, "t": "0-0"})
    both.ok("xread", {"s": "1-0", "t": 0}, count=1)
    both.ok("xread", {"t": "5-5", "s": "2"})
    both.ok("xread", {"s": "$"})
    both.ok("xread", {"s": "$", "t": "$"}, block=10)
    both.ok("xread", {"nokey": 0})
    both.ok("xread", {"nokey": 0, "s": "3-0", "t": "0"})


# --- consumer groups ------------------------------------------------------------------------


def test_consumer_groups(both: Both) -> None:
    for i in range(1, 5):
        both.ok("xadd", "s", {"n": i, "f": "v"}, id=f"{i}-1")
    for i in range(1, 3):
        both.ok("xadd", "t", {"m": i}, id=f"{i}-0")
    both.ok("xgroup_create", "s", "g", 0)
    both.ok("xgroup_create", "t", "g", "0-0")
    both.ok("xgroup_create", "u", "g", mkstream=True)
    both.ok("xgroup_create", "s", "g2", "2-1", entries_read=2)
    both.ok("xinfo_groups", "s")
    both.ok("xgroup_createconsumer", "s", "g", "alice")
    both.ok("xgroup_createconsumer", "s", "g", "alice")
    both.ok("xreadgroup", "g", "alice", {"s": ">", "t": ">"}, count=2)
    both.ok("xreadgroup", "g", "bob", {"s": ">"})
    both.ok("xreadgroup", "g", "alice", {"s": "0", "t": 0})
    both.ok("xreadgroup", "g", "alice", {"s": "0"}, count=1)
    both.ok("xreadgroup", "g", "alice", {"s": ">", "t": ">"}, block=10)
    both.ok("xreadgroup", "g2", "carl", {"s": ">"}, noack=True)
    both.ok("xreadgroup", "g2", "carl", {"s": "0"})
    both.ok("xpending", "s", "g")
    both.ok("xpending", "s", "g2")
    both.ok("xpending", "t", "g")
    both.ok("xpending_range", "s", "g", "-", "+", 10, norm=norm_pending)
    both.ok("xpending_range", "s", "g", "2-1", "+", 1, norm=norm_pending)
    both.ok("xpending_range", "s", "g", "-", "+", 10, consumername="bob", norm=norm_pending)
    both.ok("xpending_range", "s", "g", "-", "+", 10, idle=0, norm=norm_pending)
    both.ok("xpending_range", "s", "g", "-", "+", 10, idle=10**9, norm=norm_pending)
    both.ok("xpending_range", "s", "g", None, None, None)
    both.ok("xinfo_groups", "s")
    both.ok("xinfo_groups", "t")
    both.ok("xinfo_consumers", "s", "g", norm=norm_consumers)
    both.ok("xinfo_stream", "s", norm=norm_info)
    both.ok("xinfo_stream", "s", full=True, norm=norm_full)
    both.ok("xinfo_stream", "t", full=True, norm=norm_full)
    both.ok("xinfo_stream", "u", norm=norm_info)
    both.ok("xinfo_stream", "u", full=True, norm=norm_full)

    # claiming
    both.ok("xclaim", "s", "g", "bob", 0, ["1-1"])
    both.ok("xclaim", "s", "g", "bob", 10**9, ["2-1"])  # not idle long enough
    both.ok("xclaim", "s", "g", "bob", 0, ("2-1", "3-1"), justid=True)
    both.ok("xclaim", "s", "g", "alice", 0, ["1-1"], idle=5, retrycount=7)
    both.ok("xclaim", "s", "g", "alice", 0, ["4-1"], time=1, justid=True)
    both.ok("xpending_range", "s", "g", "-", "+", 10, norm=norm_pending)
    both.ok("xautoclaim", "s", "g", "dave", 0, count=1)
    both.ok("xautoclaim", "s", "g", "dave", 0, start_id="2-1", count=2, justid=True)
    both.ok("xautoclaim", "s", "g", "dave", 10**9)
    both.ok("xdel", "s", "3-1")
    both.ok("xautoclaim", "s", "g", "dave", 0)
    both.ok("xclaim", "s", "g", "dave", 0, ["3-1"])
    both.ok("xreadgroup", "g", "dave", {"s": 0})
    both.ok("xpending", "s", "g")

    # acknowledging, moving, removing
    both.ok("xack", "s", "g", "1-1", "2-1", "9-9")
    both.ok("xack", "s", "g", "1-1")
    both.ok("xack", "nokey", "g", "1-1")
    both.ok("xpending", "s", "g")
    both.ok("xgroup_setid", "s", "g", 0)
    both.ok("xgroup_setid", "s", "g", "$")
    both.ok("xgroup_delconsumer", "s", "g", "dave")
    both.ok("xgroup_delconsumer", "s", "g", "nobody")
    both.ok("xinfo_consumers", "s", "g", norm=norm_consumers)
    both.ok("xgroup_destroy", "s", "g")
    both.ok("xgroup_destroy", "s", "g")
    both.ok("xinfo_groups", "s")


def test_xinfo_stream_empty_and_deleted(both: Both) -> None:
    both.ok("xadd", "s", {"a": 1}, id="1-1")
    both.ok("xadd", "s", {"a": 2}, id="2-1")
    both.ok("xgroup_create", "s", "g", 0)
    both.ok("xreadgroup", "g", "c", {"s": ">"})
    both.ok("xdel", "s", "1-1")
    both.ok("xreadgroup", "g", "c", {"s": "0"})  # a deleted entry: (id, {})
    both.ok("xdel", "s", "2-1")
    both.ok("xinfo_stream", "s", norm=norm_info)
    both.ok("xinfo_stream", "s", full=True, norm=norm_full)
    both.ok("xrange", "s")
    both.ok("xread", {"s": 0})
    both.ok("xautoclaim", "s", "g", "c", 0)
    both.ok("xpending", "s", "g")


# --- keyspace -----------------------------------------------------------------------------------


def test_keyspace(both: Both) -> None:
    both.ok("set", "k", "v")
    both.ok("set", "k", b"w")
    both.ok("get", "k")
    both.ok("get", "nokey")
    both.ok("xadd", "s", {"a": 1}, id="1-1")
    both.ok("type", "s")
    both.ok("type", "k")
    both.ok("type", "nokey")
    both.ok("exists", "s", "k", "nokey", "s")
    both.ok("keys", norm=sort_keys)
    both.ok("keys", "s*", norm=sort_keys)
    both.ok("dbsize")
    both.ok("delete", "k", "nokey")
    both.ok("delete", "nokey")
    both.ok("dbsize")
    assert sorted(both.ours.scan_iter()) == sorted(both.theirs.scan_iter())
    ours, theirs = both.run("scan", 0, match="*", count=100)
    assert ours == theirs  # one key, so the whole keyspace in one step: cursor 0
    both.ok("memory_usage", "nokey")
    assert isinstance(both.ours.memory_usage("s"), int)
    both.ok("flushall")
    both.ok("flushall", asynchronous=True)
    both.ok("keys")


# --- errors ---------------------------------------------------------------------------------


SERVER_ERRORS: list[tuple[str, Args, Kwargs]] = [
    ("xadd", ("str", {"a": 1}), {}),  # WRONGTYPE
    ("xadd", ("s", {"a": 1}), {"id": "1-1"}),  # equal or smaller
    ("xadd", ("s", {"a": 1}), {"id": "0-0"}),
    ("xadd", ("s", {"a": 1}), {"id": "x"}),
    ("xadd", ("s", {"a": 1}), {"id": "9-9", "maxlen": 1, "approximate": False, "limit": 5}),
    ("xadd", ("s", {"a": 1}), {"id": "9-9", "minid": "x"}),
    ("xrange", ("s", "zz", "+"), {}),
    ("xrevrange", ("s", "+", "-1"), {}),
    ("xrange", ("str",), {}),
    ("xtrim", ("s",), {"maxlen": 1, "approximate": False, "limit": 5}),
    ("xtrim", ("s",), {"minid": "a-b"}),
    ("xdel", ("s", "nope"), {}),
    ("xread", ({"s": "x"},), {}),
    ("xread", ({"str": 0},), {}),
    ("xreadgroup", ("nog", "c", {"s": ">"}), {}),
    ("xreadgroup", ("g", "c", {"s": "x"}), {}),
    ("xreadgroup", ("g", "c", {"nokey": ">"}), {}),
    ("xgroup_create", ("s", "g", 0), {}),  # BUSYGROUP
    ("xgroup_create", ("nokey", "g", 0), {}),
    ("xgroup_create", ("s", "g3", "x"), {}),
    ("xgroup_create", ("str", "g", 0), {}),
    ("xgroup_setid", ("s", "nog", 0), {}),
    ("xgroup_setid", ("nokey", "g", 0), {}),
    ("xgroup_createconsumer", ("s", "nog", "c"), {}),
    ("xgroup_delconsumer", ("nokey", "g", "c"), {}),
    ("xgroup_destroy", ("nokey", "g"), {}),
    ("xinfo_stream", ("nokey",), {}),
    ("xinfo_stream", ("str",), {"full": True}),
    ("xinfo_groups", ("nokey",), {}),
    ("xinfo_consumers", ("s", "nog"), {}),
    ("xpending", ("s", "nog"), {}),
    ("xpending_range", ("s", "nog", "-", "+", 10), {}),
    ("xpending_range", ("s", "g", "x", "+", 10), {}),
    ("xclaim", ("s", "nog", "c", 0, ["1-1"]), {}),
    ("xclaim", ("s", "g", "c", 0, ["bad"]), {}),
    ("xautoclaim", ("s", "nog", "c", 0), {}),
    ("xautoclaim", ("s", "g", "c", 0), {"start_id": "bad"}),
    ("xautoclaim", ("s", "g", "c", 0), {"count": 0}),
    ("xack", ("s", "g", "bad"), {}),
    ("get", ("s",), {}),
    ("execute_command", ("XSETID", "s", "0-1"), {}),
    ("execute_command", ("XINFO STREAM", "nokey"), {}),
    ("execute_command", ("NOSUCHCOMMAND", "x"), {}),
]


@pytest.mark.parametrize(("method", "args", "kwargs"), SERVER_ERRORS)
def test_server_errors(both: Both, method: str, args: Args, kwargs: Kwargs) -> None:
    both.ok("set", "str", "v")
    both.ok("xadd", "s", {"a": 1}, id="1-1")
    both.ok("xgroup_create", "s", "g", 0)
    ours, theirs = both.run(method, *args, **kwargs)
    if method == "execute_command" and args[0] == "NOSUCHCOMMAND":
        # Redis 7.0 words unknown commands with args beginning with: 'x' ; same prefix
        assert isinstance(ours, ResponseError) and isinstance(theirs, redis.ResponseError)
        assert str(ours) == str(theirs)
        return
    assert isinstance(theirs, redis.ResponseError), theirs
    assert isinstance(ours, ResponseError), ours
    assert (type(ours).__name__, str(ours)) == (type(theirs).__name__, str(theirs))
    assert ours.line.endswith(str(theirs))


def test_execute_command_successes(both: Both) -> None:
    both.ok("execute_command", "XADD", "s", "1-1", "a", 1)
    both.ok("execute_command", "XSETID", "s", "5-0")
    both.ok("execute_command", "XRANGE", "s", "-", "+")
    both.ok("execute_command", "XGROUP CREATE", "s", "g", 0)
    both.ok("execute_command", "XINFO", "GROUPS", "s")
    both.ok("execute_command", "xinfo groups", "s")
    both.ok("execute_command", "XLEN", "s")
    both.ok("execute_command", "TYPE", "s")


DATA_ERRORS: list[tuple[str, Args, Kwargs]] = [
    ("xadd", ("s", {}), {}),
    ("xadd", ("s", [("a", 1)]), {}),
    ("xadd", ("s", {"a": 1}), {"maxlen": 1, "minid": "1"}),
    ("xadd", ("s", {"a": 1}), {"maxlen": -1}),
    ("xadd", ("s", {"a": 1}), {"maxlen": "5"}),
    ("xadd", ("s", {"a": 1}), {"ref_policy": "KEEP"}),
    ("xadd", ("s", {"a": 1}), {"idmpauto": "p", "idmp": ("p", b"i")}),
    ("xadd", ("s", {"a": 1}), {"idmpauto": "p", "id": "1-1"}),
    ("xadd", ("s", {"a": 1}), {"idmp": ["p", b"i"]}),
    ("xadd", ("s", {"a": True}), {}),
    ("xadd", ("s", {"a": None}), {}),
    ("xadd", ("s", {"a": 1}), {"id": object()}),
    ("xtrim", ("s",), {}),
    ("xtrim", ("s",), {"maxlen": 1, "minid": 1}),
    ("xtrim", ("s",), {"maxlen": 1, "ref_policy": "X"}),
    ("xrange", ("s",), {"count": 0}),
    ("xrange", ("s",), {"count": "1"}),
    ("xrevrange", ("s",), {"count": -1}),
    ("xread", ({},), {}),
    ("xread", ([("s", 0)],), {}),
    ("xread", ({"s": 0},), {"block": -1}),
    ("xread", ({"s": 0},), {"count": 0}),
    ("xread", ({"s": 0},), {"count": 5, "max_count": 2}),
    ("xread", ({"s": 0},), {"max_size": 0}),
    ("xreadgroup", ("g", "c", {}), {}),
    ("xreadgroup", ("g", "c", {"s": ">"}), {"count": 0}),
    ("xreadgroup", ("g", "c", {"s": ">"}), {"block": -5}),
    ("xreadgroup", ("g", "c", {"s": ">"}), {"claim_min_idle_time": -1}),
    ("xreadgroup", ("g", "c", {"s": ">"}), {"max_count": 0}),
    ("xclaim", ("s", "g", "c", -1, ["1-1"]), {}),
    ("xclaim", ("s", "g", "c", "1", ["1-1"]), {}),
    ("xclaim", ("s", "g", "c", 0, []), {}),
    ("xclaim", ("s", "g", "c", 0, "1-1"), {}),
    ("xclaim", ("s", "g", "c", 0, ["1-1"]), {"idle": "5"}),
    ("xclaim", ("s", "g", "c", 0, ["1-1"]), {"time": 1.5}),
    ("xclaim", ("s", "g", "c", 0, ["1-1"]), {"retrycount": "x"}),
    ("xclaim", ("s", "g", "c", 0, ["1-1"]), {"force": 1}),
    ("xclaim", ("s", "g", "c", 0, ["1-1"]), {"justid": 1}),
    ("xautoclaim", ("s", "g", "c", -1), {}),
    ("xautoclaim", ("s", "g", "c", 0), {"count": -1}),
    ("xpending_range", ("s", "g", None, None, None), {"idle": 5}),
    ("xpending_range", ("s", "g", None, None, None), {"consumername": "c"}),
    ("xpending_range", ("s", "g", "-", None, 10), {}),
    ("xpending_range", ("s", "g", "-", "+", 10), {"idle": -1}),
    ("xpending_range", ("s", "g", "-", "+", -1), {}),
    ("xdelex", ("s",), {}),
    ("xdelex", ("s", "1-1"), {"ref_policy": "NONE"}),
    ("xackdel", ("s", "g"), {}),
    ("xackdel", ("s", "g", "1-1"), {"ref_policy": "x"}),
    ("xnack", ("s", "g", "SILENT"), {}),
    ("xnack", ("s", "g", "LOUD", "1-1"), {}),
    ("xnack", ("s", "g", "FAIL", "1-1"), {"retrycount": -1}),
    ("xcfgset", ("s",), {}),
    ("xcfgset", ("s",), {"idmp_duration": 0}),
    ("xcfgset", ("s",), {"idmp_duration": 301}),
    ("xcfgset", ("s",), {"idmp_maxsize": 0}),
    ("xcfgset", ("s",), {"idmp_maxsize": 1.5}),
    ("set", ("k", "v"), {"ex": 1, "px": 1}),
    ("set", ("k", "v"), {"nx": True, "xx": True}),
    ("set", ("k", "v"), {"ex": 1.5}),
    ("set", ("k", True), {}),
    ("get", (None,), {}),
    ("delete", ("k", 1.5j), {}),
    ("exists", (b"k", True), {}),
]


@pytest.mark.parametrize(("method", "args", "kwargs"), DATA_ERRORS)
def test_client_side_data_errors(both: Both, method: str, args: Args, kwargs: Kwargs) -> None:
    ours, theirs = both.run(method, *args, **kwargs)
    assert isinstance(theirs, redis.DataError), theirs
    assert (type(ours).__name__, str(ours)) == ("DataError", str(theirs))


def test_data_error_classes_match_python_errors(both: Both) -> None:
    # redis-py lets Python's own errors through where it calls int() on an argument
    ours, theirs = both.run("xautoclaim", "s", "g", "c", "soon")
    assert type(ours) is type(theirs) is ValueError


def test_undecodable_bytes(redis_server: RedisServer) -> None:
    """Bytes that are not UTF-8 come back as is, or fail to decode, on both sides alike."""
    raw = Both(redis_server, decode=False)
    raw.ok("xadd", "s", {b"\xff": b"\xfe\x00"}, id="1-1")
    raw.ok("xrange", "s")
    raw.ok("xread", {"s": 0})
    raw.ok("keys")
    raw.close()
    ours = Client(transport=raw.ours.transport, decode_responses=True)
    with pytest.raises(UnicodeDecodeError):
        ours.xrange("s")


# --- pipelines ------------------------------------------------------------------------------


def queue(p: Any) -> Any:
    return (
        p.xadd("s", {"a": 1}, id="1-1")
        .xadd("s", {"a": 2}, id="1-1")
        .xlen("s")
        .xrange("s")
        .xgroup_create("s", "g", 0)
        .xreadgroup("g", "c", {"s": ">"})
        .xinfo_stream("nokey")
        .xpending("s", "g")
        .xinfo_groups("s")
        .set("k", "v")
        .type("k")
    )


def test_pipeline_raise_on_error_false(both: Both) -> None:
    ours_p = both.ours.pipeline()
    theirs_p = both.theirs.pipeline(transaction=False)
    assert queue(ours_p) is ours_p and queue(theirs_p) is theirs_p
    assert len(ours_p) == len(theirs_p) == 11
    ours, theirs = ours_p.execute(raise_on_error=False), theirs_p.execute(raise_on_error=False)
    assert outcome(ours) == outcome(theirs)
    assert isinstance(ours[1], ResponseError) and isinstance(ours[6], ResponseError)
    assert len(ours_p) == len(theirs_p) == 0
    assert ours_p.execute() == theirs_p.execute() == []


def test_pipeline_raises_first_error(both: Both) -> None:
    errors = []
    for client, kwargs in ((both.ours, {}), (both.theirs, {"transaction": False})):
        with client.pipeline(**kwargs) as p:
            queue(p)
            with pytest.raises(Exception) as info:
                p.execute()
            errors.append(info.value)
            assert len(p) == 0
    ours, theirs = errors
    assert isinstance(ours, ResponseError) and isinstance(theirs, redis.ResponseError)
    assert str(ours) == str(theirs)
    assert str(ours).startswith("Command # 2 (XADD s 1-1 a 2) of pipeline caused error: ")
    # the commands after the failing one ran all the same
    both.ok("xinfo_groups", "s")
    both.ok("get", "k")


def test_pipeline_long_command_is_truncated_in_error(both: Both) -> None:
    fields = {f"field{i}": "v" * 30 for i in range(10)}
    messages = []
    for client, kwargs in ((both.ours, {}), (both.theirs, {"transaction": False})):
        p = client.pipeline(**kwargs)
        p.xadd("s", fields, id="0-0")
        with pytest.raises(Exception) as info:
            p.execute()
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "..." in messages[0]


def test_pipeline_reset_and_chaining(both: Both) -> None:
    p = both.ours.pipeline()
    assert p.xlen("s") is p
    assert len(p) == 1 and bool(p)
    p.reset()
    assert len(p) == 0
    assert p.execute() == []
    empty = both.ours.pipeline()
    assert bool(empty)
