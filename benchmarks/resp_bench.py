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

Printed per measure: requests per second of each side, xstream / redis, and each primary's
CPU time per request (user + system, from /proc), which moves less with other load than the
rates do. Every process shares this machine's cores: the load average is printed first and
last; a busy machine lowers both sides, not always alike.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import redis

CLK_TCK = os.sysconf("SC_CLK_TCK")
FIELDS = ["user_id", "__rand_int__", "action", "click", "amount", "42"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(what: str, check: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except (redis.exceptions.ConnectionError, redis.exceptions.ResponseError):
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{what}: not within {timeout} s")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


class Side:
    """A primary and its replicas of one kind, started as processes."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.procs: list[subprocess.Popen[bytes]] = []
        self.port = 0  # the primary's RESP port
        self.replica_ports: list[int] = []

    @property
    def primary_pid(self) -> int:
        return self.procs[0].pid

    def spawn(self, argv: list[str]) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc

    def answers(self, port: int) -> bool:
        assert all(p.poll() is None for p in self.procs), f"{self.name}: a server exited"
        return bool(redis.Redis(port=port, socket_timeout=1).ping())

    def replicas_caught_up(self) -> bool:
        end = redis.Redis(port=self.port).info("replication")["master_repl_offset"]
        return all(
            redis.Redis(port=p).info("replication").get("slave_repl_offset", -1) >= end
            for p in self.replica_ports
        )

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
        for proc in self.procs:
            proc.wait(15)


class XstreamSide(Side):
    def __init__(self, tmp: Path, event_loop: str) -> None:
        super().__init__("xstream")
        self.tmp = tmp
        self.grpc = free_port()
        self.port = free_port()
        self.common = ["--fsync", "everysec", "--log-level", "warning", "--event-loop", event_loop]
        self.spawn([sys.executable, "-m", "xstream.cli", "primary", "--port", str(self.grpc),
                    "--resp-port", str(self.port), "--data-dir", str(tmp / "xp"),
                    *self.common])  # fmt: skip
        wait_for("the xstream primary", lambda: self.answers(self.port))

    def attach_replicas(self, n: int) -> None:
        for i in range(n):
            port = free_port()
            self.spawn([sys.executable, "-m", "xstream.cli", "replica", "--port", str(free_port()),
                        "--primary", f"127.0.0.1:{self.grpc}", "--resp-port", str(port),
                        "--data-dir", str(self.tmp / f"xr{i}"), *self.common])  # fmt: skip
            self.replica_ports.append(port)
        _attached(self, n)


class RedisSide(Side):
    def __init__(self, tmp: Path) -> None:
        super().__init__("redis")
        self.tmp = tmp
        self.port = self._server(0, [])

    def _server(self, i: int, extra: list[str]) -> int:
        port = free_port()
        (self.tmp / f"r{i}").mkdir()
        self.spawn(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "yes", "--appendfsync", "everysec",
                    "--dir", str(self.tmp / f"r{i}"), *extra])  # fmt: skip
        wait_for("a redis-server", lambda: self.answers(port))
        return port

    def attach_replicas(self, n: int) -> None:
        for i in range(n):
            self.replica_ports.append(self._server(i + 1, ["--replicaof", "127.0.0.1",
                                                           str(self.port)]))  # fmt: skip
        _attached(self, n)


def _attached(side: Side, n: int) -> None:
    for port in side.replica_ports:
        wait_for(f"a {side.name} replica", lambda port=port: side.answers(port))  # type: ignore[misc]
    wait_for(f"{n} {side.name} replicas attached", lambda: _connected(side.port) == n)
    wait_for(f"{side.name}'s replicas in sync", side.replicas_caught_up, 120)


def _connected(port: int) -> int:
    return int(redis.Redis(port=port).info("replication")["connected_slaves"])


def redis_benchmark(port: int, n: int, clients: int, pipeline: int, command: list[str]) -> float:
    cmd = ["redis-benchmark", "-p", str(port), "-n", str(n), "-c", str(clients),
           "-P", str(pipeline), "--csv", *command]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=900).stdout
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


def fill(port: int, key: str, entries: int) -> None:
    pipe = redis.Redis(port=port).pipeline(transaction=False)
    for i in range(entries):
        pipe.xadd(key, {"user_id": str(i), "action": "click", "amount": "42"})
    pipe.execute()


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
) -> tuple[float, float]:
    """(requests per second, primary CPU microseconds per request)."""
    before = cpu_seconds(side.primary_pid)
    rate = run(side, key, k)
    return rate, (cpu_seconds(side.primary_pid) - before) / k * 1e6


def report(sides: list[XstreamSide | RedisSide], measure: Measure, key: str) -> None:
    name, k, run = measure
    rx, cx = run_measure(sides[0], run, key, k)
    rr, cr = run_measure(sides[1], run, key, k)
    print(f"{name:44} {rx:10,.0f} {rr:10,.0f} {rx / rr:6.2f} {cx:13.1f} {cr:6.1f}", flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-n", type=int, default=100_000, help="scale: requests per measure")
    p.add_argument("--event-loop", default="auto", help="the xstream nodes' --event-loop")
    args = p.parse_args()
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="resp-bench-") as d:
        tmp = Path(d)
        sides: list[XstreamSide | RedisSide] = []
        try:
            sides.append(XstreamSide(tmp, args.event_loop))
            sides.append(RedisSide(tmp))
            for side in sides:
                fill(side.port, "benchr", 1000)
            print(f"{'measure':44} {'xstream/s':>10} {'redis/s':>10} {'ratio':>6} "
                  f"{'cpu us/req x':>13} {'r':>6}")  # fmt: skip
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
    print(f"load average: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
