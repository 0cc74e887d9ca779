"""The replicated service vs a real redis-server: ingest, unary XADD, XRANGE, lag, full resync.

Run by hand, never by the test suite:

    .venv/bin/python benchmarks/service_bench.py            # 1,000,000 entries (a few minutes)
    .venv/bin/python benchmarks/service_bench.py --quick    # 100,000 entries, shorter timings
    .venv/bin/python benchmarks/service_bench.py --ingest-configs 4000x1,16000x2

Every process is started by this script on free loopback ports, with data in a temporary
directory, and stopped (process group SIGTERM, then SIGKILL) before it exits:

  xstream   `xstream primary --expect-replicas 2` and two `xstream replica`s (gRPC), every node
            with `--fsync everysec` (--fsync); a third replica for the resync measure
  redis     redis-server (appendonly yes, appendfsync everysec: the same durability as
            xstream's log; --redis-no-aof turns it off) with one `--replicaof` replica, and a
            second one for the resync measure; repl-diskless-sync-delay 0 on the primary (the
            default 5 s wait for more replicas would otherwise dominate its resync time)

The same stream is loaded on both: `mystream`, entries {user_id: 12 random digits,
action: click, amount: 42} (redis-benchmark's `__rand_int__` with -r 100000).

Measures:

  1. Batched ingest with the replicas attached. xstream: client processes (spawned before the
     clock starts) stream `Streams.Ingest` batches of B entries until N entries are in; the
     IngestBatch messages are prebuilt and serialized outside the timed loop (the point is
     server throughput; --ingest-build inline builds them inside it; --ingest-build client
     calls `Client.xadd_many(key, dicts)` per batch, as a Python user would). Reported: entries/s
     until every replica's ack_offset (the primary's Info) reached the primary's final offset,
     and until the primary acked the last Ingest call; each node's CPU per entry (user +
     system from /proc, go -> caught up: the primary's, then each replica's). Each `BxC` of
     --ingest-configs (batch x client processes) runs on a fresh cluster; the best is the
     headline.
     redis: `redis-benchmark -P 64 -n N -r 100000 XADD mystream * ...` (50 connections) with
     one replica attached; its requests per second (the primary acked), and N / the time until
     the replica's own offset (slave_repl_offset) equals the primary's master_repl_offset.
  2. Unary XADD, one client, one call at a time. xstream: the raw sync gRPC stub
     `Streams.Execute(Command)` with a prebuilt message (headline), and `Client.xadd`;
     redis: `redis-benchmark -c 1 -P 1 XADD`, and redis-py's `xadd`.
  3. XRANGE COUNT 100, one client, paging through the whole stream (`(last-id` as the next
     start): xstream `Client.xrange` vs redis-py `xrange` (the same loop, headline), the raw
     stub vs `redis-benchmark -c 1 XRANGE mystream - + COUNT 100`, and from a replica
     (`Client(read_from="replica")`).
  4. Replica lag under the ingest of measure 1, read alike on both sides (sides.py's
     OffsetSampler): every --lag-interval a thread reads the primary's offset, then each
     replica's applied offset, with the same request and client on both sides (redis-py's
     INFO replication on each node's RESP port: master_repl_offset / slave_repl_offset);
     an offset's lag is the time from the primary being read at it to the worse replica
     being read at or past it; p50 / p99 of those. (Read over gRPC's Admin.Info instead,
     xstream's polls each waited on the gRPC poller thread as well as on the busy loop:
     half the rounds in a run, and a coarser lag.)
     Beside it, the xstream replicas' own Info apply_lag_p50_ms / p99 (primary commit ->
     applied, over their last 10k applies) and the primary's Info replicas[].lag_ms.
  5. Full resync: a fresh replica against a primary holding the N entries (the unary XADDs
     of measure 2 went to another key, deleted since), from spawning the process until its
     offset equals the primary's (xstream: full_syncs incremented; redis: master_link_status
     up). xstream's in-process part (replica_ready -> full_sync_done, from its log) is shown
     beside it.

--measures picks which of 2, 3 and 5 run (1 and 4 always do). All processes (servers,
replicas, clients, redis-benchmark) share this machine's cores: see
the nproc line at the top of the output. Ratios are xstream / redis: above 1 is better for
rates, below 1 is better for times.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import queue
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import redis
from redis.typing import EncodableT, FieldT
from sides import (
    OffsetSampler,
    Proc,
    Procs,
    Row,
    Target,
    cpu_seconds,
    free_port,
    machine,
    print_table,
    ratio_at_least,
    ratio_at_most,
    wait_for,
)

from xstream.client import Client
from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc

KEY = b"mystream"
UNARY_KEY = b"unary"
RAND_RANGE = 100_000  # redis-benchmark -r
MAX_MESSAGE = 256 << 20
GRPC_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_MESSAGE),
    ("grpc.max_send_message_length", MAX_MESSAGE),
]
# The channels that watch a node start: gRPC waits ~1 s (initial_reconnect_backoff, +-20%)
# before dialling again a port that refused it, so a channel made before the node listens
# would see it answer up to a second late (measure 5's replica read as synced ~0.6 s after
# it was); redis-py dials again at every poll. Polls every 10 ms want a dial every 10 ms.
WATCH_OPTIONS = [
    *GRPC_OPTIONS,
    ("grpc.initial_reconnect_backoff_ms", 10),
    ("grpc.min_reconnect_backoff_ms", 10),
    ("grpc.max_reconnect_backoff_ms", 100),
]
UNARY_FIELDS = [b"user_id", b"000000012345", b"action", b"click", b"amount", b"42"]
UNARY_ENTRY: dict[FieldT, EncodableT] = dict(
    zip(UNARY_FIELDS[::2], UNARY_FIELDS[1::2], strict=True)
)
T0 = time.monotonic()


def progress(msg: str) -> None:
    print(f"[{time.monotonic() - T0:7.1f}s] {msg}", flush=True)


# -- xstream nodes (their processes: sides.Procs) ----------------------------------------------


def xstream_argv() -> list[str]:
    exe = Path(sys.executable).with_name("xstream")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "xstream.cli"]


@dataclass
class XNode:
    proc: Proc
    port: int
    data_dir: Path
    resp_port: int  # its RESP port (the lag's polls read INFO there, as off a redis-server)
    channel: grpc.Channel = field(init=False)

    def __post_init__(self) -> None:
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.port}", options=WATCH_OPTIONS)
        self.admin = pb_grpc.AdminStub(self.channel)
        self.streams = pb_grpc.StreamsStub(self.channel)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def info(self) -> pb.InfoReply:
        reply: pb.InfoReply = self.admin.Info(pb.InfoRequest(), timeout=10)
        return reply

    def try_info(self) -> pb.InfoReply | None:
        try:
            return self.info()
        except grpc.RpcError:
            return None

    def execute(self, *argv: bytes) -> pb.Reply:
        reply: pb.Reply = self.streams.Execute(pb.Command(argv=list(argv)), timeout=60)
        return reply

    def close(self) -> None:
        self.channel.close()


class XCluster:
    """An xstream primary and its replicas, started through the CLI."""

    def __init__(self, procs: Procs, workdir: Path, tag: str, args: argparse.Namespace) -> None:
        self.procs = procs
        self.workdir = workdir
        self.tag = tag
        self.args = args
        self.primary: XNode | None = None
        self.replicas: list[XNode] = []

    def start_primary(self, expect_replicas: int) -> XNode:
        extra = ["--expect-replicas", str(expect_replicas)]
        if self.args.backlog_bytes:
            extra += ["--backlog-bytes", str(self.args.backlog_bytes)]
        node = self._spawn("primary", "primary", extra)
        self._wait_ready(node)
        self.primary = node
        return node

    def spawn_replica(self, name: str) -> XNode:
        assert self.primary is not None
        node = self._spawn("replica", name, ["--primary", self.primary.address])
        self.replicas.append(node)
        return node

    def _spawn(self, role: str, name: str, extra: list[str]) -> XNode:
        """`xstream <role>` on a free port, its data in <workdir>/<tag>-<name>."""
        port, resp, d = free_port(), free_port(), self.workdir / f"{self.tag}-{name}"
        argv = [*xstream_argv(), role, "--port", str(port), "--data-dir", str(d),
                "--resp-port", str(resp), "--fsync", self.args.fsync, *extra]  # fmt: skip
        return XNode(self.procs.start(f"{self.tag}-{name}", argv), port, d, resp)

    def _wait_ready(self, node: XNode) -> pb.InfoReply:
        def ready() -> pb.InfoReply | None:
            self.procs.check_alive(node.proc)
            return node.try_info()

        return wait_for(f"{node.proc.name} to answer Admin.Info", ready, 60)

    def wait_in_sync(self, timeout: float = 600) -> pb.InfoReply:
        """Every replica online and acked up to the primary's offset."""
        assert self.primary is not None
        want = len(self.replicas)

        def synced() -> pb.InfoReply | None:
            for n in [self.primary, *self.replicas]:
                assert n is not None
                self.procs.check_alive(n.proc)
            info = self.primary.info()  # type: ignore[union-attr]
            online = [r for r in info.replicas if r.state == "online"]
            if len(online) == want and all(r.ack_offset == info.offset for r in online):
                return info
            return None

        return wait_for("the replicas to attach and catch up", synced, timeout)

    def close(self) -> None:
        for n in [self.primary, *self.replicas]:
            if n is not None:
                n.close()
                self.procs.stop(n.proc)
        self.primary, self.replicas = None, []


# -- redis nodes -------------------------------------------------------------------------------


@dataclass
class RNode:
    proc: Proc
    port: int
    client: redis.Redis


def start_redis(
    procs: Procs, workdir: Path, name: str, args: argparse.Namespace, replicaof: int | None = None
) -> RNode:
    port = free_port()
    d = workdir / name
    d.mkdir(parents=True, exist_ok=True)
    argv = [
        args.redis_server,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        str(d),
        "--save",
        "",
        "--daemonize",
        "no",
        "--repl-diskless-sync-delay",
        str(args.redis_diskless_sync_delay),
    ]
    if args.redis_no_aof:
        argv += ["--appendonly", "no"]
    else:
        argv += ["--appendonly", "yes", "--appendfsync", args.fsync]
    if replicaof is not None:
        argv += ["--replicaof", "127.0.0.1", str(replicaof)]
    proc = procs.start(name, argv)
    client = redis.Redis(port=port, protocol=2)

    def ping() -> bool | None:
        procs.check_alive(proc)
        try:
            return bool(client.ping()) or None
        except redis.ConnectionError:
            return None

    wait_for(f"{name} to answer PING", ping, 30, every=0.02)
    return RNode(proc, port, client)


def stop_redis(procs: Procs, node: RNode) -> None:
    """redis-server refuses SIGTERM while it writes its first AOF (after a full sync): wait
    for any AOF rewrite to finish first."""

    def idle() -> bool | None:
        try:
            info = node.client.info("persistence")
        except redis.RedisError:
            return True
        busy = info.get("aof_rewrite_in_progress") or info.get("aof_rewrite_scheduled")
        return None if busy else True

    try:
        wait_for("redis AOF rewrite", idle, 30, every=0.02)
    finally:
        node.client.close()
        procs.stop(node.proc)


def redis_offsets(primary: RNode, replica: RNode) -> tuple[int, int, str]:
    """(primary master_repl_offset, replica slave_repl_offset, replica master_link_status)."""
    p = primary.client.info("replication")
    try:
        r = replica.client.info("replication")
    except redis.ConnectionError:
        return p["master_repl_offset"], -1, "down"
    return p["master_repl_offset"], int(r.get("slave_repl_offset", -1)), r["master_link_status"]


def redis_caught_up(primary: RNode, replica: RNode) -> bool | None:
    p_off, r_off, link = redis_offsets(primary, replica)
    return True if link == "up" and r_off == p_off else None


def redis_benchmark(args: argparse.Namespace, port: int, *words: str) -> tuple[float, str]:
    """Run redis-benchmark -q; (its requests per second, the command line)."""
    argv = [args.redis_benchmark, "-h", "127.0.0.1", "-p", str(port), "-q", *words]
    cmd = " ".join(a if a != "*" else "'*'" for a in argv)
    out = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=True).stdout
    found = re.findall(r"([\d.]+) requests per second", out)
    if not found:
        raise RuntimeError(f"no 'requests per second' in redis-benchmark output:\n{out[-1000:]}")
    return float(found[-1]), cmd


# -- results -----------------------------------------------------------------------------------


def show(row: Row) -> Row:
    measure, mine, theirs, ratio, *_ = row.cells()
    progress(f"  => {measure}: xstream {mine}, redis {theirs}, ratio {ratio}")
    return row


# -- measure 1: batched ingest -----------------------------------------------------------------


def user_ids(n: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    return [b"%012d" % rng.randrange(RAND_RANGE) for _ in range(n)]


def batch_message(key: bytes, uids: Sequence[bytes]) -> pb.IngestBatch:
    elements: list[bytes] = []
    for u in uids:
        elements += (b"user_id", u, b"action", b"click", b"amount", b"42")
    return pb.IngestBatch(key=key, counts=[6] * len(uids), elements=elements)


def ingest_child(
    port: int,
    key: bytes,
    n: int,
    batch: int,
    seed: int,
    build: str,
    ready: Any,
    go: Any,
    results: Any,
) -> None:
    """One ingest client process: build its batches, report ready, wait for `go`, stream."""
    if build == "client":
        client_ingest_child(port, key, n, batch, seed, ready, go, results)
        return
    try:
        uids = user_ids(n, seed)
        requests: Any
        if build == "prebuilt":  # serialized outside the timed loop
            msgs = [
                batch_message(key, uids[i : i + batch]).SerializeToString()
                for i in range(0, n, batch)
            ]
            serializer = None
        else:
            msgs = None
            serializer = pb.IngestBatch.SerializeToString
        channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=GRPC_OPTIONS)
        grpc.channel_ready_future(channel).result(timeout=30)
        ingest = channel.stream_unary(
            "/xstream.v1.Streams/Ingest",
            request_serializer=serializer,
            response_deserializer=pb.IngestReply.FromString,
        )
        ready.put(os.getpid())
        go.wait()
        t0, cpu0 = time.monotonic(), time.process_time()
        if msgs is not None:
            requests = iter(msgs)
        else:
            requests = (batch_message(key, uids[i : i + batch]) for i in range(0, n, batch))
        reply = ingest(requests, timeout=900)
        t1, cpu = time.monotonic(), time.process_time() - cpu0
        results.put(
            {
                "t0": t0,
                "t1": t1,
                "cpu": cpu,
                "entries": reply.entries,
                "batches": reply.batches,
                "offset": reply.offset,
                "error": reply.error,
            }
        )
        channel.close()
    except Exception as e:  # reported to the parent
        results.put({"error": f"{type(e).__name__}: {e}"})


def client_ingest_child(
    port: int, key: bytes, n: int, batch: int, seed: int, ready: Any, go: Any, results: Any
) -> None:
    """`--ingest-build client`: what a Python user writes, `Client.xadd_many(key, rows)` with
    `batch` dicts of str at a time, one call after the other; the dicts exist before the clock
    starts (they are the user's data), their encoding is timed."""
    try:
        rows = [{"user_id": u.decode(), "action": "click", "amount": "42"}
                for u in user_ids(n, seed)]  # fmt: skip
        client = Client("127.0.0.1", port)
        client.xlen(key)  # connected
        ready.put(os.getpid())
        go.wait()
        t0, cpu0 = time.monotonic(), time.process_time()
        entries = calls = 0
        for i in range(0, n, batch):
            entries += len(client.xadd_many(key, rows[i : i + batch]))
            calls += 1
        t1, cpu = time.monotonic(), time.process_time() - cpu0
        client.close()
        results.put(
            {"t0": t0, "t1": t1, "cpu": cpu, "entries": entries, "batches": calls, "error": ""}
        )
    except Exception as e:  # reported to the parent
        results.put({"error": f"{type(e).__name__}: {e}"})


@dataclass
class IngestResult:
    config: str
    batch: int
    clients: int
    entries: int
    primary_s: float  # go -> the last Ingest call returned
    replicas_s: float  # go -> every replica acked the final offset
    offset: int
    lag_at_end: list[tuple[int, int]]  # per replica (lag_offset bytes, lag_ms) at ingest end
    max_lag_ms: int  # the primary's Info replicas[].lag_ms, max over the samples
    samples: int
    apply_p50: list[float]
    apply_p99: list[float]
    sampled_lag: tuple[float, float]  # OffsetSampler's (p50, p99) ms, the worse replica
    client_cpu_s: float  # the client processes' CPU (user + system) over their timed loops
    cpu_us: list[float]  # CPU us per entry, go -> caught up: the primary, then each replica

    @property
    def rate(self) -> float:
        return self.entries / self.replicas_s

    @property
    def primary_rate(self) -> float:
        return self.entries / self.primary_s


def run_ingest(
    cluster: XCluster, n: int, batch: int, clients: int, args: argparse.Namespace
) -> IngestResult:
    primary = cluster.primary
    assert primary is not None
    ctx = mp.get_context("spawn")
    ready, results, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    sampler = xstream_sampler(cluster, args)
    share = [n // clients + (1 if i < n % clients else 0) for i in range(clients)]
    children = [
        ctx.Process(
            target=ingest_child,
            args=(primary.port, KEY, share[i], batch, args.seed + i, args.ingest_build),
            kwargs={"ready": ready, "go": go, "results": results},
            daemon=True,
        )
        for i in range(clients)
    ]
    try:
        for c in children:
            c.start()
        for _ in children:
            try:
                ready.get(timeout=300)
            except queue.Empty:
                raise RuntimeError("ingest clients did not get ready") from None
        progress(f"  {clients} client process(es) ready ({args.ingest_build} batches); go")
        start_offset = primary.info().offset
        nodes = [primary, *cluster.replicas]
        cpu0 = [cpu_seconds(node.proc.popen.pid) for node in nodes]
        sampler.start()
        t0 = time.monotonic()
        go.set()
        done: list[dict[str, Any]] = []
        max_lag_ms = samples = 0
        lag_at_end: list[tuple[int, int]] = []
        last_print = t0
        while len(done) < clients:
            try:
                done.append(results.get(timeout=args.sample_interval))
                continue
            except queue.Empty:
                pass
            info = primary.info()
            samples += 1
            max_lag_ms = max([max_lag_ms, *(r.lag_ms for r in info.replicas)])
            if time.monotonic() - last_print > 2:
                last_print = time.monotonic()
                lags = ", ".join(f"{r.lag_offset:,} B/{r.lag_ms} ms" for r in info.replicas)
                progress(f"    primary offset {info.offset:,}; replica lag {lags}")
        errors = [d["error"] for d in done if d.get("error")]
        if errors:
            raise RuntimeError(f"ingest failed: {errors}")
        t_primary = max(d["t1"] for d in done) - t0
        info = primary.info()
        final = info.offset
        lag_at_end = [(r.lag_offset, r.lag_ms) for r in info.replicas]
        max_lag_ms = max([max_lag_ms, *(r.lag_ms for r in info.replicas)])

        def caught_up() -> float | None:
            nonlocal max_lag_ms, samples
            now = time.monotonic()
            inf = primary.info()
            samples += 1
            max_lag_ms = max([max_lag_ms, *(r.lag_ms for r in inf.replicas)])
            if all(r.ack_offset >= final for r in inf.replicas):
                return now - t0
            return None

        t_repl = wait_for(
            "replicas to ack the ingest", caught_up, args.catchup_timeout, every=0.005
        )
        cpu1 = [cpu_seconds(node.proc.popen.pid) for node in nodes]
        wait_for("a poll to see the replicas caught up", lambda: sampler.reached(final), 30)
    finally:
        sampler.stop()
        go.set()
        for c in children:
            c.join(timeout=30)
            if c.is_alive():
                c.kill()
    entries = sum(d["entries"] for d in done)
    xlen = primary.execute(b"XLEN", KEY).value.integer
    if entries != n:
        raise RuntimeError(f"ingest appended {entries} entries, wanted {n}")
    if xlen != n:
        raise RuntimeError(f"XLEN {xlen} after ingesting {n} entries")
    infos = [r.info() for r in cluster.replicas]
    return IngestResult(
        config=f"{batch}x{clients}",
        batch=batch,
        clients=clients,
        entries=entries,
        primary_s=t_primary,
        replicas_s=t_repl,
        offset=final - start_offset,
        lag_at_end=lag_at_end,
        max_lag_ms=max_lag_ms,
        samples=samples,
        apply_p50=[i.apply_lag_p50_ms for i in infos],
        apply_p99=[i.apply_lag_p99_ms for i in infos],
        sampled_lag=sampler.percentiles(),
        client_cpu_s=sum(d["cpu"] for d in done),
        cpu_us=[(b - a) / n * 1e6 for a, b in zip(cpu0, cpu1, strict=True)],
    )


def xstream_sampler(cluster: XCluster, args: argparse.Namespace) -> OffsetSampler:
    """Offsets of the primary and its replicas, every --lag-interval, read as off a
    redis-server (redis_ingest): INFO replication on each node's RESP port."""
    primary = cluster.primary
    assert primary is not None
    return OffsetSampler(
        resp_offset(primary.resp_port, "master_repl_offset"),
        [resp_offset(r.resp_port, "slave_repl_offset") for r in cluster.replicas],
        args.lag_interval,
    )


def resp_offset(port: int, field: str) -> Callable[[], int]:
    """A poll of one INFO replication offset field over a node's RESP port (xstream's or
    redis-server's: the same request, the same client)."""
    client = redis.Redis(port=port)
    return lambda: int(client.info("replication").get(field, -1))


def check_digests(cluster: XCluster) -> bool:
    assert cluster.primary is not None
    want = cluster.primary.admin.Digest(pb.DigestRequest(), timeout=120)
    same = True
    for r in cluster.replicas:
        got = r.admin.Digest(pb.DigestRequest(), timeout=120)
        same = same and got.digest == want.digest and got.offset == want.offset
    return same


# -- measure 2: unary XADD ---------------------------------------------------------------------


def timed_loop(seconds: float, op: Callable[[], object]) -> float:
    """Calls per second of `op`, run back to back for about `seconds`."""
    for _ in range(50):  # warm-up
        op()
    n = 0
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while True:
        for _ in range(100):
            op()
        n += 100
        t = time.perf_counter()
        if t >= deadline:
            return n / (t - t0)


# -- measure 3: XRANGE paging ------------------------------------------------------------------


def page_client(c: Any, count: int) -> tuple[int, int]:
    """Page through KEY with c.xrange (redis-py signature); (calls, entries)."""
    start: Any = "-"
    calls = seen = 0
    while True:
        page = c.xrange(KEY, start, "+", count=count)
        calls += 1
        seen += len(page)
        if len(page) < count:
            return calls, seen
        start = b"(" + page[-1][0]


def page_stub(node: XNode, count: int) -> tuple[int, int]:
    """Page through KEY with the raw Execute stub; (calls, entries)."""
    execute = node.streams.Execute
    start = b"-"
    cnt = b"%d" % count
    calls = seen = 0
    while True:
        reply = execute(pb.Command(argv=[b"XRANGE", KEY, start, b"+", b"COUNT", cnt]))
        ids = reply.value.entries.ids  # entry lists come as the compact Entries value
        calls += 1
        seen += len(ids)
        if len(ids) < count:
            return calls, seen
        start = b"(" + ids[-1]


def paged_rate(run: Callable[[], tuple[int, int]], n: int, what: str) -> float:
    t0 = time.perf_counter()
    calls, seen = run()
    dt = time.perf_counter() - t0
    if seen != n:
        raise RuntimeError(f"{what}: paged through {seen} entries, expected {n}")
    progress(f"    {what}: {calls:,} calls in {dt:.2f}s = {calls / dt:,.0f} calls/s")
    return calls / dt


# -- measure 5: full resync --------------------------------------------------------------------


def log_times(path: Path, events: Sequence[str]) -> dict[str, float]:
    """Epoch seconds of the first occurrence of each event in a JSON-lines log."""
    out: dict[str, float] = {}
    for line in path.read_text(errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        ev = rec.get("event")
        if ev in events and ev not in out:
            ts = datetime.strptime(rec["ts"], "%Y-%m-%dT%H:%M:%S.%fZ")
            out[ev] = ts.replace(tzinfo=UTC).timestamp()
    return out


def last_field(path: Path, event: str, name: str) -> object:
    """The field `name` of the last `event` record in a JSON-lines log (None if none)."""
    value: object = None
    for line in path.read_text(errors="replace").splitlines():
        if f'"{event}"' not in line:
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if rec.get("event") == event:
            value = rec.get(name)
    return value


def xstream_resync(
    cluster: XCluster, n: int, args: argparse.Namespace
) -> tuple[float, float, float, float]:
    """(spawn -> caught up seconds, replica_ready -> full_sync_done seconds, CPU seconds of
    the replica and the primary over that time, spawn -> replica_ready seconds: the process
    starting, from its log)."""
    primary = cluster.primary
    assert primary is not None
    before = primary.info()
    target = before.offset
    progress(f"  primary offset {target:,}, full_syncs {before.full_syncs}; spawning a replica")
    cpu0 = cpu_seconds(primary.proc.popen.pid)
    t0, spawned = time.monotonic(), time.time()
    node = cluster.spawn_replica("resync")

    def synced() -> tuple[float, float, float] | None:
        cluster.procs.check_alive(node.proc)
        info = node.try_info()
        if info is not None and info.full_syncs >= 1 and info.offset == target:
            own = cpu_seconds(node.proc.popen.pid)
            return time.monotonic() - t0, own, cpu_seconds(primary.proc.popen.pid) - cpu0
        return None

    waited = wait_for("the fresh replica to full-sync", synced, args.catchup_timeout, every=0.01)
    dt, replica_cpu, primary_cpu = waited
    after = primary.info()
    if after.full_syncs != before.full_syncs + 1:
        raise RuntimeError(f"primary full_syncs {before.full_syncs} -> {after.full_syncs}")
    xlen = node.execute(b"XLEN", KEY).value.integer
    if xlen != n:
        raise RuntimeError(f"resynced replica holds {xlen} entries, expected {n}")
    times = log_times(node.proc.log, ["replica_ready", "full_sync_start", "full_sync_done"])
    inner = times.get("full_sync_done", 0) - times.get("replica_ready", 0)
    start = times.get("replica_ready", spawned) - spawned
    progress(
        f"    log: spawn -> replica_ready {start:.3f}s, replica_ready -> full_sync_start "
        f"{times.get('full_sync_start', 0) - times.get('replica_ready', 0):.3f}s, "
        f"-> full_sync_done {inner:.3f}s (of it the primary's build "
        f"{last_field(primary.proc.log, 'full_resync_start', 'build_seconds')}s, the install "
        f"{last_field(node.proc.log, 'full_sync_done', 'install_seconds')}s); CPU: the replica "
        f"{replica_cpu:.2f}s, the primary {primary_cpu:.2f}s"
    )
    return dt, inner, replica_cpu + primary_cpu, start


def redis_resync(
    procs: Procs, workdir: Path, primary: RNode, n: int, args: argparse.Namespace
) -> tuple[float, float]:
    """(spawn -> caught up seconds, CPU seconds of the replica and the primary, with its
    fork, over that time)."""
    cpu0 = cpu_seconds(primary.proc.popen.pid, children=True)
    t0 = time.monotonic()
    node = start_redis(procs, workdir, "redis-resync", args, replicaof=primary.port)

    def synced() -> tuple[float, float] | None:
        procs.check_alive(node.proc)
        if not redis_caught_up(primary, node):
            return None
        spent = cpu_seconds(primary.proc.popen.pid, children=True) - cpu0
        cpu = cpu_seconds(node.proc.popen.pid) + spent
        return time.monotonic() - t0, cpu

    dt, cpu = wait_for("the fresh redis replica to sync", synced, args.catchup_timeout, every=0.01)
    xlen = node.client.xlen(KEY)
    if xlen != n:
        raise RuntimeError(f"resynced redis replica holds {xlen} entries, expected {n}")
    stop_redis(procs, node)
    return dt, cpu


# -- the run -----------------------------------------------------------------------------------


@dataclass
class RedisFigures:
    ingest_rps: float = 0.0
    ingest_caught_up: float = 0.0
    ingest_cmd: str = ""
    unary_bench: float = 0.0
    unary_bench_cmd: str = ""
    unary_py: float = 0.0
    xrange_py: float = 0.0
    xrange_bench: float = 0.0
    xrange_bench_cmd: str = ""
    resync_s: float = 0.0
    resync_cpu: float = 0.0
    entries: int = 0  # XLEN after redis-benchmark (it may send a few more than -n)
    lag: tuple[float, float] | None = None  # the replica's, OffsetSampler's (p50, p99) ms


def run_redis(procs: Procs, workdir: Path, args: argparse.Namespace) -> RedisFigures:
    """The --measures on a redis-server primary with one replica."""
    fig = RedisFigures()
    progress("redis: starting a primary and one replica")
    primary = start_redis(procs, workdir, "redis-primary", args)
    version = primary.client.info("server")["redis_version"]
    replica = start_redis(procs, workdir, "redis-replica", args, replicaof=primary.port)
    wait_for("the redis replica link", lambda: redis_caught_up(primary, replica), 60, every=0.02)
    progress(f"redis-server {version} primary :{primary.port}, replica :{replica.port} (link up)")
    redis_ingest(fig, primary, replica, args)
    n = fig.entries
    if "unary" in args.measures:
        redis_unary(fig, primary, args)
    if "xrange" in args.measures:
        redis_xrange(fig, primary, n, args)
    if "resync" in args.measures:
        progress(f"5. redis: a fresh replica full-syncs {n:,} entries")
        wait_for("the redis replica", lambda: redis_caught_up(primary, replica), 60, every=0.02)
        fig.resync_s, fig.resync_cpu = redis_resync(procs, workdir, primary, n, args)
        progress(
            f"  redis resync: {fig.resync_s:.3f}s (spawn -> link up, offsets equal), "
            f"{fig.resync_cpu:.2f} CPU s (replica + primary)"
        )
    for node in (replica, primary):
        stop_redis(procs, node)
    return fig


def redis_ingest(
    fig: RedisFigures, primary: RNode, replica: RNode, args: argparse.Namespace
) -> None:
    """Measure 1 (and 4: the replica's lag, polled as OffsetSampler does)."""
    n = args.entries
    progress(f"1. redis: redis-benchmark -P 64 XADD, {n:,} entries, 1 replica attached")

    sampler = OffsetSampler(
        resp_offset(primary.port, "master_repl_offset"),
        [resp_offset(replica.port, "slave_repl_offset")],
        args.lag_interval,
    ).start()
    t0 = time.monotonic()
    try:
        fig.ingest_rps, fig.ingest_cmd = redis_benchmark(
            args, primary.port, "-P", "64", "-n", str(n), "-r", str(RAND_RANGE),
            "XADD", KEY.decode(), "*", "user_id", "__rand_int__", "action", "click", "amount", "42",
        )  # fmt: skip
        t_bench = time.monotonic() - t0
        lag = redis_offsets(primary, replica)
        t_repl = wait_for(
            "the redis replica to catch up",
            lambda: time.monotonic() - t0 if redis_caught_up(primary, replica) else None,
            args.catchup_timeout,
            every=0.005,
        )
        final = redis_offsets(primary, replica)[0]
        wait_for("a poll to see the replica", lambda: sampler.reached(final), 30)
    finally:
        sampler.stop()
    fig.lag = sampler.percentiles()
    xlen = primary.client.xlen(KEY)  # redis-benchmark may send a few more than -n (pipelines)
    if xlen < n:
        raise RuntimeError(f"redis XLEN {xlen} after {n} XADDs")
    fig.entries = n = xlen
    fig.ingest_caught_up = n / t_repl
    progress(
        f"  redis-benchmark: {fig.ingest_rps:,.0f} req/s (wall {t_bench:.2f}s incl. start-up); "
        f"replica behind by {lag[0] - lag[1]:,} B when it returned; caught up at "
        f"{t_repl:.2f}s = {fig.ingest_caught_up:,.0f} entries/s (XLEN {n:,}); replica lag "
        f"p50/p99 {fig.lag[0]:.1f}/{fig.lag[1]:.1f} ms (offsets polled)"
    )


def redis_unary(fig: RedisFigures, primary: RNode, args: argparse.Namespace) -> None:
    progress("2. redis: unary XADD, 1 client")
    fig.unary_bench, fig.unary_bench_cmd = redis_benchmark(
        args, primary.port, "-c", "1", "-P", "1", "-n", str(args.unary_bench_n),
        "XADD", UNARY_KEY.decode(), "*", *(f.decode() for f in UNARY_FIELDS),
    )  # fmt: skip
    progress(f"  redis-benchmark -c 1 -P 1: {fig.unary_bench:,.0f} req/s")
    r = redis.Redis(port=primary.port, protocol=2)
    fig.unary_py = timed_loop(args.unary_seconds, lambda: r.xadd(UNARY_KEY, UNARY_ENTRY))
    progress(f"  redis-py xadd: {fig.unary_py:,.0f} calls/s")
    r.delete(UNARY_KEY)
    r.close()


def redis_xrange(fig: RedisFigures, primary: RNode, n: int, args: argparse.Namespace) -> None:
    progress(f"3. redis: XRANGE COUNT 100 paging through {n:,} entries, 1 client")
    r = redis.Redis(port=primary.port, protocol=2)
    fig.xrange_py = paged_rate(lambda: page_client(r, 100), n, "redis-py xrange")
    fig.xrange_bench, fig.xrange_bench_cmd = redis_benchmark(
        args, primary.port, "-c", "1", "-P", "1", "-n", str(args.xrange_bench_n),
        "XRANGE", KEY.decode(), "-", "+", "COUNT", "100",
    )  # fmt: skip
    progress(f"  redis-benchmark -c 1 XRANGE - + COUNT 100: {fig.xrange_bench:,.0f} req/s")
    r.close()


@dataclass
class XFigures:
    ingest: list[IngestResult] = field(default_factory=list)
    unary_stub: float = 0.0
    unary_client: float = 0.0
    xrange_client: float = 0.0
    xrange_stub: float = 0.0
    xrange_replica: float = 0.0
    resync_s: float = 0.0
    resync_inner_s: float = 0.0
    resync_cpu: float = 0.0
    resync_start_s: float = 0.0  # spawn -> replica_ready (its log): the process starting
    digests_ok: bool = True

    @property
    def best(self) -> IngestResult:
        return max(self.ingest, key=lambda r: r.rate)


def start_cluster(procs: Procs, workdir: Path, tag: str, args: argparse.Namespace) -> XCluster:
    cluster = XCluster(procs, workdir, tag, args)
    cluster.start_primary(expect_replicas=2)
    cluster.spawn_replica("replica1")
    cluster.spawn_replica("replica2")
    cluster.wait_in_sync(120)
    assert cluster.primary is not None
    ports = ", ".join(str(r.port) for r in cluster.replicas)
    progress(f"  xstream primary :{cluster.primary.port}, replicas :{ports} online")
    return cluster


def ingest_on_fresh_cluster(
    procs: Procs, workdir: Path, tag: str, batch: int, clients: int, args: argparse.Namespace
) -> tuple[XCluster, IngestResult]:
    """Measure 1 (and 4) on a fresh primary with two replicas; the cluster is left running."""
    n = args.entries
    how = "Client.xadd_many" if args.ingest_build == "client" else "Ingest"
    progress(
        f"1. xstream: {how} {n:,} entries, batches of {batch:,}, {clients} client "
        f"process(es), 2 replicas attached (fresh cluster {tag})"
    )
    cluster = start_cluster(procs, workdir, tag, args)
    try:
        res = run_ingest(cluster, n, batch, clients, args)
    except BaseException:
        cluster.close()
        raise
    progress(
        f"  primary acked in {res.primary_s:.2f}s = {res.primary_rate:,.0f} entries/s; "
        f"replicas caught up at {res.replicas_s:.2f}s = {res.rate:,.0f} entries/s; "
        f"client CPU {res.client_cpu_s / n * 1e6:.2f} µs/entry"
    )
    ends = "; ".join(f"{b:,} B behind, lag_ms {ms}" for b, ms in res.lag_at_end)
    progress(
        f"  at ingest end: {ends}; max primary-reported lag_ms {res.max_lag_ms} over "
        f"{res.samples} samples; {res.offset / n:.1f} log bytes/entry"
    )
    applied = ", ".join(
        f"{a:.1f}/{b:.1f}" for a, b in zip(res.apply_p50, res.apply_p99, strict=True)
    )
    progress(
        f"  replica apply lag p50/p99 ms: {applied} (replicas' Info); "
        f"{res.sampled_lag[0]:.1f}/{res.sampled_lag[1]:.1f} (offsets polled, worse replica)"
    )
    progress(
        "  CPU us per entry (user + system, go -> caught up): primary "
        + ", replicas ".join(f"{us:.2f}" for us in res.cpu_us[:2])
        + "".join(f", {us:.2f}" for us in res.cpu_us[2:])
    )
    return cluster, res


def run_xstream(procs: Procs, workdir: Path, args: argparse.Namespace) -> XFigures:
    """The --measures on an xstream primary with two replicas (measure 1: one fresh cluster
    per --ingest-configs entry; the last one serves the others)."""
    n = args.entries
    fig = XFigures()
    configs = args.ingest_configs
    cluster: XCluster | None = None
    try:
        for i, (batch, clients) in enumerate(configs):
            tag = f"x{i}"
            cluster, res = ingest_on_fresh_cluster(procs, workdir, tag, batch, clients, args)
            fig.ingest.append(res)
            if i < len(configs) - 1:
                cluster.close()
                cluster = None
        assert cluster is not None and cluster.primary is not None
        t = time.monotonic()
        fig.digests_ok = check_digests(cluster)
        progress(
            f"  replica digests {'equal' if fig.digests_ok else 'DIFFER from'} the primary's "
            f"({time.monotonic() - t:.1f}s)"
        )
        if "unary" in args.measures:
            xstream_unary(fig, cluster.primary, args)
        if "xrange" in args.measures:
            xstream_xrange(fig, cluster, n)
        if "resync" in args.measures:
            progress(f"5. xstream: a fresh replica full-syncs {n:,} entries")
            cluster.wait_in_sync(60)
            resync = xstream_resync(cluster, n, args)
            fig.resync_s, fig.resync_inner_s, fig.resync_cpu, fig.resync_start_s = resync
            progress(
                f"  xstream resync: {fig.resync_s:.3f}s (spawn -> offset equal), "
                f"{fig.resync_start_s:.3f}s of it the process starting, "
                f"{fig.resync_inner_s:.3f}s in the replica's sync (log), "
                f"{fig.resync_cpu:.2f} CPU s (replica + primary)"
            )
    finally:
        if cluster is not None:
            cluster.close()
    return fig


def xstream_unary(fig: XFigures, primary: XNode, args: argparse.Namespace) -> None:
    progress("2. xstream: unary XADD, 1 client (sync gRPC)")
    cmd = pb.Command(argv=[b"XADD", UNARY_KEY, b"*", *UNARY_FIELDS])
    execute = primary.streams.Execute
    fig.unary_stub = timed_loop(args.unary_seconds, lambda: execute(cmd))
    progress(f"  raw stub Execute: {fig.unary_stub:,.0f} calls/s")
    client = Client("127.0.0.1", primary.port)
    fig.unary_client = timed_loop(args.unary_seconds, lambda: client.xadd(UNARY_KEY, UNARY_ENTRY))
    progress(f"  Client.xadd: {fig.unary_client:,.0f} calls/s")
    primary.execute(b"DEL", UNARY_KEY)
    client.close()


def xstream_xrange(fig: XFigures, cluster: XCluster, n: int) -> None:
    primary = cluster.primary
    assert primary is not None
    progress(f"3. xstream: XRANGE COUNT 100 paging through {n:,} entries, 1 client")
    client = Client("127.0.0.1", primary.port)
    fig.xrange_client = paged_rate(lambda: page_client(client, 100), n, "Client.xrange")
    fig.xrange_stub = paged_rate(lambda: page_stub(primary, 100), n, "raw stub Execute")
    reader = Client(
        "127.0.0.1", primary.port, read_from="replica", replicas=[cluster.replicas[0].address]
    )
    fig.xrange_replica = paged_rate(
        lambda: page_client(reader, 100), n, "Client.xrange from a replica"
    )
    reader.close()
    client.close()


def build_rows(x: XFigures, r: RedisFigures, n: int, measures: set[str]) -> list[Row]:
    best = x.best
    rows = [
        Row(
            f"1. Batched ingest, 2 replicas caught up (best: {best.config}) vs redis-benchmark "
            "-P 64, 1 replica caught up",
            best.rate,
            r.ingest_caught_up,
            " entries/s",
        ),
        Row(
            f"1b. Batched ingest, primary acked ({best.config}) vs redis-benchmark req/s",
            best.primary_rate,
            r.ingest_rps,
            " entries/s",
        ),
    ]
    rows += [
        Row(
            f"1{chr(ord('c') + i)}. ingest {res.config} (batch x clients), replicas caught up",
            res.rate,
            r.ingest_caught_up,
            " entries/s",
            note=f"primary acked {res.primary_rate:,.0f}/s",
        )
        for i, res in enumerate(x.ingest)
        if len(x.ingest) > 1
    ]
    if "unary" in measures:
        rows += unary_rows(x, r)
    if "xrange" in measures:
        rows += xrange_rows(x, r, n)
    rows.append(lag_row(best, r))
    if "resync" in measures:
        rows += resync_rows(x, r, n)
    return rows


def unary_rows(x: XFigures, r: RedisFigures) -> list[Row]:
    return [
        Row(
            "2. Unary XADD, 1 client: raw stub Execute vs redis-benchmark -c 1 -P 1",
            x.unary_stub,
            r.unary_bench,
            " ops/s",
            ratio_at_least(0.12),
        ),
        Row("2b. Unary XADD: Client.xadd vs redis-py xadd", x.unary_client, r.unary_py, " ops/s"),
    ]


def xrange_rows(x: XFigures, r: RedisFigures, n: int) -> list[Row]:
    return [
        Row(
            f"3. XRANGE COUNT 100 paging {n:,}: Client.xrange vs redis-py xrange",
            x.xrange_client,
            r.xrange_py,
            " calls/s",
            ratio_at_least(0.3),
        ),
        Row(
            "3b. XRANGE COUNT 100: raw stub Execute (paging) vs redis-benchmark -c 1",
            x.xrange_stub,
            r.xrange_bench,
            " calls/s",
        ),
        Row(
            "3c. XRANGE COUNT 100: Client.xrange from a replica vs redis-py (primary)",
            x.xrange_replica,
            r.xrange_py,
            " calls/s",
        ),
    ]


def lag_label(lag: tuple[float, float] | None) -> str:
    return f"{lag[0]:.1f} / {lag[1]:.1f} ms" if lag is not None else "-"


def lag_row(best: IngestResult, r: RedisFigures) -> Row:
    """Measure 4: p99 compared (offsets polled alike on both); the replicas' own Info too."""
    applied = (max(best.apply_p50), max(best.apply_p99)) if best.apply_p50 else None
    return Row(
        f"4. Replica lag p50 / p99 under ingest ({best.config}, worse of the 2 replicas; "
        "redis: its 1 replica), offsets polled",
        best.sampled_lag[1],
        r.lag[1] if r.lag is not None else None,
        "ms",
        Target("p99 <= 150 ms", bound=150.0),
        note=f"xstream replicas' own apply_lag p50 / p99 {lag_label(applied)}; "
        f"primary-reported lag_ms max {best.max_lag_ms}",
        label_mine=lag_label(best.sampled_lag),
        label_theirs=lag_label(r.lag),
    )


def resync_rows(x: XFigures, r: RedisFigures, n: int) -> list[Row]:
    return [
        Row(
            f"5. Full resync of {n:,} entries (spawn -> offsets equal)",
            x.resync_s,
            r.resync_s,
            "s",
            ratio_at_most(1.0),
            note=f"xstream: the process starting {x.resync_start_s:.2f}s, the replica's own "
            f"sync {x.resync_inner_s:.2f}s (log)",
        ),
        Row(
            "5b. Full resync: CPU seconds of the new replica's process and the primary (with "
            "redis's fork), spawn -> offsets equal",
            x.resync_cpu,
            r.resync_cpu,
            "s",
            note="less sensitive to the machine's load than 5",
        ),
    ]


# -- command line ------------------------------------------------------------------------------


def ingest_config(text: str) -> list[tuple[int, int]]:
    out = []
    for part in text.split(","):
        batch, _, clients = part.strip().lower().partition("x")
        out.append((int(batch), int(clients or 1)))
    if not out or any(b < 1 or c < 1 for b, c in out):
        raise argparse.ArgumentTypeError("expected BATCHxCLIENTS[,...], e.g. 4000x1,4000x2")
    return out


MEASURES = ("unary", "xrange", "resync")  # measures 2, 3, 5 (1 and 4 always run)


def measure_set(text: str) -> set[str]:
    got = {w.strip() for w in text.split(",") if w.strip()}
    if got - set(MEASURES):
        raise argparse.ArgumentTypeError(f"expected some of {','.join(MEASURES)}")
    return got


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--entries", type=int, default=1_000_000, help="stream size (default 1M)")
    p.add_argument(
        "--quick",
        action="store_true",
        help="100,000 entries, 2 s unary loops, smaller redis-benchmark runs",
    )
    p.add_argument(
        "--ingest-configs",
        type=ingest_config,
        default=None,
        help="measure 1: BATCHxCLIENTS runs, each on a fresh cluster\n"
        "(default 1000x1,4000x1,16000x1,4000x2; with --measures resync 16000x1);\n"
        "the last cluster serves measures 2-5",
    )
    p.add_argument(
        "--ingest-build",
        choices=["prebuilt", "inline", "client"],
        default="prebuilt",
        help="prebuilt: IngestBatch messages serialized before the clock starts (default);\n"
        "inline: built and serialized while streaming (client cost included);\n"
        "client: Client.xadd_many(key, dicts), one call per batch (what a user writes)",
    )
    p.add_argument(
        "--measures",
        type=measure_set,
        default=measure_set(",".join(MEASURES)),
        help=f"which to run besides ingest and lag (default {','.join(MEASURES)})",
    )
    p.add_argument("--lag-interval", type=float, default=0.01,
                   help="seconds between offset polls of measure 4 (default 0.01)")  # fmt: skip
    p.add_argument("--fsync", choices=["always", "everysec", "no"], default="everysec",
                   help="xstream --fsync and redis appendfsync (default everysec)")  # fmt: skip
    p.add_argument("--redis-no-aof", action="store_true", help="redis-server appendonly no")
    p.add_argument(
        "--redis-diskless-sync-delay",
        type=int,
        default=0,
        help="redis primary repl-diskless-sync-delay seconds (default 0; redis's own is 5)",
    )
    p.add_argument("--backlog-bytes", type=int, default=0, help="xstream primary --backlog-bytes")
    p.add_argument("--unary-seconds", type=float, default=5.0, help="per unary XADD loop")
    p.add_argument("--unary-bench-n", type=int, default=100_000, help="redis-benchmark -n, unary")
    p.add_argument("--xrange-bench-n", type=int, default=20_000, help="redis-benchmark -n, XRANGE")
    p.add_argument("--sample-interval", type=float, default=0.05, help="Info polls during ingest")
    p.add_argument("--catchup-timeout", type=float, default=600, help="seconds")
    p.add_argument("--redis-server", default="/usr/bin/redis-server")
    p.add_argument("--redis-benchmark", default="/usr/bin/redis-benchmark")
    p.add_argument("--skip-redis", action="store_true", help="xstream figures only")
    p.add_argument("--skip-xstream", action="store_true", help="redis figures only")
    p.add_argument("--keep", action="store_true", help="keep the data directory and logs")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--bytecode-cache",
        choices=["on", "inherit"],
        default="on",
        help="on: started processes write and use a bytecode cache (as an installed package\n"
        "has); inherit: this environment's setting (PYTHONDONTWRITEBYTECODE may be set)",
    )
    args = p.parse_args(argv)
    if args.ingest_configs is None:
        only_resync = args.measures == {"resync"}
        default = "16000x1" if only_resync else "1000x1,4000x1,16000x1,4000x2"
        args.ingest_configs = ingest_config(default)
    if args.quick:
        args.entries = min(args.entries, 100_000)
        args.unary_seconds = min(args.unary_seconds, 2.0)
        args.unary_bench_n = min(args.unary_bench_n, 20_000)
        args.xrange_bench_n = min(args.xrange_bench_n, 5_000)
    return args


def node_env(workdir: Path, cache: str) -> dict[str, str] | None:
    """The started processes' environment. `on`: Python writes and reads its bytecode cache
    (in the run's directory, PYTHONPYCACHEPREFIX), as an installed package has it compiled:
    an environment with PYTHONDONTWRITEBYTECODE set otherwise compiles every module from
    source at every node start (~0.1 s of CPU, inside measure 5's spawn -> synced time).
    The first cluster's start fills it; measure 5's replica starts from it."""
    if cache == "inherit":
        return None
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")
    return env


@contextmanager
def workspace(keep: bool) -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="xstream-bench-"))
    try:
        yield d
    finally:
        if keep:
            print(f"data and logs kept in {d}")
        else:
            import shutil  # noqa: PLC0415

            shutil.rmtree(d, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    for binary in (args.redis_server, args.redis_benchmark):
        if not args.skip_redis and not Path(binary).exists():
            sys.exit(f"{binary} not found (apt-get install redis-server, or --skip-redis)")
    print(
        f"machine: {machine()} (every server, replica, client and redis-benchmark process "
        f"shares these cores); python {sys.version.split()[0]}; "
        f"grpcio {grpc.__version__}; redis-py {redis.__version__}",
        flush=True,
    )
    print(
        f"entries {args.entries:,}; fsync {args.fsync}; ingest configs "
        + ",".join(f"{b}x{c}" for b, c in args.ingest_configs)
        + f"; ingest batches {args.ingest_build}; bytecode cache {args.bytecode_cache}",
        flush=True,
    )
    with ExitStack() as stack:
        workdir = stack.enter_context(workspace(args.keep))
        procs = Procs(workdir, node_env(workdir, args.bytecode_cache))
        stack.callback(procs.stop_all)
        theirs = RedisFigures() if args.skip_redis else run_redis(procs, workdir, args)
        mine = XFigures() if args.skip_xstream else run_xstream(procs, workdir, args)
    if args.skip_xstream:
        mine.ingest.append(IngestResult("-", 0, 0, 0, 1, 1, 0, [], 0, 0, [], [], (0, 0), 0, []))
    print()
    rows = [show(r) for r in build_rows(mine, theirs, args.entries, args.measures)]
    print_table(rows)
    print(f"at the end: {machine()} (other work on the machine skews every figure)")
    if not mine.digests_ok:
        print("WARNING: a replica's digest differed from the primary's after the ingest")
    return 0


if __name__ == "__main__":
    sys.exit(main())
