"""Server commands against redis-server: CONFIG GET/SET replies and errors byte for byte,
TIME's and LASTSAVE's shapes, INFO's section headers and the fields tools read.

redis-server here is 7.0.15: it has no stream-idmp-* parameters and no WAITAOF (7.2), so
those are checked on xstream alone (tests/integration/test_resp_server_cmds.py).
"""

from __future__ import annotations

import socket
import time

import pytest
from redis_conn import RedisServer

from xstream.server.resp.codec import decode_reply


def exchange(port: int, data: bytes, timeout: float = 10.0) -> bytes:
    """Send `data` then QUIT on a new connection; everything received until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data + b"QUIT\r\n")
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def one(port: int, line: bytes) -> object:
    """The decoded reply to one inline command."""
    raw = exchange(port, line + b"\r\n")
    return decode_reply(raw[: -len(b"+OK\r\n")])


CONFIG_SESSION = (
    b"CONFIG GET stream-node-max-entries\r\n"
    b"CONFIG GET STREAM-NODE-MAX-BYTES\r\n"
    b"CONFIG GET nosuchparameter\r\n"
    b"CONFIG SET stream-node-max-entries 7\r\n"
    b"CONFIG GET stream-node-max-entries\r\n"
    b"CONFIG SET stream-node-max-bytes 4kb\r\n"
    b"CONFIG GET stream-node-max-bytes\r\n"
    b"CONFIG SET stream-node-max-entries x\r\n"
    b"CONFIG SET stream-node-max-entries -1\r\n"
    b"CONFIG SET stream-node-max-bytes 1xb\r\n"
    b"CONFIG SET stream-node-max-bytes -1\r\n"
    b"CONFIG SET stream-node-max-entries 5 stream-node-max-entries 6\r\n"
    b"CONFIG SET stream-node-max-entries 5 nosuchparameter 6\r\n"
    b"CONFIG SET nosuchparameter 1\r\n"
    b"CONFIG SET stream-node-max-entries\r\n"
    b"CONFIG SET stream-node-max-entries 5 stream-node-max-bytes\r\n"
    b"CONFIG GET\r\n"
    b"CONFIG\r\n"
    b"CONFIG FOO\r\n"
    b"CONFIG SET appendonly maybe\r\n"
    b"CONFIG SET maxmemory lots\r\n"
    b'CONFIG SET save ""\r\n'
    b"CONFIG GET save\r\n"
    b"CONFIG SET stream-node-max-entries 100 stream-node-max-bytes 4096\r\n"
    b"CONFIG GET stream-node-max-entries\r\n"
    b"CONFIG RESETSTAT\r\n"
    b"CONFIG RESETSTAT x\r\n"
    b"FUNCTION FLUSH\r\nSCRIPT FLUSH\r\nFUNCTION FLUSH SYNC\r\nSCRIPT FLUSH ASYNC\r\n"
    b"TIME x\r\nLASTSAVE x\r\n"
)


def test_config_bytes(redis_server: RedisServer, xstream_port: int) -> None:
    assert exchange(xstream_port, CONFIG_SESSION) == exchange(redis_server.port, CONFIG_SESSION)


BACKLOG_SESSION = (
    b"CONFIG GET repl-backlog-size\r\n"
    b"CONFIG SET repl-backlog-size 100\r\n"
    b"CONFIG GET repl-backlog-size\r\n"
    b"CONFIG SET repl-backlog-size 0\r\n"
    b"CONFIG SET repl-backlog-size abc\r\n"
    b"CONFIG SET repl-backlog-size -5\r\n"
    b"CONFIG SET repl-backlog-size 2mb\r\n"
    b"CONFIG GET repl-backlog-size\r\n"
    b"CONFIG SET repl-backlog-size 1mb\r\n"
)


def test_config_repl_backlog_size_is_the_backlog(
    redis_server: RedisServer, xstream_port: int
) -> None:
    """The default (1 MiB) and the changes of both, 16 KiB at least, errors byte for byte."""
    assert exchange(xstream_port, BACKLOG_SESSION) == exchange(redis_server.port, BACKLOG_SESSION)


def test_config_get_several_patterns(redis_server: RedisServer, xstream_port: int) -> None:
    """Several patterns at once (Redis 7), each parameter once, in any order."""
    line = b"CONFIG GET stream-node-* stream-node-max-bytes maxmemory *-policy"
    got, want = one(xstream_port, line), one(redis_server.port, line)
    assert isinstance(got, list) and isinstance(want, list)
    assert dict(zip(got[::2], got[1::2], strict=True)) == dict(
        zip(want[::2], want[1::2], strict=True)
    )


def test_config_get_star_has_what_the_harness_restores(
    redis_server: RedisServer, xstream_port: int
) -> None:
    got = one(xstream_port, b"CONFIG GET *")
    assert isinstance(got, list)
    names = set(got[::2])
    harness = b"appendonly save port appendfsync stream-node-max-bytes stream-node-max-entries"
    harness += b" stream-idmp-duration stream-idmp-maxsize"
    assert [n for n in harness.split() if n not in names] == []
    theirs = one(redis_server.port, b"CONFIG GET *")
    assert isinstance(theirs, list)
    # Beside Redis's: the 8.8 stream settings Redis 7 lacks, and xstream's own flow-control
    # window (primary/flow.py), a primary's.
    ours = {b"stream-idmp-duration", b"stream-idmp-maxsize"}
    ours |= {b"repl-flow-lag-ms", b"repl-flow-timeout-ms"}
    assert names - ours <= set(theirs[::2])


def test_time_and_lastsave_shapes(redis_server: RedisServer, xstream_port: int) -> None:
    for port in (redis_server.port, xstream_port):
        now = one(port, b"TIME")
        assert isinstance(now, list) and len(now) == 2
        assert all(isinstance(x, bytes) and x.isdigit() for x in now)
        assert abs(int(now[0]) - time.time()) < 5 and int(now[1]) < 1_000_000
        assert isinstance(one(port, b"LASTSAVE"), int)


FIELDS = [
    "redis_version", "redis_mode", "os", "arch_bits", "process_id", "run_id", "tcp_port",
    "uptime_in_seconds", "connected_clients", "blocked_clients", "used_memory",
    "used_memory_human", "maxmemory",
    "loading", "rdb_changes_since_last_save", "rdb_bgsave_in_progress", "rdb_last_save_time",
    "aof_enabled", "aof_rewrite_in_progress", "total_connections_received",
    "total_commands_processed", "total_error_replies", "role", "connected_slaves",
    "master_repl_offset", "used_cpu_sys", "cluster_enabled",
]  # fmt: skip


def _sections(text: bytes) -> tuple[list[str], dict[str, str]]:
    headers, fields = [], {}
    for line in text.decode().split("\r\n"):
        if line.startswith("# "):
            headers.append(line[2:])
        elif ":" in line:
            k, _, v = line.partition(":")
            fields[k] = v
    return headers, fields


@pytest.mark.parametrize("asked", [b"INFO", b"INFO default", b"INFO server clients", b"INFO x"])
def test_info_headers_and_fields(
    asked: bytes, redis_server: RedisServer, xstream_port: int
) -> None:
    for port in (redis_server.port, xstream_port):  # one error each: errorstats has a line
        exchange(port, b"NOSUCHCOMMAND\r\n")
    got, want = one(xstream_port, asked), one(redis_server.port, asked)
    assert isinstance(got, bytes) and isinstance(want, bytes)
    (ours, our_fields), (theirs, their_fields) = _sections(got), _sections(want)
    assert ours == theirs
    if asked == b"INFO":
        assert [f for f in FIELDS if f in their_fields] == FIELDS
        assert [f for f in FIELDS if f not in our_fields] == []
        assert "total_blocking_keys_on_nokey" in our_fields  # Redis 7.2's
        assert our_fields["errorstat_ERR"].startswith("count=")
        assert their_fields["errorstat_ERR"].startswith("count=")
