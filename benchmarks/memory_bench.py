"""Resident memory of an xstream primary vs a real redis-server started side by side (issue 15).

Run by hand, never by the test suite:

    .venv/bin/python benchmarks/memory_bench.py                 # 1M then 3M entries
    .venv/bin/python benchmarks/memory_bench.py --scale 0.1     # 100k then 300k, quicker
    .venv/bin/python benchmarks/memory_bench.py --replicas 0    # the lone primaries only

Both sides are started by this script on free loopback ports, data in a temporary directory,
and stopped before it exits: a primary of each with appendfsync everysec (the same
durability as xstream's log), with default settings otherwise (xstream's flags go after
`--`, e.g. `-- --backlog-bytes 1048576`). Each side gets the same load, from redis-py
pipelines of 1,000 from this process: `XADD mem * user_id <i> action click amount 42` for
i = 0, 1, ..., 1M entries (the first million) then 2M more (3M in all). Each server's
resident set (VmRSS in /proc/PID/status) is sampled idle at start, after 1M and after 3M,
once the node is quiet (replicas caught up, no snapshot being written: INFO's
rdb_bgsave_in_progress, and RSS steady). Printed: RSS at each point, growth per entry over
the first 1M and marginal from 1M to 3M, and xstream / redis of each; the peak (VmHWM) too.

Then, unless --replicas 0, the same again on fresh primaries with two replicas attached
(xstream's over gRPC, Redis's with --replicaof), every replica's RSS beside its primary's: a
replicated primary holds a backlog (xstream: --backlog-bytes; Redis: repl-backlog-size).

Every process shares this machine's cores and memory: the load average is printed first and
last. RSS does not move with CPU load the way rates do, but run it twice anyway.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import redis


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(what: str, check: Callable[[], bool], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except (redis.exceptions.ConnectionError, redis.exceptions.ResponseError):
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{what}: not within {timeout} s")


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/{pid}/status")


def rss_mb(pid: int) -> float:
    return status_kib(pid, "VmRSS") / 1024


class Side:
    """A primary and its replicas of one kind, started as processes."""

    def __init__(self, name: str, tmp: Path) -> None:
        self.name = name
        self.tmp = tmp
        self.procs: list[subprocess.Popen[bytes]] = []
        self.ports: list[int] = []  # RESP ports, the primary's first

    @property
    def port(self) -> int:
        return self.ports[0]

    def spawn(self, argv: list[str]) -> None:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        self.procs.append(proc)

    def answers(self, port: int) -> bool:
        assert all(p.poll() is None for p in self.procs), f"{self.name}: a server exited"
        return bool(redis.Redis(port=port, socket_timeout=1).ping())

    def quiet(self) -> bool:
        """No background save running on any of them."""
        return all(
            not redis.Redis(port=p).info("persistence").get("rdb_bgsave_in_progress", 0)
            for p in self.ports
        )

    def caught_up(self) -> bool:
        end = redis.Redis(port=self.port).info("replication")["master_repl_offset"]
        return all(
            redis.Redis(port=p).info("replication").get("slave_repl_offset", -1) >= end
            for p in self.ports[1:]
        )

    def settle(self) -> list[float]:
        """Each process's RSS (MB) once replicas caught up, saves ended and RSS is steady."""
        wait_for(f"{self.name}'s replicas caught up", self.caught_up, 300)
        wait_for(f"{self.name}'s saves done", self.quiet, 300)
        last = [rss_mb(p.pid) for p in self.procs]
        for _ in range(20):
            time.sleep(0.5)
            now = [rss_mb(p.pid) for p in self.procs]
            if all(abs(a - b) < 0.5 for a, b in zip(now, last, strict=True)):
                return now
            last = now
        return last

    def peaks(self) -> list[float]:
        return [status_kib(p.pid, "VmHWM") / 1024 for p in self.procs]

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
        for proc in self.procs:
            proc.wait(30)


class XstreamSide(Side):
    def __init__(self, tmp: Path, replicas: int, extra: list[str]) -> None:
        super().__init__("xstream", tmp)
        grpc, port = free_port(), free_port()
        common = ["--fsync", "everysec", "--log-level", "warning", *extra]
        self.spawn([sys.executable, "-m", "xstream.cli", "primary", "--port", str(grpc),
                    "--resp-port", str(port), "--data-dir", str(tmp / "xp"), *common])  # fmt: skip
        self.ports.append(port)
        wait_for("the xstream primary", lambda: self.answers(port))
        for i in range(replicas):
            rport = free_port()
            self.spawn([sys.executable, "-m", "xstream.cli", "replica", "--port", str(free_port()),
                        "--primary", f"127.0.0.1:{grpc}", "--resp-port", str(rport),
                        "--data-dir", str(tmp / f"xr{i}"), *common])  # fmt: skip
            self.ports.append(rport)
        _attached(self, replicas)


class RedisSide(Side):
    def __init__(self, tmp: Path, replicas: int) -> None:
        super().__init__("redis", tmp)
        self.ports.append(self._server(0, []))
        for i in range(replicas):
            self.ports.append(self._server(i + 1, ["--replicaof", "127.0.0.1", str(self.port)]))
        _attached(self, replicas)

    def _server(self, i: int, extra: list[str]) -> int:
        port = free_port()
        (self.tmp / f"r{i}").mkdir()
        self.spawn(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "yes", "--appendfsync", "everysec",
                    "--dir", str(self.tmp / f"r{i}"), *extra])  # fmt: skip
        wait_for("a redis-server", lambda: self.answers(port))
        return port


def _attached(side: Side, n: int) -> None:
    for port in side.ports[1:]:
        wait_for(f"a {side.name} replica", lambda port=port: side.answers(port))  # type: ignore[misc]
    info = lambda: redis.Redis(port=side.port).info("replication")  # noqa: E731
    wait_for(f"{n} {side.name} replicas attached", lambda: info()["connected_slaves"] == n)
    wait_for(f"{side.name}'s replicas in sync", side.caught_up, 120)


def load(port: int, start: int, entries: int) -> float:
    """XADD entries `start` .. `start + entries` to `mem` in pipelines of 1,000; seconds."""
    t = time.perf_counter()
    r = redis.Redis(port=port)
    for lo in range(start, start + entries, 1000):
        pipe = r.pipeline(transaction=False)
        for i in range(lo, min(lo + 1000, start + entries)):
            pipe.xadd("mem", {"user_id": str(i), "action": "click", "amount": "42"})
        pipe.execute()
    assert r.xlen("mem") == start + entries, port
    r.close()
    return time.perf_counter() - t


def measure(side: Side, first: int, total: int) -> tuple[list[float], ...]:
    """Each process's RSS idle, after `first` entries and after `total`."""
    idle = side.settle()
    load(side.port, 0, first)
    at1 = side.settle()
    load(side.port, first, total - first)
    at3 = side.settle()
    return idle, at1, at3


def report(sides: list[Side], rows: dict[str, tuple[list[float], ...]], n1: int, n3: int) -> None:
    roles = ["primary"] + [f"replica {i + 1}" for i in range(len(sides[0].procs) - 1)]
    m1, m3 = f"{n1 / 1e6:g}M", f"{n3 / 1e6:g}M"
    print(f"{'':18} {'idle MB':>8} {m1 + ' MB':>8} {m3 + ' MB':>8} {'peak MB':>8} "
          f"{'B/entry 0-' + m1:>14} {'B/entry ' + m1 + '-' + m3:>16}")  # fmt: skip
    growth: dict[str, list[tuple[float, float]]] = {}
    for side in sides:
        idle, at1, at3 = rows[side.name]
        for j, role in enumerate(roles):
            g1 = (at1[j] - idle[j]) * 2**20 / n1
            g3 = (at3[j] - at1[j]) * 2**20 / (n3 - n1)
            growth.setdefault(role, []).append((g1, g3))
            print(f"{side.name + ' ' + role:18} {idle[j]:8.1f} {at1[j]:8.1f} {at3[j]:8.1f} "
                  f"{side.peaks()[j]:8.1f} {g1:14.1f} {g3:16.1f}")  # fmt: skip
    for role, ((x1, x3), (r1, r3)) in growth.items():
        print(f"xstream / redis, {role}: growth over the first {m1} {x1 / r1:.2f}x, "
              f"marginal {m1}-{m3} {x3 / r3:.2f}x")  # fmt: skip


def run(args: argparse.Namespace, replicas: int) -> None:
    n1, n3 = int(1_000_000 * args.scale), int(3_000_000 * args.scale)
    print(f"\n== {'lone primaries' if not replicas else f'primaries with {replicas} replicas'}"
          f" ==", flush=True)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="memory-bench-") as d:
        tmp = Path(d)
        sides: list[Side] = []
        rows: dict[str, tuple[list[float], ...]] = {}
        try:
            sides.append(XstreamSide(tmp, replicas, args.xstream_args))
            sides.append(RedisSide(tmp, replicas))
            for side in sides:  # one at a time: the load of one does not inflate the other
                rows[side.name] = measure(side, n1, n3)
            report(sides, rows, n1, n3)
        finally:
            for side in sides:
                side.stop()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=float, default=1.0, help="entries: scale x (1M, then 3M)")
    p.add_argument("--replicas", type=int, default=2, help="replicas of the second run (0: none)")
    p.add_argument("xstream_args", nargs="*", help="extra flags of every xstream node (after --)")
    args = p.parse_args()
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.2f}", flush=True)
    run(args, 0)
    if args.replicas:
        run(args, args.replicas)
    print(f"load average: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
