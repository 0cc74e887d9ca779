"""Every row of issue 15's table in one run, each against a redis-server started side by side.

Run by hand, never by the test suite:

    .venv/bin/python benchmarks/issue15.py                 # 1M entries (about 15 minutes)
    .venv/bin/python benchmarks/issue15.py --quick         # 100k entries (about 3 minutes)
    .venv/bin/python benchmarks/issue15.py --parts memory,xrange

Five parts run one after the other. Each starts its own xstream side and redis-server side
on free loopback ports (data in a temporary directory, both with fsync / appendfsync
everysec) and stops them before the next part starts, so that no part's servers load
another's figures. Every process of a part (servers, replicas, clients, redis-benchmark,
Spark) shares this machine's cores: nproc and the load average are printed at the start
and at the end of each part, and again beside the table.

  ingest  service_bench.py --measures resync: N entries into a primary with 2 replicas by
          streamed Ingest batches (the best of --ingest-configs, each BATCHxCLIENTS on a fresh
          cluster), time until both replicas acked the last offset; vs redis-benchmark -P 64
          XADD into a redis-server with 1 replica, time until the replica's offset equals the
          primary's. Then the same N through `Client.xadd_many` with 1,000-row batches of dicts
          of str (what a Python user writes; one client process) on another fresh cluster, vs
          the same redis figure. Replica lag under the headline ingest: both primaries' and
          replicas' offsets polled every 10 ms alike (sides.OffsetSampler), p50 / p99 of the
          time from the primary being read at an offset to the worse replica being read past
          it (the xstream replicas' own apply_lag p50 / p99 in the notes). Full resync: a fresh
          replica of each primary holding the N entries, spawn -> offsets equal.
  resync  service_bench.py --measures resync again with 3N entries (ingest 16000x1), both
          sides: the same resync row where the sync outweighs the replica process's start.
  memory  memory_bench.py, lone primaries: RSS (VmRSS, once quiet) idle, after N and after 3N
          entries of 3 small fields loaded by redis-py pipelines of 1,000; growth per entry over
          the first N, marginal per entry from N to 3N, the idle RSS and what it is (private
          and file-backed, and the mappings holding most of it).
  xrange  here: N entries in a lone primary of each; one redis-py client pages through them
          with `XRANGE key (last-id + COUNT 10000`, pass after pass until the server used
          --xrange-cpu seconds of CPU or --xrange-wall seconds went by; the server's CPU
          (user + system, /proc/PID/stat) per entry returned. xstream twice: on its RESP port
          (the same client and command as redis-server's) and on its gRPC edge
          (Client.xrange, the Spark source's path).
  spark   spark_bench.py: N entries in a primary with 2 replicas; spark.read.format("xstream")
          from both replicas in local[2], count(), best of --spark-runs, rows/s. Redis has no
          Spark source: beside it redis-py paging XRANGE COUNT 10000 on a redis-server holding
          the same entries, as spark_bench.py does; the target is absolute (>= 500k rows/s).

Then one markdown table: Measure | xstream | redis | ratio | target | met?. ratio is
xstream / redis (rates: higher is better; times, bytes and CPU: lower is better); met? says
whether the target holds (a ratio target on the ratio, an absolute one on xstream's figure).
A part that fails is reported as such and the others still run (exit status 1).
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import memory_bench
import redis
import service_bench
from sides import (
    Procs,
    RedisSide,
    Row,
    Side,
    Target,
    XstreamSide,
    cpu_seconds,
    fill,
    machine,
    print_table,
    ratio_at_least,
    ratio_at_most,
)

from xstream.client import Client

PAGE = 10_000  # XRANGE COUNT of the xrange part (and the Spark part's fetch size)
Pager = Callable[[Any], Sequence[Any] | None]  # XRANGE key <start> + COUNT PAGE -> entries


# -- parts and the closing table ---------------------------------------------------------------


@dataclass
class Part:
    name: str
    what: str  # the script it reuses
    start: str = ""  # machine() when it started
    end: str = ""
    seconds: float = 0.0
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str = ""


def print_parts(parts: list[Part]) -> None:
    """The table of every part's rows (a failed part: one row saying so), then each part's
    load and notes."""
    rows: list[Row] = []
    for part in parts:
        if part.error:
            rows.append(Row(f"{part.name}: FAILED ({part.error})", None, None, ""))
        rows += part.rows
    print_table(rows)
    for part in parts:
        print(
            f"\n{part.name} ({part.what}, {part.seconds:.0f} s): at the start {part.start}; "
            f"at the end {part.end}"
        )
        for note in part.notes:
            print(f"  - {note}")


# -- part 1: ingest, lag, full resync (service_bench.py) ---------------------------------------


def lag_label(lag: tuple[float, float] | None) -> str:
    return "-" if lag is None else f"{lag[0]:.0f} / {lag[1]:.0f} ms"


def ingest_part(args: argparse.Namespace, part: Part) -> None:
    n = args.entries
    sargs = service_bench.parse_args(
        ["--entries", str(n), "--measures", "resync", "--ingest-configs", args.ingest_configs]
    )
    client_args = copy.copy(sargs)
    client_args.ingest_build = "client"
    with service_bench.workspace(keep=False) as workdir:
        # the nodes' bytecode cached, as service_bench runs them (node_env: as installed)
        procs = Procs(workdir, service_bench.node_env(workdir, sargs.bytecode_cache))
        try:
            theirs = service_bench.run_redis(procs, workdir, sargs)
            mine = service_bench.run_xstream(procs, workdir, sargs)
            cluster, by_client = service_bench.ingest_on_fresh_cluster(
                procs, workdir, "xadd-many", 1000, 1, client_args
            )
            cluster.close()
        finally:
            procs.stop_all()
    best = mine.best
    rate = "/s"
    part.rows += [
        Row(
            f"Batched ingest of {n:,}, primary + 2 replicas caught up (Ingest, {best.config}) vs "
            "redis-benchmark -P 64 XADD + 1 replica",
            best.rate,
            theirs.ingest_caught_up,
            rate,
            ratio_at_least(1.0),
        ),
        Row(
            "The same through `Client.xadd_many`, 1,000-row batches of dicts",
            by_client.rate,
            theirs.ingest_caught_up,
            rate,
            ratio_at_least(0.7),
        ),
        Row(
            f"Replica lag p50 / p99 under that load (worse replica; {best.config})",
            best.sampled_lag[1],
            theirs.lag[1] if theirs.lag else None,
            "ms",
            Target("p99 <= 150 ms", bound=150.0),
            label_mine=lag_label(best.sampled_lag),
            label_theirs=lag_label(theirs.lag),
        ),
        Row(
            f"Full resync of {n:,} entries, spawn -> offsets equal",
            mine.resync_s,
            theirs.resync_s,
            "s",
            ratio_at_most(1.0),
        ),
    ]
    applied = (max(best.apply_p50), max(best.apply_p99))
    part.notes += [
        "ingest configs (BATCHxCLIENTS, replicas caught up): "
        + ", ".join(f"{r.config} {r.rate:,.0f}/s" for r in mine.ingest)
        + f"; primary acked {best.primary_rate:,.0f}/s vs redis-benchmark {theirs.ingest_rps:,.0f}"
        " req/s",
        f"Client.xadd_many: primary acked {by_client.primary_rate:,.0f}/s; replica lag p50 / p99 "
        f"under it {lag_label(by_client.sampled_lag)}; the client's CPU "
        f"{by_client.client_cpu_s / n * 1e6:.2f} µs/entry",
        f"lag: the xstream replicas' own apply_lag p50 / p99 {lag_label(applied)}; the primary's "
        f"lag_ms max {best.max_lag_ms}",
        f"resync: of xstream's, {mine.resync_start_s:.2f} s the process starting (spawn -> "
        f"replica_ready, its log), {mine.resync_inner_s:.2f} s in the replica's own sync "
        "(replica_ready -> full_sync_done)",
    ]
    if not mine.digests_ok:
        raise RuntimeError("a replica's digest differed from the primary's after the ingest")


# -- part 1b: the full resync at 3N (service_bench.py) -----------------------------------------


def resync_part(args: argparse.Namespace, part: Part) -> None:
    """The resync row again with 3N entries, where the sync outweighs the replica process's
    start (a fixed ~0.15 s of interpreter and imports that redis-server does not pay)."""
    n = 3 * args.entries
    sargs = service_bench.parse_args(
        ["--entries", str(n), "--measures", "resync", "--ingest-configs", "16000x1"]
    )
    with service_bench.workspace(keep=False) as workdir:
        procs = Procs(workdir, service_bench.node_env(workdir, sargs.bytecode_cache))
        try:
            theirs = service_bench.run_redis(procs, workdir, sargs)
            mine = service_bench.run_xstream(procs, workdir, sargs)
        finally:
            procs.stop_all()
    part.rows.append(
        Row(
            f"Full resync of {n:,} entries (3N), spawn -> offsets equal",
            mine.resync_s,
            theirs.resync_s,
            "s",
            Target("said: how the row scales"),
        )
    )
    part.notes.append(
        f"resync of 3N: of xstream's, {mine.resync_start_s:.2f} s the process starting, "
        f"{mine.resync_inner_s:.2f} s in the replica's own sync"
    )


# -- part 2: resident memory (memory_bench.py) -------------------------------------------------


def memory_part(args: argparse.Namespace, part: Part) -> None:
    margs = argparse.Namespace(scale=args.entries / 1e6, xstream_args=[])
    points = memory_bench.run(margs, 0)
    n1, n3 = int(1_000_000 * margs.scale), int(3_000_000 * margs.scale)
    x, r = points["xstream"], points["redis"]
    (x1, x3), (r1, r3) = x.growth(0, n1, n3), r.growth(0, n1, n3)
    grown = " B/entry"
    part.rows += [
        Row(
            f"RSS growth over the first {n1:,} entries (3 small fields)",
            x1,
            r1,
            grown,
            ratio_at_most(1.2),
            label_mine=f"+{x.at1[0] - x.idle[0]:.0f} MB, {x1:.0f} B/entry",
            label_theirs=f"+{r.at1[0] - r.idle[0]:.0f} MB, {r1:.0f} B/entry",
        ),
        Row(f"Marginal RSS per entry, {n1:,} -> {n3:,} entries", x3, r3, grown, ratio_at_most(1.0)),
        Row(
            "RSS of an idle node (a lone primary; what it is: below)",
            x.idle[0],
            r.idle[0],
            "MB",
            Target("say what it is (notes)"),
        ),
    ]
    part.notes += [
        f"xstream idle {x.idle[0]:.1f} MB: {x.idle_what}",
        f"redis idle {r.idle[0]:.1f} MB: {r.idle_what}",
        f"peak RSS (VmHWM) at {n3:,}: xstream {x.peak[0]:.0f} MB, redis {r.peak[0]:.0f} MB; "
        "memory_breakdown.py takes the primary's heap apart",
    ]


# -- part 3: server CPU of XRANGE per entry (here) ---------------------------------------------


def page_through(xrange: Pager) -> int:
    """Entries returned paging through the stream, XRANGE (last-id + COUNT PAGE at a time."""
    start: Any = "-"
    seen = 0
    while True:
        page = xrange(start) or []
        seen += len(page)
        if len(page) < PAGE:
            return seen
        last = page[-1][0]
        start = "(" + (last.decode() if isinstance(last, bytes) else last)


def resp_pager(r: redis.Redis, key: str) -> Pager:
    return lambda start: r.xrange(key, start, "+", count=PAGE)


def server_us_per_entry(
    pid: int, xrange: Pager, n: int, args: argparse.Namespace
) -> tuple[float, str]:
    """The server's CPU µs per entry returned, paging again until it used --xrange-cpu seconds
    of CPU or --xrange-wall seconds went by (/proc counts 10 ms ticks: more CPU, finer)."""
    cpu, wall = args.xrange_cpu, args.xrange_wall
    before, t0 = cpu_seconds(pid), time.monotonic()
    passes = 0
    while True:
        if page_through(xrange) != n:
            raise RuntimeError(f"paged through a stream of {n} entries and got another count")
        passes += 1
        used = cpu_seconds(pid) - before
        if used >= cpu or time.monotonic() - t0 >= wall:
            us = used / (n * passes) * 1e6
            how = f"{passes} passes, {used:.2f} s CPU in {time.monotonic() - t0:.1f} s"
            print(f"xrange: {us:.2f} µs per entry ({how})", flush=True)
            return us, how


@contextmanager
def lone_primaries(tmp: Path) -> Iterator[tuple[XstreamSide, RedisSide]]:
    sides: list[Side] = []
    try:
        xs = XstreamSide(tmp, [])
        sides.append(xs)
        rs = RedisSide(tmp)
        sides.append(rs)
        yield xs, rs
    finally:
        for side in sides:
            side.stop()


def xrange_part(args: argparse.Namespace, part: Part) -> None:
    n, key = args.entries, "xr"
    with (
        tempfile.TemporaryDirectory(prefix="issue15-xrange-") as d,
        lone_primaries(Path(d)) as (xs, rs),
    ):
        for side in (xs, rs):
            took = fill(side.port, key, 0, n)
            print(f"xrange: {side.name}: {n:,} entries loaded in {took:.1f} s", flush=True)
        figures: dict[str, tuple[float, str]] = {}
        for name, side in (("redis", rs), ("xstream resp", xs)):
            r = redis.Redis(port=side.port)
            figures[name] = server_us_per_entry(side.procs[0].pid, resp_pager(r, key), n, args)
            r.close()
        client = Client("127.0.0.1", xs.grpc)
        figures["xstream grpc"] = server_us_per_entry(
            xs.procs[0].pid, lambda s: client.xrange(key, s, "+", count=PAGE), n, args
        )
        client.close()
    us = "µs"
    redis_us = figures["redis"][0]
    part.rows += [
        Row(
            f"Server CPU of XRANGE per entry returned, {PAGE:,}-entry pages (RESP port, redis-py)",
            figures["xstream resp"][0],
            redis_us,
            us,
            Target("<= 1 µs", bound=1.0),
        ),
        Row(
            "The same on the gRPC edge (Client.xrange; redis: RESP as above)",
            figures["xstream grpc"][0],
            redis_us,
            us,
            Target("<= 1 µs", bound=1.0),
        ),
    ]
    part.notes += [f"{name}: {how}" for name, (_, how) in figures.items()]


# -- part 4: Spark batch read (spark_bench.py) -------------------------------------------------


def spark_part(args: argparse.Namespace, part: Part) -> None:
    import spark_bench  # noqa: PLC0415 (pyspark only when this part runs)

    spargs = spark_bench.parse_args(
        ["--entries", str(args.entries), "--runs", str(args.spark_runs), "--fetch", str(PAGE)]
    )
    with tempfile.TemporaryDirectory(prefix="issue15-spark-") as tmp:
        procs = Procs(Path(tmp))
        try:
            fig = spark_bench.run(spargs, procs, Path(tmp))
        finally:
            procs.stop_all()
    spark_bench.report(spargs, fig)
    part.rows.append(
        Row(
            f"Spark batch read of {args.entries:,} entries from 2 replicas, count() (redis: "
            "redis-py paging XRANGE; no Spark source)",
            max(fig.counts),
            max(fig.r_loop),
            " rows/s",
            Target(">= 500k rows/s", at_least=True, bound=500_000.0),
        )
    )
    part.notes.append(
        f"best of {args.spark_runs}: groupBy(fields['action']).count() {max(fig.groups):,.0f} "
        f"rows/s; xstream Client paging XRANGE on a replica {max(fig.x_loop):,.0f} rows/s"
    )


# -- the run -----------------------------------------------------------------------------------

PARTS: dict[str, tuple[str, Callable[[argparse.Namespace, Part], None]]] = {
    "ingest": ("service_bench.py", ingest_part),
    "resync": ("service_bench.py", resync_part),
    "memory": ("memory_bench.py", memory_part),
    "xrange": ("issue15.py", xrange_part),
    "spark": ("spark_bench.py", spark_part),
}


def run_part(name: str, args: argparse.Namespace) -> Part:
    what, run = PARTS[name]
    part = Part(name, what, start=machine())
    print(f"\n=== part {name} ({what}): {part.start}", flush=True)
    t0 = time.monotonic()
    try:
        run(args, part)
    except Exception as e:  # the other parts still run; the table says which failed
        traceback.print_exc()
        part.error = f"{type(e).__name__}: {e}"
    part.seconds = time.monotonic() - t0
    part.end = machine()
    print(f"=== part {name} done in {part.seconds:.0f} s: {part.end}", flush=True)
    return part


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--quick",
        action="store_true",
        help="100,000 entries, 1 Spark run, less CPU per XRANGE figure (~3 min)",
    )
    p.add_argument(
        "--entries",
        type=int,
        default=1_000_000,
        help="N of every part (default 1M; memory: N then 3N)",
    )
    p.add_argument(
        "--parts",
        default=",".join(PARTS),
        help=f"which parts, in order (default {','.join(PARTS)})",
    )
    p.add_argument(
        "--ingest-configs",
        default="4000x1,16000x1,4000x2",
        help="BATCHxCLIENTS of the Ingest runs, best shown (default 4000x1,16000x1,4000x2)",
    )
    p.add_argument("--spark-runs", type=int, default=3, help="Spark reads, best shown (default 3)")
    p.add_argument(
        "--xrange-cpu",
        type=float,
        default=1.0,
        help="server CPU seconds per XRANGE figure, at least (default 1)",
    )
    p.add_argument(
        "--xrange-wall",
        type=float,
        default=30.0,
        help="seconds per XRANGE figure, at most (default 30)",
    )
    args = p.parse_args(argv)
    args.parts = [w.strip() for w in args.parts.split(",") if w.strip()]
    unknown = set(args.parts) - set(PARTS)
    if unknown:
        p.error(f"unknown parts {','.join(sorted(unknown))}: expected some of {','.join(PARTS)}")
    if args.quick:
        args.entries = min(args.entries, 100_000)
        args.spark_runs = 1
        args.xrange_cpu, args.xrange_wall = min(args.xrange_cpu, 0.5), min(args.xrange_wall, 15)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(
        f"issue 15's table, {args.entries:,} entries; parts {','.join(args.parts)}; "
        f"{machine()}; python {sys.version.split()[0]}",
        flush=True,
    )
    parts = [run_part(name, args) for name in args.parts]
    print_parts(parts)
    return 1 if any(p.error for p in parts) else 0


if __name__ == "__main__":
    sys.exit(main())
