"""The primary's own cost of one unary XADD through the RESP edge, in-process, without sockets.

Run by hand, never by the test suite:

    .venv/bin/python benchmarks/unary_cost.py                  # 20,000 XADDs: CPU us per XADD
    .venv/bin/python benchmarks/unary_cost.py -n 2000 --warm 200 --quiet   # under callgrind
    .venv/bin/python benchmarks/unary_cost.py --pipeline 16    # 16 XADDs per read (-P 16)

One RespConnection (xstream/server/resp/server.py) of a Primary (fsync everysec, no replicas,
its log in a temporary directory), on the loop a node runs (uvloop), is fed one
`XADD s * f v f v f v` at a time through `data_received`, as the event loop would after a
read; the next is fed, from a callback of the loop's as a read would be, once the reply is
written to the fake transport (with --pipeline P, P XADDs are fed in one read, as a
pipelining client's, and the next P once all P replies are written: the batch path,
Node.write_batch; -n still counts XADDs). So what is counted is the edge, the node floor,
the primary, the engine and the codec, plus the event loop's scheduling: of the connection's
task when it is woken (once per read, as over a socket) and of this driver's callback (once
per read, whatever the edge does); no kernel time but the log's write(2).

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
    """What RespConnection calls of its transport. Once a read's replies are all written, the
    next read is scheduled as the event loop would deliver it: a callback of its own
    (`call_soon`, as uvloop's read callback), whether the replies came from the connection's
    task or from `data_received` itself; after the last one, `finished` is resolved."""

    def __init__(self, conn: RespConnection, pipeline: int) -> None:
        self.conn = conn
        self.pipeline = pipeline  # XADDs per read
        self.replies = 0  # written in all
        self.left = 0  # XADDs still to send in this run
        self.wanted = 0  # `replies` once this read is answered
        self.finished: asyncio.Future[None] | None = None

    def run(self, n: int) -> asyncio.Future[None]:
        """Send `n` XADDs, `pipeline` to a read (the last read holds what is left)."""
        loop = asyncio.get_running_loop()
        self.finished = loop.create_future()
        self.left = n
        loop.call_soon(self.read)
        return self.finished

    def read(self) -> None:
        k = min(self.pipeline, self.left)
        self.left -= k
        self.wanted = self.replies + k
        self.conn.data_received(REQUEST * k)

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        return

    def get_extra_info(self, name: str) -> Any:
        return ("127.0.0.1", 6379)

    def get_write_buffer_size(self) -> int:
        return 0

    def writelines(self, data: Iterable[bytes]) -> None:
        for part in data:  # one reply, or a batch's joined (codec.encode_bulks)
            assert part.startswith(b"$"), part  # entry IDs
            self.replies += part.count(b"$")
        if self.replies < self.wanted:
            return
        assert self.finished is not None
        if self.left:
            asyncio.get_running_loop().call_soon(self.read)
        elif not self.finished.done():
            self.finished.set_result(None)

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        return

    def abort(self) -> None:
        return


async def run(data: Path, warm: int, n: int, pipeline: int = 1) -> tuple[float, int]:
    """(CPU seconds of the `n` measured XADDs, replies written in all)."""
    store = Store(data, "everysec")
    engine = Engine()
    store.recover(engine, engine.apply_record)
    primary = Primary(engine, store, Backlog(1 << 20), {"replid": "r" * 40}, "p")
    conn = RespConnection(RespServer(Served(primary)))
    transport = Transport(conn, pipeline)
    conn.connection_made(transport)  # type: ignore[arg-type]
    await transport.run(warm)
    t0 = time.process_time()
    await transport.run(n)
    spent = time.process_time() - t0
    conn.connection_lost(None)
    return spent, transport.replies


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-n", type=int, default=20_000, help="XADDs measured")
    p.add_argument("--warm", type=int, default=200, help="XADDs run first, not measured")
    p.add_argument("--quiet", action="store_true", help="print nothing (under callgrind)")
    p.add_argument("--event-loop", default="auto", help="auto | uvloop | asyncio (as a node's)")
    p.add_argument("--pipeline", type=int, default=1, help="XADDs per read (1: unary)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="unary-cost-") as d:
        main = run(Path(d) / "data", args.warm, args.n, args.pipeline)
        spent, replies = loops.run(main, args.event_loop)
    assert replies == args.warm + args.n, replies
    if not args.quiet:
        from xstream.builds import ENGINE, RESP_CODEC  # noqa: PLC0415

        print(f"engine: {ENGINE.build()}; RESP codec: {RESP_CODEC.build()}")
        per = spent / args.n * 1e6
        print(f"{args.n} XADDs, {args.pipeline} per read: {per:.2f} CPU us per XADD")
    return 0


if __name__ == "__main__":
    sys.exit(main())
