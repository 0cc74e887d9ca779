"""Spark batch read of a stream from two replicas, vs a single client XRANGE loop.

Run by hand, never by the test suite (a few minutes):

    .venv/bin/python benchmarks/spark_bench.py              # 1,000,000 entries
    .venv/bin/python benchmarks/spark_bench.py --entries 200000 --runs 2

It starts, on free loopback ports, an xstream primary with two replicas (`--fsync everysec`)
and a redis-server, loads the same N entries {user_id, action, amount} into both, then
measures, each --runs times (best and median shown):

  spark     spark.read.format("xstream") from both replicas (local[2], Arrow batches of
            --fetch entries, --partitions input partitions) -> count(), and a
            groupBy(fields['action']).count() (every column is built either way)
  loop      one Python client paging XRANGE COUNT --fetch through the stream on a replica
            (xstream.client.Client), and redis-py doing the same against redis-server

and prints rows/s with the ratios spark/loop and xstream-loop/redis-loop. Last, the server's
cost per entry of the paging the Spark source does (CPU seconds of the serving process from
/proc/<pid>/stat over a whole scan, divided by the entries; steadier than rates on a shared
machine), on a replica:

  XNODES    what the source reads: pages of whole stream nodes (listpack bytes as stored);
            the reader's own CPU per entry (decode + Arrow batch) is shown beside it
  XRANGE    XRANGE COUNT --fetch pages through the same Execute RPC (entries encoded one by one)
  redis     redis-server's CPU for XRANGE COUNT --fetch pages (redis-py), the reference
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from pyspark.errors import PySparkRuntimeError
from service_bench import KEY, XCluster, progress, start_redis
from sides import Procs

from xstream.client import Client
from xstream.pipeline import nodes, reading, session

CLK_TCK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def tree_cpu_seconds(pid: int) -> float:
    """CPU time of `pid` and every descendant, live or reaped (the children's times a
    process has waited for are in its own cutime and cstime): here the Spark JVM, its Python
    workers and the xstream nodes, all started by this process."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                children.setdefault(int(_stat(int(entry.name))[1]), []).append(int(entry.name))
            except (OSError, IndexError):
                continue  # exited meanwhile
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            f = _stat(p)
        except OSError:
            continue
        total += sum(int(x) for x in f[11:15]) / CLK_TCK  # utime stime cutime cstime
        todo += children.get(p, [])
    return total


def load(cluster: XCluster, redis_client: Any, n: int) -> None:
    assert cluster.primary is not None
    c = Client("127.0.0.1", cluster.primary.port)
    pipe_every = 10_000
    for done in range(0, n, pipe_every):
        k = min(pipe_every, n - done)
        batch = [
            {
                "user_id": str(100_000_000_000 + (i * 7919) % 10**9),
                "action": "click",
                "amount": "42",
            }
            for i in range(done, done + k)
        ]
        ids = c.xadd_many(KEY, batch)
        p = redis_client.pipeline(transaction=False)
        for eid, fields in zip(ids, batch, strict=True):
            p.xadd(KEY, fields, id=eid)
        p.execute()
        if (done + k) % 200_000 == 0 or done + k == n:
            progress(f"  loaded {done + k:,}/{n:,}")
    c.close()


def loop_rate(c: Any, n: int, fetch: int) -> float:
    t0 = time.perf_counter()
    start: Any = "-"
    seen = 0
    while True:
        page = c.xrange(KEY, start, "+", count=fetch)
        seen += len(page)
        if len(page) < fetch:
            break
        last = page[-1][0]
        start = "(" + (last.decode() if isinstance(last, bytes) else last)
    if seen != n:
        raise RuntimeError(f"XRANGE loop saw {seen} entries, expected {n}")
    return n / (time.perf_counter() - t0)


def xrange_pages(address: str, n: int, fetch: int) -> None:
    """The whole stream in XRANGE COUNT `fetch` pages through Execute (the protobuf Entries)."""
    cursor, seen = "-", 0
    while True:
        e = nodes.execute(address, "XRANGE", KEY, cursor, "+", "COUNT", fetch).entries
        seen += len(e.ids)
        if len(e.ids) < fetch:
            break
        cursor = "(" + e.ids[-1].decode()
    if seen != n:
        raise RuntimeError(f"XRANGE pages saw {seen} entries, expected {n}")


def source_pages(address: str, n: int, fetch: int) -> None:
    """The whole stream as the Spark source reads it: XNODES pages, decoded, Arrow batches."""
    last = nodes.state(address, KEY.decode()).last_id
    part = reading.Part(KEY.decode(), "0-0", last, address, n, True, 10_000, fetch)
    seen = sum(b.num_rows for b in reading.read_part(part))
    if seen != n:
        raise RuntimeError(f"the source's pages saw {seen} entries, expected {n}")


def redis_pages(c: Any, n: int, fetch: int) -> None:
    cursor, seen = "-", 0
    while True:
        page = c.execute_command("XRANGE", KEY, cursor, "+", "COUNT", fetch)
        seen += len(page)
        if len(page) < fetch:
            break
        cursor = "(" + page[-1][0].decode()
    if seen != n:
        raise RuntimeError(f"redis XRANGE pages saw {seen} entries, expected {n}")


def per_entry(pid: int, scan: Any, n: int) -> tuple[float, float]:
    """(server CPU us, this process's CPU us) per entry of one `scan()`."""
    s0, c0 = cpu_seconds(pid), time.process_time()
    scan()
    s1, c1 = cpu_seconds(pid), time.process_time()
    return 1e6 * (s1 - s0) / n, 1e6 * (c1 - c0) / n


def server_costs(
    args: argparse.Namespace, replica_pid: int, address: str, redis_node: Any
) -> list[str]:
    n, fetch = args.entries, args.fetch
    runs = max(args.runs, 2)
    redis_pid = redis_node.proc.popen.pid
    scans = {
        "XNODES": (replica_pid, lambda: source_pages(address, n, fetch)),
        "XRANGE": (replica_pid, lambda: xrange_pages(address, n, fetch)),
        "redis": (redis_pid, lambda: redis_pages(redis_node.client, n, fetch)),
    }
    costs = {
        name: [per_entry(pid, scan, n) for _ in range(runs)] for name, (pid, scan) in scans.items()
    }
    ref = min(s for s, _ in costs["redis"])
    lines = [f"Server CPU per entry, pages of {fetch:,} (best of {runs}; us, /proc)"]
    for name, label in (
        ("XNODES", "xstream replica, XNODES (the source)"),
        ("XRANGE", "xstream replica, XRANGE via Execute"),
        ("redis", "redis-server, XRANGE"),
    ):
        server = min(s for s, _ in costs[name])
        client = min(c for _, c in costs[name])
        lines.append(f"  {label:<38} server {server:5.2f} us  ({server / ref:5.2f}x redis)"
                     f"   reader {client:5.2f} us")  # fmt: skip
    return lines


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--entries", type=int, default=1_000_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--fetch", type=int, default=10_000, help="entries per XRANGE / Arrow batch")
    p.add_argument("--partitions", type=int, default=4, help="minPartitions of the read")
    p.add_argument("--fsync", default="everysec")
    p.add_argument("--redis-server", default="redis-server")
    args = p.parse_args(argv)
    # service_bench's helpers read these settings.
    args.backlog_bytes = 0
    args.redis_no_aof = False
    args.redis_diskless_sync_delay = 0
    return args


def main() -> int:
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="xstream-spark-bench-") as tmp:
        procs = Procs(Path(tmp))
        try:
            report(args, run(args, procs, Path(tmp)))
        finally:
            procs.stop_all()
    return 0


@dataclass
class SparkFigures:
    """rows/s of each run."""

    counts: list[float]  # spark count()
    groups: list[float]  # spark groupBy(fields['action']).count()
    x_loop: list[float]  # xstream Client paging XRANGE on a replica
    r_loop: list[float]  # redis-py paging XRANGE on redis-server
    served: list[float]  # the replicas' CPU us per row during each count()
    spent: list[float]  # every taking part process's CPU us per row during each count()
    costs: list[str]  # the server-cost-per-entry lines (server_costs)


def spark_rates(
    spark: Any, args: argparse.Namespace, replicas: str, xc: Client, pids: list[int]
) -> tuple[list[float], list[float], list[float], list[float]]:
    """count() and groupBy rates of --runs Spark reads of the whole stream, in rows/s, and the
    replicas' CPU us per row during each count() (processes `pids`) and that of every process
    taking part (this one, the JVM, its Python workers, the nodes)."""
    n = args.entries

    def reader(ending: str = "latest") -> Any:
        return (
            spark.read.format("xstream")
            .option("streams", KEY.decode())
            .option("replicas", replicas)
            .option("minPartitions", str(args.partitions))
            .option("fetchSize", str(args.fetch))
            .option("endingOffsets", ending)
            .load()
        )

    # Warm-up (JVM, Python workers) on the first 1,000 entries, read to their end. Not a
    # limit(): Spark would stop reading each partition early and close the socket of a Python
    # worker still sending, and PySpark's daemon prints a BrokenPipeError for each.
    first = xc.xrange(KEY, "-", "+", count=1000)
    last = first[-1][0].decode() if isinstance(first[-1][0], bytes) else first[-1][0]
    assert reader(json.dumps({KEY.decode(): last})).count() == len(first)
    counts, groups, served, spent = [], [], [], []
    for i in range(args.runs):
        cpu0, all0 = sum(map(cpu_seconds, pids)), tree_cpu_seconds(os.getpid())
        t0 = time.perf_counter()
        got = reader().count()
        counts.append(n / (time.perf_counter() - t0))
        served.append(1e6 * (sum(map(cpu_seconds, pids)) - cpu0) / n)
        spent.append(1e6 * (tree_cpu_seconds(os.getpid()) - all0) / n)
        if got != n:
            raise RuntimeError(f"spark count() = {got}, expected {n}")
        t0 = time.perf_counter()
        df = reader()
        rows = df.groupBy(df.fields["action"]).count().collect()
        groups.append(n / (time.perf_counter() - t0))
        progress(f"  run {i + 1}: count {counts[-1]:,.0f} rows/s, groupBy {groups[-1]:,.0f} rows/s")
        assert rows[0][1] == n
    return counts, groups, served, spent


def run(args: argparse.Namespace, procs: Procs, workdir: Path) -> SparkFigures:
    n = args.entries
    cluster = XCluster(procs, workdir, "x", args)
    cluster.start_primary(2)
    for name in ("r1", "r2"):
        cluster._wait_ready(cluster.spawn_replica(name))
    redis_node = start_redis(procs, workdir, "redis", args)
    progress(f"loading {n:,} entries into xstream and redis-server")
    load(cluster, redis_node.client, n)
    cluster.wait_in_sync()
    replicas = ",".join(r.address for r in cluster.replicas)

    progress("single-client XRANGE loops")
    r1 = cluster.replicas[0]
    xc = Client("127.0.0.1", r1.port)
    x_loop = [loop_rate(xc, n, args.fetch) for _ in range(args.runs)]
    r_loop = [loop_rate(redis_node.client, n, args.fetch) for _ in range(args.runs)]

    progress("server cost per entry of the source's pages and of XRANGE pages")
    costs = server_costs(args, r1.proc.popen.pid, r1.address, redis_node)

    spark = start_spark()
    try:
        pids = [r.proc.popen.pid for r in cluster.replicas]
        counts, groups, served, spent = spark_rates(spark, args, replicas, xc, pids)
    finally:
        spark.stop()
    xc.close()
    return SparkFigures(counts, groups, x_loop, r_loop, served, spent, costs)


def start_spark() -> Any:
    """local[2], tried twice: on a busy machine the JVM now and then exits before it tells
    PySpark its port (JAVA_GATEWAY_EXITED), and a second launch then starts."""
    for attempt in (1, 2):
        progress("spark: starting local[2]")
        try:
            # The full JIT (no quick_start): C1-only code would slow the measured runs.
            return session.local("xstream-spark-bench", memory="4g")
        except PySparkRuntimeError as e:
            if attempt == 2 or "JAVA_GATEWAY_EXITED" not in str(e):
                raise
            progress(f"  the JVM did not start ({e}); once more")
    raise AssertionError("unreachable")


def report(args: argparse.Namespace, fig: SparkFigures) -> None:
    def fmt(vals: list[float]) -> str:
        return f"best {max(vals):>10,.0f}  median {statistics.median(vals):>10,.0f} rows/s"

    print(
        f"\nSpark batch read of {args.entries:,} entries from 2 replicas ({args.partitions} "
        f"partitions, fetch {args.fetch:,}), this machine ({os.cpu_count()} cores)"
    )
    print(f"  spark count()                 {fmt(fig.counts)}")
    print(f"  spark groupBy(action).count() {fmt(fig.groups)}")
    print(f"  xstream Client XRANGE loop    {fmt(fig.x_loop)}")
    print(f"  redis-py XRANGE loop (redis)  {fmt(fig.r_loop)}")
    cores = os.cpu_count() or 1
    print(f"  replicas' CPU per row, count() best {min(fig.served):.2f} us")
    bound = cores * 1e6 / min(fig.spent)
    print(f"  all processes' CPU per row, count() best {min(fig.spent):.2f} us (JVM, Python")
    print(f"    workers, nodes): {cores} idle cores would give at most {bound:,.0f} rows/s")
    print(f"  spark count / xstream loop    {max(fig.counts) / max(fig.x_loop):.2f}x")
    print(f"  spark count / redis loop      {max(fig.counts) / max(fig.r_loop):.2f}x")
    print(f"  xstream loop / redis loop     {max(fig.x_loop) / max(fig.r_loop):.2f}x")
    print("\n" + "\n".join(fig.costs))


if __name__ == "__main__":
    raise SystemExit(main())
