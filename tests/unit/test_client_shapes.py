"""xstream.client without a redis-server: reply conversion, error mapping, argv building, and
redis-py's shapes for what Redis 7.0 cannot answer (XDELEX, XACKDEL, XNACK, XCFGSET, IDMP,
XREADGROUP CLAIM, XSETID, 8.x XINFO fields).

The oracle for shapes is redis-py itself: a small RESP2 server over a second engine (this
file's `EngineServer`) is queried with `redis.Redis(protocol=2)` while our Client queries an
identical engine in process, both at one fixed clock, so even `*` IDs and idle times agree.
The oracle for argv is redis-py's own command building (its `execute_command` arguments,
split and encoded as its packer does), and for the write flag, the engine's command table.
"""

from __future__ import annotations

import contextlib
import socketserver
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
import redis
from redis._parsers.base import BaseParser
from redis._parsers.encoders import Encoder

from xstream.client import (
    AckTimeoutError,
    BusyLoadingError,
    Client,
    ConnectionError,
    DataError,
    EngineTransport,
    Pipeline,
    ReadOnlyError,
    ResponseError,
    error_from_line,
)
from xstream.client.commands import StreamCommands
from xstream.client.shapes import to_python
from xstream.engine import NULL_ARRAY, Engine, StreamError
from xstream.engine.reply import OK, PairMap, Reply, ReplyMap, Status
from xstream.server.resp.codec import RespParser, encode, encode_error

NOW = 1_700_000_000_000  # both engines' clock, fixed
Args = tuple[Any, ...]
Kwargs = dict[str, Any]


# --- to_python --------------------------------------------------------------------------------


def test_to_python_resp2_view() -> None:
    raw: Reply = ReplyMap(
        [
            (b"a", 1),
            (b"m", ReplyMap([(b"x", None)])),
            (b"p", PairMap([[b"k", [b"v", NULL_ARRAY]]])),
            (b"s", Status("OK")),
        ]
    )
    decoded = ["a", 1, "m", ["x", None], "p", [["k", ["v", None]]], "s", "OK"]
    raw_bytes = [b"a", 1, b"m", [b"x", None], b"p", [[b"k", [b"v", None]]], b"s", b"OK"]
    assert to_python(raw, True) == decoded
    assert to_python(raw, False) == raw_bytes
    assert to_python(NULL_ARRAY, True) is None
    assert to_python(None, False) is None
    assert to_python(OK, False) == b"OK" and type(to_python(OK, True)) is str
    assert to_python(-5, True) == -5
    with pytest.raises(UnicodeDecodeError):
        to_python(b"\xff", True)
    assert to_python(b"\xff", True, errors="replace") == "\ufffd"


# --- errors -----------------------------------------------------------------------------------

LINES = [
    "ERR no such key",
    "ERR syntax error",
    "WRONGTYPE Operation against a key holding the wrong kind of value",
    "NOGROUP No such key 's' or consumer group 'g'",
    "BUSYGROUP Consumer Group name already exists",
    "READONLY You can't write against a read only replica.",
    "OOM command not allowed when used memory > 'maxmemory'.",
    "LOADING Redis is loading the dataset in memory",
    "NOPERM this user has no permissions",
    "TRYAGAIN Multiple keys request during rehashing of slot",
    "ACKTIMEOUT write applied on the primary but acknowledged by 0 of 1 replicas",
    "ERR",
]


@pytest.mark.parametrize("line", LINES)
def test_error_from_line_matches_redis_py(line: str) -> None:
    ours, theirs = error_from_line(line), BaseParser.parse_error(line)
    assert str(ours) == str(theirs)
    assert ours.args == theirs.args
    assert ours.status_code == theirs.status_code
    assert ours.line == line
    assert isinstance(ours, ResponseError)
    if type(theirs) is not redis.ResponseError:
        assert type(ours).__name__ == type(theirs).__name__


def test_error_classes() -> None:
    assert type(error_from_line("READONLY x")) is ReadOnlyError
    ack = error_from_line("ACKTIMEOUT 1 of 2 replicas")
    assert type(ack) is AckTimeoutError and str(ack) == "ACKTIMEOUT 1 of 2 replicas"
    loading = error_from_line("LOADING busy")
    assert isinstance(loading, BusyLoadingError | ConnectionError)
    assert isinstance(loading, ResponseError) and isinstance(loading, ConnectionError)
    assert type(error_from_line("WRONGTYPE x")) is ResponseError


# --- argv building, against redis-py's --------------------------------------------------------


class Recorder:
    """A transport that records argvs and answers from a script."""

    def __init__(self, answer: Any = OK) -> None:
        self.calls: list[tuple[list[bytes], bool]] = []
        self.answer = answer

    def execute(self, argv: list[bytes], *, write: bool) -> Reply:
        self.calls.append((argv, write))
        if isinstance(self.answer, ResponseError):
            raise self.answer
        return self.answer  # type: ignore[no-any-return]

    def execute_many(self, argvs: Sequence[list[bytes]], *, write: bool) -> list[Any]:
        out: list[Any] = []
        for argv in argvs:
            try:
                out.append(self.execute(argv, write=write))
            except ResponseError as e:
                out.append(e)
        return out

    def xadd_many(self, key: bytes, entries: Sequence[Sequence[bytes]]) -> list[bytes]:
        return [b"%d-0" % i for i in range(len(entries))]

    def close(self) -> None:
        pass


def redis_py_argv(method: str, *args: Any, **kwargs: Any) -> list[bytes]:
    """The words redis-py would send for this call."""
    sent: list[tuple[Any, ...]] = []
    r = redis.Redis(protocol=2)

    def capture(*a: Any, **_: Any) -> Any:
        sent.append(a)
        raise LookupError  # stop before any reply handling

    r.execute_command = capture  # type: ignore[method-assign]
    with contextlib.suppress(LookupError):
        getattr(r, method)(*args, **kwargs)
    (words,) = sent
    head = tuple(words[0].encode().split()) if isinstance(words[0], str) else (words[0],)
    enc = Encoder("utf-8", "strict", False)
    return [bytes(enc.encode(w)) for w in head + tuple(words[1:])]


CALLS: list[tuple[str, Args, Kwargs]] = [
    ("xadd", ("s", {"a": 1, b"b": 2.5, "c": b"x"}), {}),
    ("xadd", ("s", {"a": 1}), {"id": "1-*", "maxlen": 5, "approximate": False}),
    ("xadd", ("s", {"a": 1}), {"maxlen": 5, "limit": 3, "nomkstream": True}),
    ("xadd", ("s", {"a": 1}), {"minid": "5-0", "ref_policy": "ACKED"}),
    ("xadd", ("s", {"a": 1}), {"idmpauto": "p1"}),
    ("xadd", ("s", {"a": 1}), {"idmp": ("p1", b"iid")}),
    ("xtrim", ("s",), {"maxlen": 5}),
    ("xtrim", ("s",), {"minid": "3-0", "approximate": False, "ref_policy": "DELREF"}),
    ("xtrim", ("s",), {"maxlen": 5, "limit": 10}),
    ("xdel", ("s", "1-1", b"2-2"), {}),
    ("xdelex", ("s", "1-1", "2-2"), {"ref_policy": "DELREF"}),
    ("xdelex", ("s", "1-1"), {}),
    ("xackdel", ("s", "g", "1-1"), {"ref_policy": "ACKED"}),
    ("xnack", ("s", "g", "FAIL", "1-1", "2-1"), {"retrycount": 3, "force": True}),
    ("xnack", ("s", "g", "SILENT", "1-1"), {}),
    ("xcfgset", ("s",), {"idmp_duration": 10, "idmp_maxsize": 50}),
    ("xcfgset", ("s",), {"idmp_maxsize": 50}),
    ("xlen", ("s",), {}),
    ("xrange", ("s",), {"count": 3}),
    ("xrange", ("s", "1", "(5"), {}),
    ("xrevrange", ("s",), {"count": 3}),
    ("xread", ({"s": 0, b"t": "$"},), {"count": 2, "block": 100}),
    ("xread", ({"s": 0},), {"max_count": 2, "max_size": 1000}),
    ("xreadgroup", ("g", "c", {"s": ">"}), {"count": 1, "block": 0, "noack": True}),
    ("xreadgroup", ("g", "c", {"s": ">", "t": "0"}), {"claim_min_idle_time": 100}),
    ("xreadgroup", ("g", "c", {"s": ">"}), {"max_count": 3, "max_size": 9}),
    ("xack", ("s", "g", "1-1", "2-2"), {}),
    ("xpending", ("s", "g"), {}),
    ("xpending_range", ("s", "g", "-", "+", 10), {"consumername": "c", "idle": 5}),
    ("xpending_range", ("s", "g", "-", "+", 10), {}),
    ("xclaim", ("s", "g", "c", 10, ["1-1"]), {"idle": 1, "time": 2, "retrycount": 3}),
    ("xclaim", ("s", "g", "c", 10, ("1-1", "2-2")), {"force": True, "justid": True}),
    ("xautoclaim", ("s", "g", "c", 10), {"start_id": "1-1", "count": 5, "justid": True}),
    ("xautoclaim", ("s", "g", "c", 10), {}),
    ("xgroup_create", ("s", "g"), {"mkstream": True, "entries_read": 3}),
    ("xgroup_create", ("s", "g", 0), {}),
    ("xgroup_setid", ("s", "g", "5-0"), {"entries_read": 2}),
    ("xgroup_destroy", ("s", "g"), {}),
    ("xgroup_createconsumer", ("s", "g", "c"), {}),
    ("xgroup_delconsumer", ("s", "g", "c"), {}),
    ("xinfo_stream", ("s",), {"full": True}),
    ("xinfo_stream", ("s",), {}),
    ("xinfo_groups", ("s",), {}),
    ("xinfo_consumers", ("s", "g"), {}),
    ("delete", ("a", b"b"), {}),
    ("exists", ("a", "b"), {}),
    ("type", ("a",), {}),
    ("keys", (), {}),
    ("keys", ("s*",), {}),
    ("scan", (0,), {"match": "s*", "count": 5, "_type": "stream"}),
    ("flushall", (), {"asynchronous": True}),
    ("set", ("k", "v"), {}),
    ("set", ("k", "v"), {"ex": 5, "nx": True, "get": True}),
    ("get", ("k",), {}),
    ("memory_usage", ("k",), {"samples": 0}),
    ("wait", (1, 100), {}),
    ("execute_command", ("XINFO STREAM", "s"), {}),
]


@pytest.mark.parametrize(("method", "args", "kwargs"), CALLS)
def test_argv_as_redis_py_builds_it(method: str, args: Args, kwargs: Kwargs) -> None:
    rec = Recorder(answer=[b"0", []] if method == "scan" else 0)
    client = Client(transport=rec)
    with contextlib.suppress(TypeError, IndexError, KeyError):  # the answer fits no callback
        getattr(client, method)(*args, **kwargs)
    ((argv, write),) = rec.calls
    assert argv == redis_py_argv(method, *args, **kwargs)
    if method == "wait":
        assert write
    else:
        assert write == Engine().is_write(argv), argv


def test_xpending_range_without_range_is_the_summary() -> None:
    rec = Recorder(answer=[0, None, None, None])
    reply = Client(transport=rec).xpending_range("s", "g", None, None, None)
    assert reply == {"pending": 0, "min": None, "max": None, "consumers": []}
    assert rec.calls == [([b"XPENDING", b"s", b"g"], False)]


# --- shapes of 8.x commands: redis-py over RESP vs our Client, one engine each ----------------


class FixedClockTransport(EngineTransport):
    """EngineTransport at the fixed clock NOW."""

    def execute(self, argv: list[bytes], *, write: bool) -> Reply:
        try:
            result = self.engine.execute(argv, NOW)
        except StreamError as e:
            raise error_from_line(e.line) from None
        return NULL_ARRAY if result.block is not None else result.reply

    def xadd_many(self, key: bytes, entries: Sequence[Sequence[bytes]]) -> list[bytes]:
        try:
            result = self.engine.xadd_many(key, entries, NOW)
        except StreamError as e:
            raise error_from_line(e.line) from None
        return [r for r in result.reply if isinstance(r, bytes)]  # type: ignore[union-attr]


class _Handler(socketserver.BaseRequestHandler):
    server: EngineServer

    def handle(self) -> None:
        parser = RespParser()
        while data := self.request.recv(1 << 16):
            parser.feed(data)
            while (argv := parser.next_command()) is not None:
                self.request.sendall(self.server.answer(argv))


class EngineServer(socketserver.ThreadingTCPServer):
    """An engine served over RESP2 on a loopback port, at the fixed clock NOW."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.engine = Engine()
        self.lock = threading.Lock()

    def answer(self, argv: list[bytes]) -> bytes:
        with self.lock:
            try:
                result = self.engine.execute(argv, NOW)
            except StreamError as e:
                return encode_error(e)
        return encode(NULL_ARRAY if result.block is not None else result.reply, 2)


@pytest.fixture(scope="module")
def engine_server() -> Iterator[EngineServer]:
    server = EngineServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


class Mirror:
    def __init__(self, server: EngineServer, decode: bool) -> None:
        server.engine = Engine()
        self.theirs = redis.Redis(
            host="127.0.0.1", port=server.server_address[1], protocol=2, decode_responses=decode
        )
        self.ours = Client(transport=FixedClockTransport(), decode_responses=decode)

    def same(self, method: str, *args: Any, **kwargs: Any) -> Any:
        results = []
        for client in (self.ours, self.theirs):
            try:
                results.append(getattr(client, method)(*args, **kwargs))
            except Exception as e:
                results.append(("raised", type(e).__name__, str(e)))
        assert results[0] == results[1], (method, args, kwargs)
        return results[0]

    def ok(self, method: str, *args: Any, **kwargs: Any) -> Any:
        result = self.same(method, *args, **kwargs)
        assert not (isinstance(result, tuple) and result and result[0] == "raised"), result
        return result


@pytest.fixture(params=[False, True], ids=["bytes", "decoded"])
def mirror(request: pytest.FixtureRequest, engine_server: EngineServer) -> Iterator[Mirror]:
    m = Mirror(engine_server, request.param)
    yield m
    m.theirs.close()


def test_newer_stream_commands(mirror: Mirror) -> None:
    m = mirror
    for i in range(1, 6):
        m.ok("xadd", "s", {"n": i}, id=f"{i}-0")
    m.ok("xadd", "s", {"n": 6})  # a `*` ID: the clocks agree
    m.ok("xgroup_create", "s", "g", 0)
    m.ok("xreadgroup", "g", "c", {"s": ">"}, count=3)
    m.ok("xreadgroup", "g", "c", {"s": ">"}, count=1, claim_min_idle_time=0)
    m.ok("xreadgroup", "g", "d", {"s": ">"}, claim_min_idle_time=0)
    m.ok("xnack", "s", "g", "FAIL", "1-0", "2-0")
    m.ok("xnack", "s", "g", "FATAL", "3-0", retrycount=2)
    m.ok("xnack", "s", "g", "SILENT", "9-0", force=True)
    m.ok("xinfo_stream", "s", full=True)
    m.ok("xpending_range", "s", "g", "-", "+", 10)
    m.ok("xackdel", "s", "g", "1-0", "9-9")
    m.ok("xackdel", "s", "g", "2-0", ref_policy="DELREF")
    m.ok("xdelex", "s", "3-0", "8-8")
    m.ok("xdelex", "s", "4-0", ref_policy="ACKED")
    m.ok("xtrim", "s", maxlen=1, approximate=False, ref_policy="KEEPREF")
    m.ok("xadd", "s", {"n": 7}, maxlen=10, ref_policy="DELREF")
    m.ok("xinfo_stream", "s")
    m.ok("xinfo_groups", "s")
    m.ok("xinfo_consumers", "s", "g")
    m.ok("xautoclaim", "s", "g", "e", 0)
    m.ok("xclaim", "s", "g", "e", 0, ["5-0"], force=True)
    m.ok("xrange", "s")


def test_idempotent_adds(mirror: Mirror) -> None:
    m = mirror
    m.same("xcfgset", "s", idmp_duration=60, idmp_maxsize=10)  # no stream: Redis's error
    m.ok("xadd", "s", {"a": 1}, idmp=("p1", b"i1"))
    m.ok("xadd", "s", {"a": 1}, idmp=("p1", b"i1"))  # a duplicate: the first ID again
    m.ok("xadd", "s", {"a": 2}, idmpauto="p2")
    m.ok("xadd", "s", {"a": 2}, idmpauto="p2")
    m.ok("xcfgset", "s", idmp_duration=60)
    m.ok("xcfgset", "s", idmp_maxsize=10)
    m.ok("xinfo_stream", "s")
    m.ok("xinfo_stream", "s", full=True)
    m.same("xadd", "s", {"a": 1}, idmpauto="p", maxlen=1, approximate=False)


def test_errors_only_newer_servers_give(mirror: Mirror) -> None:
    m = mirror
    m.ok("xadd", "s", {"a": 1}, id="1-0")
    m.same("xread", {"s": 0}, max_count=2)  # MAXCOUNT is Redis 8.10: a syntax error here
    m.same("xnack", "s", "nog", "FAIL", "1-0")
    m.same("xackdel", "s", "nog", "1-0")
    m.same("xdelex", "str", "1-0")
    m.same("execute_command", "XSETID", "s", "0-5")
    m.same("xcfgset", "nokey", idmp_duration=5)


def test_xsetid(mirror: Mirror) -> None:
    m = mirror
    m.ok("xadd", "s", {"a": 1}, id="1-0")
    assert m.ours.xsetid("s", "5-0", entries_added=3, max_deleted_id="2-0") is True
    m.theirs.execute_command("XSETID", "s", "5-0", "ENTRIESADDED", 3, "MAXDELETEDID", "2-0")
    m.ok("xinfo_stream", "s")
    with pytest.raises(ResponseError) as info:
        m.ours.xsetid("s", "1-0")
    assert str(info.value).startswith("The ID specified in XSETID is smaller")


def test_xadd_many(mirror: Mirror) -> None:
    m = mirror
    ids = m.ours.xadd_many("s", [{"a": 1}, {"b": b"2", "c": 3.5}])
    expected = [f"{NOW}-0", f"{NOW}-1"]
    assert ids == (expected if m.ours.decode_responses else [i.encode() for i in expected])
    for fields in ({"a": 1}, {"b": b"2", "c": 3.5}):
        m.theirs.xadd("s", fields)
    m.ok("xrange", "s")
    assert m.ours.xadd_many("s", []) == []
    with pytest.raises(DataError, match="XADD fields must be a non-empty dict"):
        m.ours.xadd_many("s", [{"a": 1}, {}])
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        m.ours.set("k", "v")
        m.ours.xadd_many("k", [{"a": 1}])


# --- client and pipeline plumbing --------------------------------------------------------------


def test_pipeline_refuses_transactions_and_batches() -> None:
    client = Client(transport=FixedClockTransport())
    with pytest.raises(DataError, match="MULTI/EXEC"):
        client.pipeline(transaction=True)
    p = client.pipeline()
    assert isinstance(p, Pipeline)
    with pytest.raises(DataError, match="cannot be pipelined"):
        p.xadd_many("s", [{"a": 1}])
    with pytest.raises(DataError, match="cannot be pipelined"):
        p.xadd_many("s", [])  # refused whatever the entries
    with pytest.raises(DataError, match="cannot be pipelined"):
        p._xadd_many(b"s", [[b"a", b"1"]])


def test_a_host_must_implement_both_hooks() -> None:
    class NoBatches(StreamCommands):  # a host without _xadd_many
        def _call(self, argv: list[bytes], parse: Any, *, write: bool) -> Any:
            return argv

    with pytest.raises(TypeError, match="abstract method _xadd_many"):
        NoBatches()


def test_pipeline_sends_one_batch_as_write_if_any_writes() -> None:
    sent: list[tuple[int, bool]] = []

    class Batch(Recorder):
        def execute_many(self, argvs: Sequence[list[bytes]], *, write: bool) -> list[Any]:
            sent.append((len(argvs), write))
            return [0] * len(argvs)

    client = Client(transport=Batch())
    client.pipeline().xlen("s").exists("s").execute()
    client.pipeline().xlen("s").xdel("s", "1-1").execute()
    assert sent == [(2, False), (2, True)]


def test_ack_timeout_and_readonly_errors_reach_the_caller() -> None:
    line = "ACKTIMEOUT the write was applied but 0 of 1 replicas acknowledged it in time"
    client = Client(transport=Recorder(answer=error_from_line(line)))
    with pytest.raises(AckTimeoutError) as info:
        client.xadd("s", {"a": 1})
    assert str(info.value) == line and info.value.line == line
    client = Client(transport=Recorder(answer=error_from_line("READONLY no writes here")))
    with pytest.raises(ReadOnlyError) as ro:
        client.pipeline().xadd("s", {"a": 1}, id="1-1").execute()
    assert str(ro.value) == "Command # 1 (XADD s 1-1 a 1) of pipeline caused error: no writes here"


def test_client_plumbing() -> None:
    rec = Recorder(answer=2)
    with Client(transport=rec) as client:
        assert client.wait(1, 100) == 2
    assert rec.calls == [([b"WAIT", b"1", b"100"], True)]
    with pytest.raises(TypeError, match="unexpected arguments"):
        Client(transport=rec, socket_timeout=5)
    with pytest.raises(DataError, match="execute_command"):
        Client(transport=rec).execute_command()
