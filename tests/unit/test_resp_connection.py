"""One RESP connection of a primary, in-process, through a fake transport: a lone plain write
is answered from `data_received` itself (the connection's task is not woken), a pipelined
batch at the end of the loop's turn with every other connection's batch of that turn (one
record; turn.py), and everything else still goes through the task, in order: pipelines,
MULTI, refusals, fsync=always.

The replies are the bytes the task's path gives (tests/integration/test_resp.py and
tests/compat/ compare those with redis-server over real sockets).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from xstream.engine import Engine, Result
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

    def is_closing(self) -> bool:
        return self.closed

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
        assert transport.written == b""  # held for the turn's end (turn.py)
        await asyncio.sleep(0)
        assert transport.written.startswith(b"$3\r\n1-1\r\n$3\r\n1-2\r\n")  # one record
        records = primary.offset
        assert records == primary.store.written > 0
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


def counted_records(primary: Primary) -> list[int]:
    """The number of effects of each record the primary commits from now on."""
    seen: list[int] = []
    commit = primary.commit

    def counting(result: Result) -> None:
        if result.effects:
            seen.append(len(result.effects))
        commit(result)

    primary.commit = counting  # type: ignore[method-assign]
    return seen


def xadds(key: str, *ids: str) -> bytes:
    return b"".join(cmd("XADD", key, i, "f", "v") for i in ids)


def test_batches_read_in_one_turn_are_one_record(tmp_path: Path) -> None:
    async def test(primary: Primary, connect: Connect) -> None:
        (a, ta), (b, tb), (c, tc) = connect(), connect(), connect()
        await settle()
        records = counted_records(primary)
        a.data_received(xadds("s", "1-1", "1-2"))
        b.data_received(xadds("t", "2-1", "2-2", "2-3") + cmd("XLEN", "t"))
        c.data_received(xadds("s", "1-1", "1-3"))  # its first fails alone: s is at 1-2 by then
        assert ta.written == tb.written == tc.written == b""
        await asyncio.sleep(0)  # the turn's end
        assert len(records) == 1  # one record: a's batch, b's, then c's, in that order
        assert ta.written == b"$3\r\n1-1\r\n$3\r\n1-2\r\n"
        assert tb.written == b"$3\r\n2-1\r\n$3\r\n2-2\r\n$3\r\n2-3\r\n"
        assert tc.written.startswith(b"-ERR The ID specified in XADD is equal or smaller")
        assert tc.written.endswith(b"\r\n$3\r\n1-3\r\n")
        await settle()
        assert tb.written.endswith(b":3\r\n")  # what followed its batch, by its task
        assert primary.engine.execute([b"XRANGE", b"s", b"-", b"+"]).reply == [
            [b"1-1", [b"f", b"v"]],
            [b"1-2", [b"f", b"v"]],
            [b"1-3", [b"f", b"v"]],
        ]

    run(tmp_path, test)


def test_a_turn_s_batches_of_other_databases_are_other_records(tmp_path: Path) -> None:
    async def test(primary: Primary, connect: Connect) -> None:
        (a, ta), (b, tb) = connect(), connect()
        await settle()
        b.data_received(cmd("SELECT", "1"))
        await settle()
        records = counted_records(primary)
        a.data_received(xadds("s", "1-1", "1-2"))
        b.data_received(xadds("s", "2-1", "2-2"))
        await asyncio.sleep(0)
        assert len(records) == 2
        assert ta.written == b"$3\r\n1-1\r\n$3\r\n1-2\r\n"
        assert tb.written == b"+OK\r\n$3\r\n2-1\r\n$3\r\n2-2\r\n"
        assert primary.engine.execute([b"XLEN", b"s"], db=1).reply == 2

    run(tmp_path, test)


def test_a_batch_of_a_connection_gone_before_the_turn_s_end_never_runs(tmp_path: Path) -> None:
    async def test(primary: Primary, connect: Connect) -> None:
        (a, ta), (b, tb) = connect(), connect()
        await settle()
        a.data_received(xadds("s", "1-1", "1-2"))
        b.data_received(xadds("s", "2-1", "2-2"))
        a.connection_lost(None)
        await settle()
        assert ta.written == b""
        assert tb.written == b"$3\r\n2-1\r\n$3\r\n2-2\r\n"
        assert primary.engine.execute([b"XLEN", b"s"]).reply == 2

    run(tmp_path, test)


def test_a_batch_held_across_a_change_of_users_goes_back_to_its_task(tmp_path: Path) -> None:
    async def test(primary: Primary, connect: Connect) -> None:
        conn, transport = connect()
        await settle()
        records = counted_records(primary)
        conn.data_received(xadds("s", "1-1", "1-2"))
        primary.acl.users = dict(primary.acl.users)  # what any ACL change does: a new dict
        await settle()
        assert transport.written == b"$3\r\n1-1\r\n$3\r\n1-2\r\n"
        assert len(records) == 2  # checked and run command by command by the task

    run(tmp_path, test)


def test_a_batch_held_while_the_node_stops_taking_writes_at_once_goes_to_its_task(
    tmp_path: Path,
) -> None:
    async def test(primary: Primary, connect: Connect) -> None:
        conn, transport = connect()
        await settle()
        records = counted_records(primary)
        conn.data_received(xadds("s", "1-1", "1-2") + cmd("PING"))
        primary.takes_writes_now = lambda: False  # type: ignore[method-assign]
        await settle()
        assert transport.written == b"$3\r\n1-1\r\n$3\r\n1-2\r\n+PONG\r\n"
        assert len(records) == 2  # checked and run command by command by the task

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
