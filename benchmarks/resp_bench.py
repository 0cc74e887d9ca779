"""The RESP port vs a real redis-server started side by side: XADD throughput, ratios.

Run by hand, never by the test suite:

    .venv/bin/python benchmarks/resp_bench.py            # 100,000 requests per measure
    .venv/bin/python benchmarks/resp_bench.py -n 20000   # shorter

Both servers are started by this script on free loopback ports, data in a temporary
directory, and stopped before it exits: `xstream primary --resp-port P --fsync everysec`
(no replicas) and `redis-server --appendonly yes --appendfsync everysec` (the same
durability as xstream's log). Measures, each on a fresh stream:

  1. redis-benchmark -c 1 -P 1 XADD     one connection, one request at a time
  2. redis-benchmark -c 8 -P 16 XADD    8 connections, 16 requests in flight on each
  3. redis-py `xadd`, unary, from this process

Printed: requests per second of each server, and xstream / redis.
"""

from __future__ import annotations

import argparse
import csv
import io
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ping(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"server on {port} exited with {proc.returncode}"
        try:
            if redis.Redis(port=port, socket_timeout=1).ping():
                return
        except redis.exceptions.ConnectionError:
            time.sleep(0.05)
    raise RuntimeError(f"no PONG on port {port} within {timeout} s")


def start_xstream(tmp: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    cmd = [sys.executable, "-m", "xstream.cli", "primary", "--port", str(free_port()),
           "--resp-port", str(port), "--data-dir", str(tmp / "xstream"), "--fsync", "everysec",
           "--log-level", "warning"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    wait_ping(port, proc)
    return proc, port


def start_redis(tmp: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    (tmp / "redis").mkdir()
    cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
           "--appendonly", "yes", "--appendfsync", "everysec",
           "--dir", str(tmp / "redis")]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    wait_ping(port, proc)
    return proc, port


def redis_benchmark(port: int, n: int, clients: int, pipeline: int, key: str) -> float:
    cmd = ["redis-benchmark", "-p", str(port), "-n", str(n), "-c", str(clients),
           "-P", str(pipeline), "--csv", "XADD", key, "*", "user_id", "__rand_int__",
           "action", "click", "amount", "42"]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600).stdout
    rows = list(csv.reader(io.StringIO(out)))
    return float(rows[-1][1])


def redis_py_unary(port: int, n: int, key: str) -> float:
    r = redis.Redis(port=port)
    fields = {"user_id": "123456789012", "action": "click", "amount": "42"}
    start = time.perf_counter()
    for _ in range(n):
        r.xadd(key, fields)
    elapsed = time.perf_counter() - start
    r.close()
    return n / elapsed


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-n", type=int, default=100_000, help="requests per measure")
    args = p.parse_args()
    n = args.n
    measures = [
        ("redis-benchmark -c 1 -P 1 XADD", lambda port, key: redis_benchmark(port, n, 1, 1, key)),
        ("redis-benchmark -c 8 -P 16 XADD", lambda port, key: redis_benchmark(port, n, 8, 16, key)),
        ("redis-py xadd (unary)", lambda port, key: redis_py_unary(port, n // 5, key)),
    ]
    with tempfile.TemporaryDirectory(prefix="resp-bench-") as d:
        tmp = Path(d)
        procs = []
        try:
            xproc, xport = start_xstream(tmp)
            procs.append(xproc)
            rproc, rport = start_redis(tmp)
            procs.append(rproc)
            print(f"{'measure':34} {'xstream req/s':>14} {'redis req/s':>12} {'ratio':>7}")
            for i, (name, run) in enumerate(measures):
                x = run(xport, f"bench{i}")
                r = run(rport, f"bench{i}")
                print(f"{name:34} {x:14,.0f} {r:12,.0f} {x / r:7.2f}", flush=True)
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
