"""The primary's own cost of one unary XADD through the RESP edge, in-process, without sockets.

Run by hand, never by the test suite:

    .venv/bin/python benchmarks/unary_cost.py                  # 20,000 XADDs: CPU us per XADD
    .venv/bin/python benchmarks/unary_cost.py -n 2000 --warm 200 --quiet   # under callgrind

One RespConnection (xstream/server/resp/server.py) of a Primary (fsync everysec, no replicas,
its log in a temporary directory), on the loop a node runs (uvloop), is fed one
`XADD s * f v f v f v` at a time through `data_received`, as the event loop would after a
read; the next is fed once the reply is written to the fake transport. So what is counted is
the edge, the node floor, the primary, the engine and the codec, plus the event loop's
scheduling of the connection's task (one wake-up per request, as over a socket) and this
driver's own (one future per request); no kernel time but the log's write(2).

Instructions per XADD: run it under callgrind twice, with two values of -n and the same
--warm, and divide the difference of the totals by the difference of -n (start-up cancels
out):

    for n in 1000 3000; do valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        .venv/bin/python benchmarks/unary_cost.py -n $n --quiet 2>&1 | grep refs; done

XSTREAM_ENGINE chooses the builds as for the server (xstream/builds.py).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from xstream.engine import Engine
from xstream.node.acl import Acl
from xstream.node.backlog import Backlog
from xstream.node.base import Node
from xstream.node.store import Store
from xstream.primary.primary import Primary
from xstream.server import loops
from xstream.server.resp.server import RespConnection, RespServer

REQUEST = b"*9\r\n$4\r\nXADD\r\n$1\r\ns\r\n$1\r\n*\r\n" + b"".join(
    b"$%d\r\n%s\r\n" % (len(w), w)
    for w in (b"user_id", b"123456789012", b"action", b"click", b"amount", b"42")
)


class Served:
    """The node the edge serves (host.Host's two properties)."""

    def __init__(self, node: Node) -> None:
        self._node = node

    @property
    def node(self) -> Node:
        return self._node

    @property
    def acl(self) -> Acl:
        return self._node.acl


class Transport:
    """What RespConnection calls of its transport; a written reply resolves `replied`."""

    def __init__(self) -> None:
        self.replied: asyncio.Future[None] | None = None
        self.replies = 0

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        return

    def get_extra_info(self, name: str) -> Any:
        return ("127.0.0.1", 6379)

    def get_write_buffer_size(self) -> int:
        return 0

    def writelines(self, data: Iterable[bytes]) -> None:
        for reply in data:
            assert reply.startswith(b"$"), reply  # an entry ID
            self.replies += 1
        if self.replied is not None and not self.replied.done():
            self.replied.set_result(None)

    def close(self) -> None:
        return

    def abort(self) -> None:
        return


async def drive(conn: RespConnection, transport: Transport, n: int) -> None:
    loop = asyncio.get_running_loop()
    for _ in range(n):
        transport.replied = loop.create_future()
        conn.data_received(REQUEST)
        await transport.replied


async def run(data: Path, warm: int, n: int) -> tuple[float, int]:
    """(CPU seconds of the `n` measured XADDs, replies written in all)."""
    store = Store(data, "everysec")
    engine = Engine()
    store.recover(engine, engine.apply_record)
    primary = Primary(engine, store, Backlog(1 << 20), {"replid": "r" * 40}, "p")
    conn = RespConnection(RespServer(Served(primary)))
    transport = Transport()
    conn.connection_made(transport)  # type: ignore[arg-type]
    await drive(conn, transport, warm)
    t0 = time.process_time()
    await drive(conn, transport, n)
    spent = time.process_time() - t0
    conn.connection_lost(None)
    return spent, transport.replies


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-n", type=int, default=20_000, help="XADDs measured")
    p.add_argument("--warm", type=int, default=200, help="XADDs run first, not measured")
    p.add_argument("--quiet", action="store_true", help="print nothing (under callgrind)")
    p.add_argument("--event-loop", default="auto", help="auto | uvloop | asyncio (as a node's)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="unary-cost-") as d:
        main = run(Path(d) / "data", args.warm, args.n)
        spent, replies = loops.run(main, args.event_loop)
    assert replies == args.warm + args.n, replies
    if not args.quiet:
        from xstream.builds import ENGINE, RESP_CODEC  # noqa: PLC0415

        print(f"engine: {ENGINE.build()}; RESP codec: {RESP_CODEC.build()}")
        print(f"{args.n} XADDs: {spent / args.n * 1e6:.2f} CPU us per XADD")
    return 0


if __name__ == "__main__":
    sys.exit(main())
