"""The RESP port vs a real redis-server started side by side: issue 13's four measures, ratios.

Run by hand, never by the test suite:

    .venv/bin/python benchmarks/resp_bench.py            # 100,000 requests per measure
    .venv/bin/python benchmarks/resp_bench.py -n 20000   # shorter
    .venv/bin/python benchmarks/resp_bench.py --event-loop asyncio   # the node without uvloop

Both sides are started by this script on free loopback ports, data in a temporary directory,
and stopped before it exits: a primary of each, with appendfsync everysec (the same
durability as xstream's log). Measures, each on a fresh stream, alternating xstream and Redis
so that both see the same machine:

  1. redis-benchmark -c 1 -P 1 XADD           one connection, one request at a time
  2. redis-benchmark -c 1 XRANGE COUNT 100    a stream of 1,000 entries (3 small fields)
  3. redis-py `xadd`, unary, from this process
  then two replicas are attached to each primary (xstream's over gRPC, `xstream replica`;
  Redis's with --replicaof) and, once they are in sync,
  4. redis-benchmark -c 8 -P 16 XADD          8 connections, 16 requests in flight on each
  5. redis-benchmark -c 1 -P 1 XADD           again, every write now shipped to two replicas

Printed per measure: requests per second of each side, xstream / redis, each primary's CPU
time per request (user + system, from /proc), which moves less with other load than the rates
do, and with replicas attached each side's mean replica CPU per request (counted until the
replicas caught up). Every process shares this machine's cores: the load average is printed
first and last; a busy machine lowers both sides, not always alike.
"""

from __future__ import annotations

import argparse
import csv
import io
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import redis
from redis.typing import EncodableT, FieldT
from sides import RedisSide, Side, XstreamSide, cpu_seconds, fill, machine, wait_for

FIELDS = ["user_id", "__rand_int__", "action", "click", "amount", "42"]


def redis_benchmark(port: int, n: int, clients: int, pipeline: int, command: list[str]) -> float:
    cmd = ["redis-benchmark", "-p", str(port), "-n", str(n), "-c", str(clients),
           "-P", str(pipeline), "--csv", *command]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=900).stdout
    rows = list(csv.reader(io.StringIO(out)))
    return float(rows[-1][1])


def redis_py_unary(port: int, n: int, key: str) -> float:
    r = redis.Redis(port=port)
    fields: dict[FieldT, EncodableT] = {
        "user_id": "123456789012",
        "action": "click",
        "amount": "42",
    }
    start = time.perf_counter()
    for _ in range(n):
        r.xadd(key, fields)
    elapsed = time.perf_counter() - start
    r.close()
    return n / elapsed


Measure = tuple[str, int, Callable[[Side, str, int], float]]


def unary_xadd(s: Side, key: str, k: int) -> float:
    return redis_benchmark(s.port, k, 1, 1, ["XADD", key, "*", *FIELDS])


def measures(n: int) -> tuple[list[Measure], list[Measure]]:
    """(name, requests, run(side, key, requests) -> requests per second): on the lone
    primaries, then with two replicas attached."""
    alone: list[Measure] = [
        ("redis-benchmark -c 1 -P 1 XADD", n // 2, unary_xadd),
        ("redis-benchmark -c 1 XRANGE COUNT 100", n // 5,
         lambda s, key, k: redis_benchmark(s.port, k, 1, 1,
                                           ["XRANGE", "benchr", "-", "+", "COUNT", "100"])),
        ("redis-py xadd (unary)", n // 5, lambda s, key, k: redis_py_unary(s.port, k, key)),
    ]  # fmt: skip
    replicated: list[Measure] = [
        ("redis-benchmark -c 8 -P 16 XADD, 2 replicas", n * 5,
         lambda s, key, k: redis_benchmark(s.port, k, 8, 16, ["XADD", key, "*", *FIELDS])),
        ("redis-benchmark -c 1 -P 1 XADD, 2 replicas", n // 2, unary_xadd),
    ]  # fmt: skip
    return alone, replicated


def run_measure(
    side: Side, run: Callable[[Side, str, int], float], key: str, k: int
) -> tuple[float, float, float]:
    """(requests per second, primary CPU microseconds per request, the replicas' mean CPU
    microseconds per request, counted until they caught up: 0 without replicas)."""
    before = [cpu_seconds(p.pid) for p in side.procs]
    rate = run(side, key, k)
    primary = (cpu_seconds(side.procs[0].pid) - before[0]) / k * 1e6
    if len(side.procs) == 1:
        return rate, primary, 0.0
    wait_for(f"{side.name}'s replicas caught up", side.replicas_caught_up, 120)
    spent = [cpu_seconds(p.pid) - b for p, b in zip(side.procs[1:], before[1:], strict=True)]
    return rate, primary, sum(spent) / len(spent) / k * 1e6


def report(sides: list[XstreamSide | RedisSide], measure: Measure, key: str) -> None:
    name, k, run = measure
    rx, cx, qx = run_measure(sides[0], run, key, k)
    rr, cr, qr = run_measure(sides[1], run, key, k)
    print(f"{name:44} {rx:10,.0f} {rr:10,.0f} {rx / rr:6.2f} {cx:13.1f} {cr:6.1f}"
          f" {qx:13.1f} {qr:6.1f}", flush=True)  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-n", type=int, default=100_000, help="scale: requests per measure")
    p.add_argument("--event-loop", default="auto", help="the xstream nodes' --event-loop")
    args = p.parse_args()
    print(machine(), flush=True)
    with tempfile.TemporaryDirectory(prefix="resp-bench-") as d:
        tmp = Path(d)
        sides: list[XstreamSide | RedisSide] = []
        try:
            sides.append(XstreamSide(tmp, ["--event-loop", args.event_loop]))
            sides.append(RedisSide(tmp))
            for side in sides:
                fill(side.port, "benchr", 0, 1000)
            print(f"{'measure':44} {'xstream/s':>10} {'redis/s':>10} {'ratio':>6} "
                  f"{'cpu us/req x':>13} {'r':>6} {'replica us x':>13} {'r':>6}")  # fmt: skip
            alone, replicated = measures(args.n)
            for i, measure in enumerate(alone):
                report(sides, measure, f"alone{i}")
            for side in sides:
                side.attach_replicas(2)
            for i, measure in enumerate(replicated):
                report(sides, measure, f"replicated{i}")
            for side in sides:
                wait_for(f"{side.name}'s replicas caught up", side.replicas_caught_up, 120)
        finally:
            for side in sides:
                side.stop()
    print(f"at the end: {machine()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
