"""The RESP port against redis-server, byte for byte: the same raw requests (inline and
multibulk, RESP2 and RESP3, protocol errors) sent to both, the bytes each sends back compared.

Each exchange runs on a fresh connection and ends with QUIT (or a protocol error), so both
servers close the connection and everything they sent is compared. HELLO's reply differs in
`version` (Redis 7.0.15 here, 8.8.0 for xstream) and `id`: it is compared field by field.
"""

from __future__ import annotations

import socket

import pytest
from redis_conn import RedisServer

from xstream.engine.reply import ReplyMap
from xstream.server.resp.codec import decode_reply


def exchange(port: int, data: bytes, timeout: float = 10.0) -> bytes:
    """Send `data` on a new connection; everything received until the server closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def _mb(*words: bytes) -> bytes:
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in words)


SESSIONS = {
    "inline": b'PING\r\nPING hello\r\nECHO "a b"\r\nXADD s 1-1 f v\r\nXADD s 1-1 f v\r\n'
    b"XRANGE s - +\r\nXLEN s\r\nXREAD STREAMS s 0\r\nXRANGE s - + COUNT 0\r\n"
    b"XREAD STREAMS s 99-0\r\nNOSUCH a b\r\nXADD\r\n\r\n   \r\nXLEN 's'\r\n",
    "multibulk": _mb(b"XADD", b"m", b"5-1", b"a", b"1", b"b", b"2")
    + _mb(b"XRANGE", b"m", b"-", b"+")
    + _mb(b"XREVRANGE", b"m", b"+", b"-", b"COUNT", b"1")
    + _mb(b"XDEL", b"m", b"5-1")
    + b"*0\r\n*-1\r\n"
    + _mb(b"PING")
    + _mb(b"ECHO", b"\x00\xff\r\n"),
    "connection": b"SELECT 0\r\nSELECT x\r\nSELECT 99\r\nSELECT -1\r\nCLIENT GETNAME\r\n"
    b'CLIENT SETNAME foo\r\nCLIENT GETNAME\r\nCLIENT SETNAME "a b"\r\nCLIENT SETNAME\r\n'
    b"CLIENT NO-EVICT maybe\r\nCLIENT NO-EVICT on\r\nCLIENT FOO\r\nCLIENT\r\n"
    b"CLIENT KILL 1.2.3.4:5\r\nCLIENT KILL ID 999999\r\nCLIENT KILL ID x\r\n"
    b"CLIENT KILL FOO bar\r\nHELLO 4\r\nHELLO x\r\nHELLO 3 FOO\r\nHELLO 3 AUTH u p\r\n"
    b'HELLO 2 SETNAME "a b"\r\nRESET\r\nCLIENT GETNAME\r\nPING a b\r\nECHO\r\n'
    b"COMMAND FOO\r\n",
    "multi": b"FLUSHALL\r\nMULTI\r\nXADD t 1-1 f v\r\nXADD t 1-1 f v\r\nXLEN t\r\nPING\r\n"
    b"ECHO x\r\n"
    b"MULTI\r\nWATCH t\r\nSET k v\r\nXREAD BLOCK 0 STREAMS t $\r\nEXEC\r\nEXEC\r\nDISCARD\r\n"
    b"XLEN t\r\nMULTI\r\nXADD t 2-1 f v\r\nDISCARD\r\nXLEN t\r\nWATCH\r\nUNWATCH x\r\n"
    b"UNWATCH\r\nMULTI x\r\nMULTI\r\nXLEN\r\nNOSUCH a\r\nXADD t 3-1 f v\r\nEXEC\r\nXLEN t\r\n"
    b"MULTI\r\nXADD t 4-1 f v\r\nEXEC x\r\nEXEC\r\nMULTI\r\nMULTI x\r\nEXEC\r\n"
    b"MULTI\r\nXGROUP CREATE t g $\r\nXGROUP FOO\r\nEXEC\r\nMULTI\r\nEXEC\r\n"
    b"WATCH t\r\nMULTI\r\nRESET\r\nEXEC\r\nMULTI\r\nPING a b\r\nDISCARD\r\nEXEC\r\n",
    "multi resp3": b"HELLO 3\r\nFLUSHALL\r\nMULTI\r\nXADD t 1-1 f v\r\n"
    b"XREAD BLOCK 0 STREAMS t $\r\nXRANGE t - +\r\nXADD t 0-1 f v\r\nEXEC\r\n",
    "resp3": b"HELLO 3\r\nXADD r 1-1 f v\r\nXREAD STREAMS r 0\r\nXRANGE r - + COUNT 0\r\n"
    b"XREAD STREAMS r 9-9\r\nCLIENT GETNAME\r\nXADD nokey NOMKSTREAM * a 1\r\n"
    b"SADD set3 m\r\nSMEMBERS set3\r\nSMEMBERS nokey\r\nRESET\r\nSMEMBERS set3\r\n"
    b"XREAD STREAMS r 0\r\n",
}

PROTOCOL_ERRORS = {
    "unbalanced": b'\xff\xfe garbage "unbalanced\r\nPING\r\n',
    "closing quote": b'ECHO "a"b\r\n',
    "expected $": b"*2\r\n$4\r\nPING\r\nxx\r\n",
    "bad bulk length": b"*1\r\n$-5\r\n",
    "huge bulk": b"*1\r\n$99999999999\r\n",
    "bad multibulk": b"*x\r\n",
    "huge multibulk": b"*99999999999999\r\n",
    "long inline": b"A" * 70000,
    "long count": b"*1\r\n$" + b"1" * 70000,
    "long mbulk count": b"*" + b"1" * 70000,
    "after commands": b"PING\r\n*1\r\n$4\r\nPING\r\n*1\r\nPING\r\n",
}


@pytest.mark.parametrize("name", list(SESSIONS))
def test_session_bytes(name: str, redis_server: RedisServer, xstream_port: int) -> None:
    redis_server.flushall()
    data = SESSIONS[name] + b"QUIT\r\n"
    want, got = exchange(redis_server.port, data), exchange(xstream_port, data)
    if name.endswith("resp3"):  # HELLO's own reply: compared field by field below
        want, got = _hello_checked(want), _hello_checked(got)
    assert got == want


# WATCH k, then another connection's command, then MULTI XLEN k EXEC: run or null (*-1, `_`)
WATCH_SPOILERS = {
    "xadd": b"XADD k 9-1 f v",
    "xadd other key": b"XADD other 9-1 f v",
    "xdel": b"XDEL k 1-1",
    "xdel none": b"XDEL k 7-7",
    "xtrim": b"XTRIM k MAXLEN 0",
    "xtrim none": b"XTRIM k MAXLEN 5",
    "del": b"DEL k",
    "set": b"SET k x",
    "flushall": b"FLUSHALL",
    "xgroup create": b"XGROUP CREATE k g2 $",
    "xgroup setid": b"XGROUP SETID k g 0",
    "xsetid": b"XSETID k 99-0",
    "xack": b"XACK k g 1-1",
    "xreadgroup": b"XREADGROUP GROUP g c STREAMS k >",
    "exec of another": b"MULTI\r\nXADD k 9-1 f v\r\nEXEC",
}


def _watch_session(port: int, spoiler: bytes, hello: bytes) -> bytes:
    exchange(port, b"FLUSHALL\r\nXADD k 1-1 f v\r\nXGROUP CREATE k g 0\r\nQUIT\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(hello + b"WATCH k\r\n")
        got = b""
        while not got.endswith(b"+OK\r\n"):
            got += s.recv(65536)
        exchange(port, spoiler + b"\r\nQUIT\r\n")
        s.sendall(b"MULTI\r\nXLEN k\r\nEXEC\r\nQUIT\r\n")
        while chunk := s.recv(65536):
            got += chunk
    return got


@pytest.mark.parametrize("name", list(WATCH_SPOILERS))
@pytest.mark.parametrize("proto", [2, 3])
def test_watch_bytes(name: str, proto: int, redis_server: RedisServer, xstream_port: int) -> None:
    hello = b"HELLO 3\r\n" if proto == 3 else b""
    spoiler = WATCH_SPOILERS[name]
    want = _watch_session(redis_server.port, spoiler, hello)
    got = _watch_session(xstream_port, spoiler, hello)
    if proto == 3:
        want, got = _hello_checked(want), _hello_checked(got)
    assert got == want


@pytest.mark.parametrize("name", list(PROTOCOL_ERRORS))
def test_protocol_error_bytes(name: str, redis_server: RedisServer, xstream_port: int) -> None:
    data = PROTOCOL_ERRORS[name]
    assert exchange(xstream_port, data) == exchange(redis_server.port, data)


def _hello_checked(raw: bytes) -> bytes:
    """`raw` without its leading HELLO 3 reply, once that reply has Redis's fields."""
    end = raw.index(b"$7\r\nmodules\r\n*0\r\n") + len(b"$7\r\nmodules\r\n*0\r\n")
    hello = decode_reply(raw[:end])
    assert isinstance(hello, ReplyMap)
    assert [k for k, _ in hello] == [b"server", b"version", b"proto", b"id", b"mode", b"role",
                                     b"modules"]  # fmt: skip
    assert (hello.get(b"server"), hello.get(b"proto"), hello.get(b"mode")) == (
        b"redis",
        3,
        b"standalone",
    )
    return raw[end:]
