"""One RESP connection of a primary, in-process, through a fake transport: a lone plain write
is answered from `data_received` itself (the connection's task is not woken), and everything
else still goes through the task, in order: pipelines, MULTI, refusals, fsync=always.

The replies are the bytes the task's path gives (tests/integration/test_resp.py and
tests/compat/ compare those with redis-server over real sockets).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from xstream.engine import Engine
from xstream.node.acl import Acl
from xstream.node.backlog import Backlog
from xstream.node.base import Node
from xstream.node.stats import STATS
from xstream.node.store import Store
from xstream.primary.primary import Primary
from xstream.server.resp.server import RespConnection, RespServer


class Served:
    def __init__(self, node: Node) -> None:
        self.node = node

    @property
    def acl(self) -> Acl:
        return self.node.acl


class Transport:
    """Collects what the connection writes."""

    def __init__(self) -> None:
        self.written = b""
        self.closed = False

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        return

    def get_extra_info(self, name: str) -> Any:
        return ("127.0.0.1", 6379)

    def get_write_buffer_size(self) -> int:
        return 0

    def writelines(self, data: Iterable[bytes]) -> None:
        self.written += b"".join(data)

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True


def cmd(*words: str) -> bytes:
    return b"*%d\r\n" % len(words) + b"".join(
        b"$%d\r\n%s\r\n" % (len(w.encode()), w.encode()) for w in words
    )


Connect = Callable[[], tuple[RespConnection, Transport]]  # a new connection of the server
Test = Callable[[Primary, Connect], Awaitable[None]]


def run(tmp_path: Path, test: Test, fsync: str = "everysec") -> None:
    async def main() -> None:
        store = Store(tmp_path / "data", fsync)
        engine = Engine()
        store.recover(engine, engine.apply_record)
        primary = Primary(engine, store, Backlog(1 << 20), {"replid": "r" * 40}, "p")
        server = RespServer(Served(primary))
        conns: list[RespConnection] = []

        def connect() -> tuple[RespConnection, Transport]:
            conn, transport = RespConnection(server), Transport()
            conn.connection_made(transport)  # type: ignore[arg-type]
            conns.append(conn)
            return conn, transport

        try:
            await settle()  # the task of each connection made waits for input
            await test(primary, connect)
        finally:
            for conn in conns:
                conn.connection_lost(None)
            await settle()
            store.close()

    asyncio.run(main())


async def settle() -> None:
    """Let the loop run every ready callback and task a few times over."""
    for _ in range(10):
        await asyncio.sleep(0)


def test_a_lone_write_is_answered_from_data_received(tmp_path: Path) -> None:
    async def test(
        primary: Primary, connect: Callable[[], tuple[RespConnection, Transport]]
    ) -> None:
        conn, transport = connect()
        await settle()
        calls = STATS.calls["xadd"]
        conn.data_received(cmd("XADD", "s", "1-1", "f", "v"))
        assert transport.written == b"$3\r\n1-1\r\n"  # no turn of the loop in between
        conn.data_received(cmd("XADD", "s", "1-1", "f", "v"))
        assert transport.written.endswith(
            b"-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n"
        )
        assert STATS.calls["xadd"] == calls + 2
        assert STATS.failed["xadd"] >= 1
        assert primary.engine.execute([b"XLEN", b"s"]).reply == 1
        assert primary.offset == primary.store.written > 0  # logged

    run(tmp_path, test)


def test_a_command_split_across_reads_is_answered_once_whole(tmp_path: Path) -> None:
    async def test(
        primary: Primary, connect: Callable[[], tuple[RespConnection, Transport]]
    ) -> None:
        conn, transport = connect()
        await settle()
        whole = cmd("XADD", "s", "1-1", "f", "v")
        conn.data_received(whole[:7])
        await settle()
        assert transport.written == b""
        conn.data_received(whole[7:])
        assert transport.written == b"$3\r\n1-1\r\n"

    run(tmp_path, test)


def test_other_commands_go_through_the_task_in_order(tmp_path: Path) -> None:
    async def test(
        primary: Primary, connect: Callable[[], tuple[RespConnection, Transport]]
    ) -> None:
        conn, transport = connect()
        await settle()
        conn.data_received(cmd("PING"))
        assert transport.written == b""  # the task answers it
        await settle()
        assert transport.written == b"+PONG\r\n"
        # a pipeline: batched by the task, answered in order
        conn.data_received(
            cmd("XADD", "s", "1-1", "f", "v") + cmd("XADD", "s", "1-2", "f", "v") + cmd("XLEN", "s")
        )
        await settle()
        assert transport.written == b"+PONG\r\n$3\r\n1-1\r\n$3\r\n1-2\r\n:2\r\n"

    run(tmp_path, test)


def test_a_pipeline_s_writes_are_answered_at_once_and_the_rest_by_the_task(
    tmp_path: Path,
) -> None:
    async def test(primary: Primary, connect: Connect) -> None:
        conn, transport = connect()
        await settle()
        xadds = cmd("XADD", "s", "1-1", "f", "v") + cmd("XADD", "s", "1-2", "f", "v")
        conn.data_received(xadds + cmd("PING") + cmd("XADD", "s", "1-3", "f", "v"))
        assert transport.written == b"$3\r\n1-1\r\n$3\r\n1-2\r\n"  # one batch, one record
        assert primary.offset == primary.store.written
        records = primary.offset
        await settle()
        assert transport.written.endswith(b"$3\r\n1-2\r\n+PONG\r\n$3\r\n1-3\r\n")
        assert primary.offset > records
        # a lone write before another command: answered at once, the other by the task
        conn.data_received(cmd("XADD", "s", "1-4", "f", "v") + cmd("PING"))
        assert transport.written.endswith(b"$3\r\n1-3\r\n$3\r\n1-4\r\n")
        await settle()
        assert transport.written.endswith(b"$3\r\n1-4\r\n+PONG\r\n")
        assert primary.engine.execute([b"XLEN", b"s"]).reply == 4

    run(tmp_path, test)


def test_multi_and_watch_see_writes_answered_at_once(tmp_path: Path) -> None:
    async def test(
        primary: Primary, connect: Callable[[], tuple[RespConnection, Transport]]
    ) -> None:
        conn, transport = connect()
        other, _ = connect()
        await settle()
        for words in (("WATCH", "s"), ("MULTI",)):
            conn.data_received(cmd(*words))
            await settle()
        conn.data_received(cmd("XADD", "s", "1-1", "f", "v"))
        await settle()
        assert transport.written == b"+OK\r\n+OK\r\n+QUEUED\r\n"  # queued, not run
        other.data_received(cmd("XADD", "s", "5-5", "f", "v"))  # spoils the WATCH at once
        conn.data_received(cmd("EXEC"))
        await settle()
        assert transport.written.endswith(b"+QUEUED\r\n*-1\r\n")
        assert primary.engine.execute([b"XLEN", b"s"]).reply == 1

    run(tmp_path, test)


def test_a_refused_write_is_refused_by_the_task(tmp_path: Path) -> None:
    async def test(
        primary: Primary, connect: Callable[[], tuple[RespConnection, Transport]]
    ) -> None:
        conn, transport = connect()
        await settle()
        assert conn.session is not None
        conn.session.authenticated = False
        conn.data_received(cmd("XADD", "s", "1-1", "f", "v"))
        assert transport.written == b""
        await settle()
        assert transport.written.startswith(b"-NOAUTH ")
        assert primary.offset == 0

    run(tmp_path, test)


def test_fsync_always_waits_for_its_fsync_in_the_task(tmp_path: Path) -> None:
    async def test(
        primary: Primary, connect: Callable[[], tuple[RespConnection, Transport]]
    ) -> None:
        conn, transport = connect()
        await settle()
        conn.data_received(cmd("XADD", "s", "1-1", "f", "v"))
        assert transport.written == b""  # not before its fsync
        for _ in range(200):
            if transport.written:
                break
            await asyncio.sleep(0.01)
        assert transport.written == b"$3\r\n1-1\r\n"
        assert primary.store.synced >= primary.offset
        conn.data_received(cmd("XADD", "s", "1-2", "f", "v") + cmd("XADD", "s", "1-3", "f", "v"))
        assert transport.written == b"$3\r\n1-1\r\n"  # a batch neither
        for _ in range(200):
            if transport.written.endswith(b"1-3\r\n"):
                break
            await asyncio.sleep(0.01)
        assert transport.written == b"$3\r\n1-1\r\n$3\r\n1-2\r\n$3\r\n1-3\r\n"
        assert primary.store.synced >= primary.offset

    run(tmp_path, test, fsync="always")


def test_a_blocking_write_blocks_alone_or_pipelined(tmp_path: Path) -> None:
    """BLPOP is a write that may block: never answered at once, never batched (a batch
    answers a blocked command at once, as EXEC does)."""

    async def test(primary: Primary, connect: Connect) -> None:
        conn, transport = connect()
        other, _ = connect()
        await settle()
        conn.data_received(cmd("BLPOP", "q", "0"))
        await settle()
        assert transport.written == b""
        other.data_received(cmd("RPUSH", "q", "a"))
        await settle()
        assert transport.written == b"*2\r\n$1\r\nq\r\n$1\r\na\r\n"
        conn.data_received(cmd("XADD", "s", "1-1", "f", "v") + cmd("BLPOP", "q", "0"))
        await settle()
        assert transport.written.endswith(b"$3\r\n1-1\r\n")  # and BLPOP waits
        other.data_received(cmd("RPUSH", "q", "b"))
        await settle()
        assert transport.written.endswith(b"$3\r\n1-1\r\n*2\r\n$1\r\nq\r\n$1\r\nb\r\n")

    run(tmp_path, test)


def test_a_lapsed_lease_refuses_a_write_answered_at_once(tmp_path: Path) -> None:
    async def test(primary: Primary, connect: Connect) -> None:
        conn, transport = connect()
        await settle()
        primary.lease_until = time.monotonic() + 60
        conn.data_received(cmd("XADD", "s", "1-1", "f", "v"))
        assert transport.written == b"$3\r\n1-1\r\n"
        primary.lease_until = time.monotonic() - 1
        offset = primary.offset
        conn.data_received(cmd("XADD", "s", "1-2", "f", "v"))
        assert transport.written.startswith(b"$3\r\n1-1\r\n-READONLY ")
        assert b"without a valid lease" in transport.written
        assert primary.offset == offset  # nothing applied

    run(tmp_path, test)
