"""The example pipeline: per-minute aggregates of an `events` stream, to a stream and Parquet.

    events  {user_id, action, amount}         (read in parallel from the replicas)
      -> minute = ms // 60000 * 60000
      -> per (minute, action): events, users (distinct user_id), amount (sum)
      -> XADD into `events_per_minute` on the primary (idempotent) and Parquet files

Batch by default; `--streaming` runs it as a Structured Streaming query with
trigger(availableNow=True) and a checkpoint, so running it again processes only new entries
(its per-minute rows are then partial aggregates of each run's new events). `--generate N`
first appends N random-looking (deterministic) events, for trying it on an empty cluster.
Progress goes to stderr, a line as each step starts (ending in "...") and as it ends, with
the time since start, so no wait is silent (Spark's start-up is a third to a half of a run);
the batch run prints its per-minute rows as a table on stdout. Spark's own logging is at
WARN (`--verbose`: INFO).

    python -m xstream.pipeline.example --primary 127.0.0.1:7700 \
        --replicas 127.0.0.1:7701,127.0.0.1:7702 --generate 100000 --parquet out/minutes
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

SHOW_ROWS = 20  # the batch run prints its first per-minute rows as a table
PROGRESS_EVERY = 5.0  # seconds between progress lines of a long --generate


def _progress(msg: str, t0: float) -> None:
    sys.stderr.write(f"[{time.monotonic() - t0:7.1f}s] {msg}\n")
    sys.stderr.flush()


def generate(primary: str, stream: str, n: int, t0: float) -> None:
    from xstream.client import Client  # noqa: PLC0415

    _progress(f"generate: writing {n:,} events to {stream!r} on {primary}...", t0)
    host, port = primary.rsplit(":", 1)
    c = Client(host, int(port))
    actions = ("click", "view", "buy", "share")
    done, start = 0, time.monotonic()
    shown = start
    while done < n:
        k = min(10_000, n - done)
        c.xadd_many(
            stream,
            [
                {
                    "user_id": str((i * 7919) % 1000),
                    "action": actions[i % 4],
                    "amount": str((i * 31) % 100),
                }
                for i in range(done, done + k)
            ],
        )
        done += k
        if time.monotonic() - shown >= PROGRESS_EVERY and done < n:
            shown = time.monotonic()
            _progress(f"generate: {done:,} of {n:,} events written", t0)
    c.close()
    rate = n / max(time.monotonic() - start, 1e-3)
    _progress(f"generate: {n:,} events written ({rate:,.0f}/s)", t0)


def aggregate(df: Any) -> Any:
    from pyspark.sql import functions as F  # noqa: N812, PLC0415

    return (
        df.select(
            (F.col("ms") - F.col("ms") % 60_000).alias("minute"),
            F.col("fields")["action"].alias("action"),
            F.col("fields")["user_id"].alias("user_id"),
            F.col("fields")["amount"].cast("double").alias("amount"),
        )
        .groupBy("minute", "action")
        .agg(
            F.count("*").alias("events"),
            F.approx_count_distinct("user_id").alias("users"),
            F.sum("amount").alias("amount"),
        )
    )


def _events(reader: Any, args: argparse.Namespace) -> Any:
    """The input stream on a (batch or streaming) reader: read from the replicas, with the
    primary giving the freshest end."""
    return (
        reader.format("xstream")
        .option("streams", args.stream)
        .option("primary", args.primary)
        .option("replicas", args.replicas or "")
    )


def run_batch(spark: Any, args: argparse.Namespace, t0: float) -> None:
    _progress(f"read: planning the read of {args.stream!r} from {_sources(args)}...", t0)
    df = _events(spark.read, args).load()
    _progress(f"read: {df.rdd.getNumPartitions()} partitions", t0)
    _progress("aggregate: events, users and amount per minute and action...", t0)
    minutes = aggregate(df).cache()
    n = minutes.count()
    _progress(f"aggregate: {n:,} rows", t0)
    _progress(f"parquet: writing {args.parquet}...", t0)
    minutes.write.mode("overwrite").parquet(args.parquet)
    _progress(f"stream: appending {n:,} rows to {args.out!r} on {args.primary}...", t0)
    (
        minutes.write.format("xstream")
        .option("primary", args.primary)
        .option("streams", args.out)
        .mode("append")
        .save()
    )
    minutes.orderBy("minute", "action").show(SHOW_ROWS, truncate=False)


def _sources(args: argparse.Namespace) -> str:
    sources: str = args.replicas or args.primary
    return sources


def run_streaming(spark: Any, args: argparse.Namespace, t0: float) -> None:
    df = (
        _events(spark.readStream, args)
        .option("startingOffsets", "earliest")
        .option("maxRecordsPerBatch", str(args.max_records))
        .load()
    )

    def sink(batch: Any, batch_id: int) -> None:
        minutes = aggregate(batch).cache()
        minutes.write.mode("append").parquet(args.parquet)
        (
            minutes.write.format("xstream")
            .option("primary", args.primary)
            .option("streams", args.out)
            .option("writeId", f"example-{args.checkpoint}-{batch_id}")
            .mode("append")
            .save()
        )
        _progress(f"batch {batch_id}: {minutes.count()} per-minute rows written", t0)

    _progress(f"streaming: an availableNow query on {args.stream!r} from {_sources(args)}", t0)
    q = (
        df.writeStream.foreachBatch(sink)
        .option("checkpointLocation", args.checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    while q.isActive:
        p = q.lastProgress
        if p:
            _progress(f"progress: batch {p['batchId']}, {p['numInputRows']} input rows", t0)
        time.sleep(2)
    q.awaitTermination()
    _progress("streaming: caught up (availableNow)", t0)


DESCRIPTION = (
    "Per-minute aggregates per action of an events stream, written to a new stream and to "
    "Parquet, with Spark and the xstream data source."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--primary", default="127.0.0.1:7700", help="the primary's HOST:PORT")
    p.add_argument("--replicas", default="127.0.0.1:7701,127.0.0.1:7702", help="read from these")
    p.add_argument("--stream", default="events", help="input stream (default events)")
    p.add_argument("--out", default="events_per_minute", help="output stream")
    p.add_argument("--parquet", default="out/events_per_minute", help="Parquet output folder")
    p.add_argument("--generate", type=int, default=0, help="first append N example events")
    p.add_argument("--streaming", action="store_true", help="run as an availableNow stream")
    p.add_argument("--checkpoint", default="out/checkpoint", help="streaming checkpoint folder")
    p.add_argument("--max-records", type=int, default=100_000, help="entries per micro-batch")
    p.add_argument("--verbose", action="store_true", help="Spark's own logging at INFO")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m xstream.pipeline.example", description=DESCRIPTION)
    add_arguments(p)
    return run(p.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    if args.generate:
        generate(args.primary, args.stream, args.generate, t0)
    from pyspark.sql import SparkSession  # noqa: PLC0415

    from xstream.pipeline import session  # noqa: PLC0415

    spark = SparkSession.getActiveSession()  # embedded (tests): use it and leave it running
    own = spark is None
    if spark is None:
        _progress("spark: starting a local session (a JVM: ~10 s, up to ~30 s on a slow or "
                  "first start)...", t0)  # fmt: skip
        spark = session.local("xstream-example", quick_start=True, verbose=args.verbose)
        _progress(f"spark: {spark.sparkContext.master} on {session.LOOPBACK} ready", t0)
    try:
        (run_streaming if args.streaming else run_batch)(spark, args, t0)
    finally:
        if own:
            spark.stop()
    _progress(f"done in {time.monotonic() - t0:.1f} s", t0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
