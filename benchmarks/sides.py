"""Servers started side by side for the benchmarks: an xstream primary or a redis-server
primary, each with replicas attached on demand, on free loopback ports, data in a directory
the caller owns. Shared by resp_bench.py and memory_bench.py (run as scripts: this folder is
on their import path).

    XstreamSide(tmp, extra)   `xstream primary --resp-port P` (+ `extra` flags on every node)
    RedisSide(tmp)            `redis-server --appendonly yes --appendfsync everysec`
    side.attach_replicas(n)   n replicas (xstream's over gRPC; Redis's --replicaof), in sync
    side.port                 the primary's RESP port; side.replica_ports the replicas'
    side.procs                the processes, the primary's first
    side.stop()
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path

import redis


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


class Side(ABC):
    """A primary and its replicas of one kind, started as processes."""

    def __init__(self, name: str, tmp: Path) -> None:
        self.name = name
        self.tmp = tmp
        self.procs: list[subprocess.Popen[bytes]] = []
        self.port = 0  # the primary's RESP port
        self.replica_ports: list[int] = []

    @property
    def ports(self) -> list[int]:
        """Every RESP port, the primary's first."""
        return [self.port, *self.replica_ports]

    def spawn(self, argv: list[str]) -> None:
        self.procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.STDOUT))  # fmt: skip

    def answers(self, port: int) -> bool:
        assert all(p.poll() is None for p in self.procs), f"{self.name}: a server exited"
        return bool(redis.Redis(port=port, socket_timeout=1).ping())

    def replicas_caught_up(self) -> bool:
        end = redis.Redis(port=self.port).info("replication")["master_repl_offset"]
        return all(
            redis.Redis(port=p).info("replication").get("slave_repl_offset", -1) >= end
            for p in self.replica_ports
        )

    def attach_replicas(self, n: int) -> None:
        for i in range(n):
            self.replica_ports.append(self._replica(i))
        for port in self.replica_ports:
            wait_for(f"a {self.name} replica", lambda port=port: self.answers(port))  # type: ignore[misc]
        wait_for(f"{n} {self.name} replicas attached",
                 lambda: _connected(self.port) == n)  # fmt: skip
        wait_for(f"{self.name}'s replicas in sync", self.replicas_caught_up, 120)

    @abstractmethod
    def _replica(self, i: int) -> int:
        """Start replica i; its RESP port."""

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
        for proc in self.procs:
            proc.wait(30)


class XstreamSide(Side):
    def __init__(self, tmp: Path, extra: list[str]) -> None:
        super().__init__("xstream", tmp)
        self.grpc = free_port()
        self.port = free_port()
        self.common = ["--fsync", "everysec", "--log-level", "warning", *extra]
        self.spawn([sys.executable, "-m", "xstream.cli", "primary", "--port", str(self.grpc),
                    "--resp-port", str(self.port), "--data-dir", str(tmp / "xp"),
                    *self.common])  # fmt: skip
        wait_for("the xstream primary", lambda: self.answers(self.port))

    def _replica(self, i: int) -> int:
        port = free_port()
        self.spawn([sys.executable, "-m", "xstream.cli", "replica", "--port", str(free_port()),
                    "--primary", f"127.0.0.1:{self.grpc}", "--resp-port", str(port),
                    "--data-dir", str(self.tmp / f"xr{i}"), *self.common])  # fmt: skip
        return port


class RedisSide(Side):
    def __init__(self, tmp: Path) -> None:
        super().__init__("redis", tmp)
        self.port = self._server(0, [])

    def _replica(self, i: int) -> int:
        return self._server(i + 1, ["--replicaof", "127.0.0.1", str(self.port)])

    def _server(self, i: int, extra: list[str]) -> int:
        port = free_port()
        (self.tmp / f"r{i}").mkdir()
        self.spawn(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "yes", "--appendfsync", "everysec",
                    "--dir", str(self.tmp / f"r{i}"), *extra])  # fmt: skip
        wait_for("a redis-server", lambda: self.answers(port))
        return port


def _connected(port: int) -> int:
    return int(redis.Redis(port=port).info("replication")["connected_slaves"])
