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

and prints rows/s with the ratios spark/loop and xstream-loop/redis-loop.
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
from service_bench import KEY, Procs, XCluster, progress, start_redis

from xstream.client import Client
from xstream.pipeline import session


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


def spark_rates(
    spark: Any, args: argparse.Namespace, replicas: str, xc: Client
) -> tuple[list[float], list[float]]:
    """count() and groupBy rates of --runs Spark reads of the whole stream, in rows/s."""
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
    counts, groups = [], []
    for i in range(args.runs):
        t0 = time.perf_counter()
        got = reader().count()
        counts.append(n / (time.perf_counter() - t0))
        if got != n:
            raise RuntimeError(f"spark count() = {got}, expected {n}")
        t0 = time.perf_counter()
        df = reader()
        rows = df.groupBy(df.fields["action"]).count().collect()
        groups.append(n / (time.perf_counter() - t0))
        progress(f"  run {i + 1}: count {counts[-1]:,.0f} rows/s, groupBy {groups[-1]:,.0f} rows/s")
        assert rows[0][1] == n
    return counts, groups


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

    spark = start_spark()
    try:
        counts, groups = spark_rates(spark, args, replicas, xc)
    finally:
        spark.stop()
    xc.close()
    return SparkFigures(counts, groups, x_loop, r_loop)


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
    print(f"  spark count / xstream loop    {max(fig.counts) / max(fig.x_loop):.2f}x")
    print(f"  spark count / redis loop      {max(fig.counts) / max(fig.r_loop):.2f}x")
    print(f"  xstream loop / redis loop     {max(fig.x_loop) / max(fig.r_loop):.2f}x")


if __name__ == "__main__":
    raise SystemExit(main())
