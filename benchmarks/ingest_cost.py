"""Where a `Client.xadd_many` call's time goes: the client's encoding, the primary's handler,
and the call over a real gRPC link, per entry.

Run by hand, never by the test suite:

    .venv/bin/python benchmarks/ingest_cost.py client    # encode + frame + IDs: CPU us/entry
    .venv/bin/python benchmarks/ingest_cost.py handler   # IngestOne on a lone Primary, in-process
    .venv/bin/python benchmarks/ingest_cost.py replica   # a replica's engine applying its records
    .venv/bin/python benchmarks/ingest_cost.py call      # a client process vs a primary process

The rows are what service_bench.py's `--ingest-build client` sends: dicts of three str fields
(`user_id` 12 digits, zero-padded; `action`; `amount`), `--batch` (1,000) to a call.

  client   the client process's own work for a batch, without the link: EncodedRows.of_dicts,
           the IngestBatch message's bytes (ingestrows.message), and the reply's IDs from the
           first one (engine.api.format_ids, as grpc_transport does).
  handler  the primary's work for a batch once gRPC has its bytes: the Ingest decoder
           (service.read_ingest, which the Decoding interceptor calls), the Streams servicer's
           IngestOne (edge checks, Primary.ingest_batch: the engine's
           xadd_flat, the log record, store.append), and the reply's SerializeToString; on the
           node's event loop (uvloop), its log in a temporary directory, fsync everysec, no
           replicas, a stand-in for gRPC's ServicerContext (no metadata, no certificate).
  replica  what a replica's engine does with each batch's record: records.decode_payload and
           Engine.apply_record (XAPPEND), records built first by another engine's xadd_flat.
           Under callgrind its records grow with -n: count only the applying, with
           --toggle-collect=CPyPy_engine___Engine___apply_record (and CPyPy_argvs___decode).
  call     `python -m xstream.cli primary` started on free ports (with --replicas replicas)
           and one Client doing xadd_many batch after batch, as service_bench's client does:
           wall time per call (and until the replicas acked everything), the client's CPU
           (process_time) and each node's (/proc, gRPC's threads included) per entry, from
           the first call to the replicas caught up. Wall times move with the machine's
           other load; the CPU figures less.

Instructions per entry (steadier than times on a shared machine): run `client` or `handler`
under callgrind with two values of -n and the same --warm, and divide the difference of the
totals by the difference of -n (start-up cancels out):

    for n in 20000 60000; do valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        .venv/bin/python benchmarks/ingest_cost.py handler -n $n --quiet 2>&1 | grep refs; done

XSTREAM_ENGINE chooses the builds as for the server (xstream/builds.py).
"""

from __future__ import annotations

import argparse
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc
from sides import cpu_seconds, free_port, wait_for

from xstream.client import Client
from xstream.client.ingestrows import EncodedRows, message
from xstream.engine import Engine
from xstream.engine.api import format_ids
from xstream.engine.ids import parse_strict
from xstream.node import records
from xstream.node.acl import Acl
from xstream.node.backlog import Backlog
from xstream.node.base import Node
from xstream.node.store import Store
from xstream.primary.primary import Primary
from xstream.server import loops
from xstream.server.service import StreamsService, read_ingest
from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc

KEY = b"events"
POOL = 10  # distinct calls built; more are these again


def rows(n: int, start: int = 0) -> list[dict[str, str]]:
    """service_bench's client rows: `n` dicts of three str fields (user_id as its user_ids:
    12 digits, zero-padded, redis-benchmark's -r 100000)."""
    rng = random.Random(start)
    return [
        {"user_id": f"{rng.randrange(100_000):012d}", "action": "click", "amount": "42"}
        for _ in range(n)
    ]


def batches(n: int, batch: int, start: int = 0) -> list[list[dict[str, str]]]:
    """`n` rows in calls of `batch`; over POOL calls, the same calls again (the same dicts),
    so what is built before the clock starts does not grow with `n` (callgrind's two runs)."""
    calls = -(-n // batch)
    data = rows(min(calls, POOL) * batch, start)
    pool = [data[i : i + batch] for i in range(0, len(data), batch)]
    return [pool[i % len(pool)] for i in range(calls)]


# -- client: the client process's own work -----------------------------------------------------


def client_side(calls: list[list[dict[str, str]]]) -> int:
    """What xadd_many does around its call: encode, frame, and the IDs of a made-up reply."""
    concern = pb.WriteConcern().SerializeToString()
    first = parse_strict(b"1795614258589-0")
    ids = 0
    for call in calls:
        encoded = EncodedRows.of_dicts(call, "utf-8", "strict")
        for i, chunk in enumerate(encoded.chunks):
            message(KEY, chunk, concern if i == 0 else None)
            ids += len(format_ids(first, chunk.rows))
    return ids


def run_client(args: argparse.Namespace) -> tuple[float, int]:
    client_side(batches(args.warm, args.batch))
    calls = batches(args.n, args.batch)
    t0 = time.process_time()
    done = client_side(calls)
    return time.process_time() - t0, done


# -- handler: the primary's work for one IngestOne ---------------------------------------------


class Served:
    """The node the servicer serves (host.Host's two properties)."""

    def __init__(self, node: Node) -> None:
        self._node = node

    @property
    def node(self) -> Node:
        return self._node

    @property
    def acl(self) -> Acl:
        return self._node.acl


class Context:
    """What the Streams servicer calls of a grpc.aio.ServicerContext: no metadata, no TLS."""

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return ()

    def auth_context(self) -> dict[str, list[bytes]]:
        return {}

    def set_trailing_metadata(self, metadata: Any) -> None:
        return

    def peer(self) -> str:
        return "ipv4:127.0.0.1:1"


def messages(calls: list[list[dict[str, str]]]) -> list[bytes]:
    """Each call's IngestBatch bytes (a call met again is not encoded again)."""
    concern = pb.WriteConcern().SerializeToString()
    done: dict[int, bytes] = {}
    for call in calls:
        if id(call) not in done:
            (chunk,) = EncodedRows.of_dicts(call, "utf-8", "strict").chunks
            done[id(call)] = message(KEY, chunk, concern)
    return [done[id(call)] for call in calls]


async def serve(service: StreamsService, wire: list[bytes]) -> int:
    context: Any = Context()
    entries = 0
    for data in wire:
        reply = await service.IngestOne(read_ingest(data), context)
        assert not reply.error, reply.error
        reply.SerializeToString()
        entries += reply.entries
    return entries


async def handler_run(data: Path, warm: list[bytes], wire: list[bytes]) -> tuple[float, int]:
    store = Store(data, "everysec")
    engine = Engine()
    store.recover(engine, engine.apply_record)
    primary = Primary(engine, store, Backlog(1 << 20), {"replid": "r" * 40}, "p")
    service = StreamsService(Served(primary))  # type: ignore[arg-type]
    await serve(service, warm)
    t0 = time.process_time()
    entries = await serve(service, wire)
    return time.process_time() - t0, entries


def run_handler(args: argparse.Namespace) -> tuple[float, int]:
    warm = messages(batches(args.warm, args.batch))
    wire = messages(batches(args.n, args.batch, args.warm))
    with tempfile.TemporaryDirectory(prefix="ingest-cost-") as d:
        return loops.run(handler_run(Path(d) / "data", warm, wire), args.event_loop)


# -- replica: a replica's engine applying the primary's records ------------------------------


def run_replica(args: argparse.Namespace) -> tuple[float, int]:
    """The records an Engine.xadd_flat per call logs (built first, by another engine), each
    decoded and applied (decode_payload, Engine.apply_record) as a replica's link does."""
    primary = Engine()
    payloads = []
    for call in messages(batches(args.warm + args.n, args.batch)):
        batch = pb.IngestBatch.FromString(call)
        result = primary.xadd_flat(KEY, batch.elements[:], list(batch.counts), 1)
        payloads.append(records.encode(result.effects)[records.HEADER.size :])
    replica = Engine()
    warm = -(-args.warm // args.batch)
    for payload in payloads[:warm]:
        replica.apply_record(records.decode_payload(payload))
    t0 = time.process_time()
    for payload in payloads[warm:]:
        replica.apply_record(records.decode_payload(payload))
    return time.process_time() - t0, args.n


# -- call: a client process against a primary process ------------------------------------------


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), 0.2):
            return True
    except OSError:
        return False


def info(port: int) -> pb.InfoReply:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        reply: pb.InfoReply = pb_grpc.AdminStub(ch).Info(pb.InfoRequest(), timeout=10)
        return reply


def caught_up(port: int, replicas: int) -> int | None:
    """The primary's offset once `replicas` replicas are online and have acked all of it."""
    reply = info(port)
    online = [r for r in reply.replicas if r.ack_offset == reply.offset]
    return reply.offset if len(online) >= replicas else None


def start(procs: list[subprocess.Popen[bytes]], argv: list[str], log: Path) -> int:
    with log.open("wb") as out:
        procs.append(subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT))
    return procs[-1].pid


def run_call(args: argparse.Namespace) -> None:
    procs: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="ingest-cost-") as d:
        tmp = Path(d)
        port = free_port()
        node = [sys.executable, "-m", "xstream.cli"]
        common = ["--fsync", "everysec", "--log-level", "warning",
                  "--event-loop", args.event_loop]  # fmt: skip
        pids = [start(procs, [*node, "primary", "--port", str(port), "--resp-port",
                              str(free_port()), "--data-dir", str(tmp / "p"), *common],
                      tmp / "p.log")]  # fmt: skip
        try:
            wait_for("the primary's gRPC port", lambda: listening(port))
            for i in range(args.replicas):
                pids.append(start(procs, [*node, "replica", "--port", str(free_port()),
                                          "--primary", f"127.0.0.1:{port}", "--resp-port",
                                          str(free_port()), "--data-dir", str(tmp / f"r{i}"),
                                          *common], tmp / f"r{i}.log"))  # fmt: skip
            client = Client("127.0.0.1", port)
            for call in batches(args.warm, args.batch):
                client.xadd_many(KEY, call)
            wait_for("the replicas", lambda: caught_up(port, args.replicas), 60, every=0.01)
            calls = batches(args.n, args.batch, args.warm)
            cpu = [cpu_seconds(pid) for pid in pids]
            client0, t0 = time.process_time(), time.monotonic()
            for call in calls:
                client.xadd_many(KEY, call)
            wall, client_cpu = time.monotonic() - t0, time.process_time() - client0
            wait_for("the replicas", lambda: caught_up(port, args.replicas), 300, every=0.005)
            all_wall = time.monotonic() - t0
            cpu = [cpu_seconds(pid) - c for pid, c in zip(pids, cpu, strict=True)]
            client.close()
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait()
    n = args.n
    us = ", ".join(f"{c / n * 1e6:.2f}" for c in cpu)
    print(f"{n} entries in calls of {args.batch}: {n / wall:,.0f} entries/s, "
          f"{wall / len(calls) * 1e3:.2f} ms a call", end="")  # fmt: skip
    if args.replicas:
        print(f"; {n / all_wall:,.0f} entries/s until {args.replicas} replicas caught up", end="")
    print(f"\nCPU us per entry: client {client_cpu / n * 1e6:.2f}; primary, replicas: {us}")


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "side", choices=("client", "handler", "replica", "call"), help="what is measured"
    )
    p.add_argument("-n", type=int, default=200_000, help="entries measured")
    p.add_argument("--warm", type=int, default=10_000, help="entries sent first, not measured")
    p.add_argument("--batch", type=int, default=1000, help="entries per xadd_many call")
    p.add_argument("--replicas", type=int, default=0, help="call: replicas of the primary")
    p.add_argument("--quiet", action="store_true", help="print nothing (under callgrind)")
    p.add_argument("--event-loop", default="auto", help="auto | uvloop | asyncio (as a node's)")
    args = p.parse_args()
    if args.batch > 4096:
        p.error("--batch: at most 4,096 (one IngestBatch message, as xadd_many sends)")
    if args.side == "call":
        run_call(args)
        return 0
    runs = {"client": run_client, "handler": run_handler, "replica": run_replica}
    spent, entries = runs[args.side](args)
    assert entries == args.n, entries
    if not args.quiet:
        from xstream.builds import ENGINE  # noqa: PLC0415

        print(f"engine: {ENGINE.build()}")
        print(f"{args.side}: {spent / args.n * 1e6:.3f} CPU us per entry ({args.n} entries)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
