"""The compat harness works: a real redis-server answers, in the engine's Reply types.

Also holds the codec to the server: `encode` must reproduce redis-server's reply bytes, and
`RespParser` must split requests and reject malformed ones exactly as redis-server does.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from redis_conn import RedisServer

from xstream.engine import errors
from xstream.engine.errors import StreamError
from xstream.engine.reply import NULL_ARRAY, ReplyMap, Status
from xstream.server.resp.codec import (
    PROTO_INLINE_MAX_SIZE,
    ProtocolError,
    RespParser,
    decode_reply,
    encode,
    encode_error,
)

pytestmark = pytest.mark.compat  # also applied by conftest to everything in this folder


def test_ping(redis_server: RedisServer) -> None:
    with redis_server.conn() as conn:
        assert conn.call("PING") == Status("PONG")
        assert conn.call("ECHO", b"\x00\r\n") == b"\x00\r\n"


def test_xadd_with_explicit_id_then_xrange(redis_server: RedisServer) -> None:
    redis_server.flushall()
    with redis_server.conn() as conn:
        assert conn.call("XADD", "s", "1-1", "f", "v", "g", b"") == b"1-1"
        assert conn.call("XADD", "s", 5, "f", 2) == b"5-0"
        assert conn.call("XRANGE", "s", "-", "+") == [
            [b"1-1", [b"f", b"v", b"g", b""]],
            [b"5-0", [b"f", b"2"]],
        ]
        assert conn.call("XLEN", "s") == 2


@pytest.mark.parametrize(
    ("setup", "command", "error"),
    [
        (
            [],
            ["XADD", "s", "0-0", "f", "v"],
            StreamError("The ID specified in XADD must be greater than 0-0"),
        ),
        ([["SET", "k", "v"]], ["XADD", "k", "*", "f", "v"], errors.wrong_type()),
        ([], ["XADD", "s", "*", "f"], errors.wrong_arity("xadd")),
        ([], ["XRANGE", "s", "x", "+"], errors.invalid_id()),
        (
            [["XADD", "s", "1-1", "f", "v"]],
            ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"],
            StreamError(
                "No such key 's' or consumer group 'g' in XREADGROUP with GROUP option", "NOGROUP"
            ),
        ),
    ],
)
def test_error_replies_are_stream_errors(
    redis_server: RedisServer, setup: list[list[str]], command: list[str], error: StreamError
) -> None:
    redis_server.flushall()
    with redis_server.conn() as conn:
        for step in setup:
            assert not isinstance(conn.call(*step), StreamError)
        reply = conn.call(*command)
    assert isinstance(reply, StreamError)
    assert (reply.prefix, reply.message) == (error.prefix, error.message)


def test_null_array_is_not_null_bulk(redis_server: RedisServer) -> None:
    redis_server.flushall()
    with redis_server.conn() as conn:
        conn.call("XADD", "k", "1-1", "a", "1")
        assert conn.call("XRANGE", "k", "-", "+", "COUNT", 0) is NULL_ARRAY
        assert conn.call("XADD", "nokey", "NOMKSTREAM", "*", "a", 1) is None
        assert conn.call_raw("XRANGE", "k", "-", "+", "COUNT", 0) == b"*-1\r\n"
        assert conn.call_raw("XADD", "nokey", "NOMKSTREAM", "*", "a", 1) == b"$-1\r\n"


def test_factory_applies_config(redis_factory: Callable[..., RedisServer]) -> None:
    server = redis_factory({"stream-node-max-bytes": 0}, stream_node_max_entries=7)
    assert server.call("CONFIG", "GET", "stream-node-max-bytes") == [b"stream-node-max-bytes", b"0"]
    assert server.call("CONFIG", "GET", "stream-node-max-entries") == [
        b"stream-node-max-entries",
        b"7",
    ]
    assert redis_factory(stream_node_max_entries=7, stream_node_max_bytes=0) is server


def test_resp3_replies(redis_server: RedisServer) -> None:
    redis_server.flushall()
    with redis_server.conn() as conn:
        hello = conn.call("HELLO", 3)
        assert isinstance(hello, ReplyMap)
        assert hello.get(b"proto") == 3
        assert conn.call("XADD", "s", "1-1", "f", "v") == b"1-1"
        assert conn.call("XADD", "nokey", "NOMKSTREAM", "*", "a", 1) is None
        info = conn.call("XINFO", "STREAM", "s")
        assert isinstance(info, ReplyMap)
        assert info.get(b"first-entry") == [b"1-1", [b"f", b"v"]]
        assert conn.call("XRANGE", "s", "-", "+", "COUNT", 0) is None  # RESP3 has one null


@pytest.mark.parametrize(
    "setup_and_command",
    [
        [["PING"]],
        [["XADD", "s", "1-1", "f", "v", "g", b"\x00\r\n"]],
        [
            ["XADD", "s", "1-1", "f", "v"],
            ["XADD", "s", "2-1", "f", b"x" * 3000],
            ["XRANGE", "s", "-", "+"],
        ],
        [["XADD", "s", "1-1", "f", "v"], ["XLEN", "s"]],
        [
            ["XADD", "s", "1-1", "f", "v"],
            ["XGROUP", "CREATE", "s", "g", "0"],
            ["XINFO", "GROUPS", "s"],
        ],
        [["XADD", "s", "1-1", "f", "v"], ["XINFO", "STREAM", "s"]],
        [["XRANGE", "s", "-", "+"]],
        [["XREAD", "STREAMS", "s", "0"]],
    ],
)
@pytest.mark.parametrize("proto", [2, 3])
def test_encode_reproduces_redis_bytes(
    redis_server: RedisServer, setup_and_command: list[list[bytes | str]], proto: int
) -> None:
    redis_server.flushall()
    with redis_server.conn() as conn:
        conn.call("HELLO", proto)
        for step in setup_and_command:
            raw = conn.call_raw(*step)
            reply = decode_reply(raw)
            expected = (
                encode_error(reply) if isinstance(reply, StreamError) else encode(reply, proto)
            )
            assert expected == raw, step


def test_encode_error_reproduces_redis_bytes(redis_server: RedisServer) -> None:
    with redis_server.conn() as conn:
        assert conn.call_raw("FOO", "a\r\nb") == encode_error(
            StreamError("unknown command 'FOO', with args beginning with: 'a\r\nb' ")
        )


MALFORMED_REQUESTS = [
    b"*01\r\n",
    b"*+1\r\n",
    b"*2147483648\r\n",
    b"*1\r\n$-1\r\n",
    b"*1\r\n$01\r\n",
    b"*1\r\n$536870913\r\n",
    b"*1\r\nx\r\n",
    b"*1\r\n\xff\r\n",
    b"*1\r\n\r\n",
    b'PING "a\r\n',
    b'ECHO "a"b\r\n',
    b"ECHO 'a\r\n",
    b"x" * (PROTO_INLINE_MAX_SIZE + 1),
    b"*" * (PROTO_INLINE_MAX_SIZE + 1),
    b"*1\r\n" + b"$" * (PROTO_INLINE_MAX_SIZE + 1),
]


@pytest.mark.parametrize("data", MALFORMED_REQUESTS, ids=lambda d: repr(d[:20]))
def test_protocol_errors_match_redis(redis_server: RedisServer, data: bytes) -> None:
    parser = RespParser()
    parser.feed(data)
    with pytest.raises(ProtocolError) as ours:
        parser.next_command()
    with redis_server.conn() as conn:
        conn.send_raw(data)
        theirs = conn.read_reply()
        with pytest.raises(ConnectionError):
            conn.read_reply()  # and the server hangs up
    assert isinstance(theirs, StreamError)
    assert encode_error(ours.value.error) == encode_error(theirs)


INLINE_REQUESTS = [
    b'ECHO "\\x41\\x4a\\n\\t\\\\\\"q"\r\n',
    b"ECHO 'a\\'b\\n'\n",
    b'ECHO ab"c d"\r\n',
    b"ECHO a\x0bb\r\n",
    b"   ECHO    x  \r\n",
    b'ECHO ""\r\n',
]


@pytest.mark.parametrize("line", INLINE_REQUESTS)
def test_inline_requests_split_like_redis(redis_server: RedisServer, line: bytes) -> None:
    parser = RespParser()
    parser.feed(line)
    argv = parser.next_command()
    assert argv is not None
    assert argv[0] == b"ECHO"
    with redis_server.conn() as conn:
        conn.send_raw(line)
        assert conn.read_reply() == argv[1]


def test_framing_quirks_match_redis(redis_server: RedisServer) -> None:
    data = b"*1\r\n$4\r\nPINGxx*2\rx$4\rxECHO\r\n$1\r\nz\r\n\r\n*0\r\n*-1\r\nPING\n"
    parser = RespParser()
    parser.feed(data)
    commands = []
    while (argv := parser.next_command()) is not None:
        commands.append(argv)
    assert commands == [[b"PING"], [b"ECHO", b"z"], [b"PING"]]
    with redis_server.conn() as conn:
        conn.send_raw(data)
        assert [conn.read_reply() for _ in commands] == [Status("PONG"), b"z", Status("PONG")]
        assert conn.call("PING") == Status("PONG")
