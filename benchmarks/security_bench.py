"""What TLS and ACL users cost on the RESP port, beside what they cost redis-server.

Run by hand, never by the test suite:

    .venv/bin/python benchmarks/security_bench.py            # 50,000 requests per measure
    .venv/bin/python benchmarks/security_bench.py -n 10000   # shorter

Four servers, started by this script on free loopback ports (data and certificates in a
temporary directory, `xstream certs --node n1 --client app`), stopped before it exits:

  xstream plain      xstream primary --resp-port P --fsync everysec
  xstream secured    the same with --tls-dir (client certificates required) and --aclfile:
                     the default user off, the benchmark's user `bench` with a password,
                     `~bench*` and +@all
  redis plain        redis-server --appendonly yes --appendfsync everysec
  redis secured      the same on --tls-port with the same certificates (tls-auth-clients
                     yes) and the same users (--aclfile)

Measures, each on a fresh stream, every client authenticating as `bench` on the secured
servers (redis-benchmark --tls --cert --key --cacert --user -a; redis-py ssl_* and
username/password):

  1. redis-benchmark -c 1 -P 1 XADD     one connection, one request at a time
  2. redis-py xadd, unary               from this process
  3. redis-benchmark -c 8 -P 16 XADD    8 connections, 16 requests in flight on each

Printed: requests per second of each server and configuration, and secured / plain for each
server. Every process shares the machine's cores (nproc is printed first): figures move with
whatever else runs on it.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis
from sides import free_port

PASSWORD = "Bench-pw-0"  # the benchmark user's (a throwaway server's)
USERS = f"user default off\nuser bench on >{PASSWORD} ~bench* resetchannels +@all\n"
FIELDS = ["user_id", "__rand_int__", "action", "click", "amount", "42"]


@dataclass
class Server:
    name: str
    port: int
    proc: subprocess.Popen[bytes]
    tls: Path | None = None  # the certificates' directory when TLS is on
    secured: bool = False
    redis_kwargs: dict[str, Any] = field(default_factory=dict)

    def benchmark_args(self) -> list[str]:
        if not self.secured:
            return []
        assert self.tls is not None
        return ["--tls", "--cacert", str(self.tls / "ca.crt"), "--cert",
                str(self.tls / "app.crt"), "--key", str(self.tls / "app.key"),
                "--user", "bench", "-a", PASSWORD]  # fmt: skip

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=30, **self.redis_kwargs)


def wait_ping(server: Server, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert server.proc.poll() is None, f"{server.name} exited with {server.proc.returncode}"
        try:
            with server.client() as r:
                if r.ping():
                    return
        except (redis.exceptions.ConnectionError, OSError):
            time.sleep(0.1)
    raise RuntimeError(f"{server.name}: no PONG on port {server.port} within {timeout} s")


def secured_kwargs(tls: Path) -> dict[str, Any]:
    return {"ssl": True, "ssl_ca_certs": str(tls / "ca.crt"),
            "ssl_certfile": str(tls / "app.crt"), "ssl_keyfile": str(tls / "app.key"),
            "username": "bench", "password": PASSWORD}  # fmt: skip


def start_xstream(tmp: Path, tls: Path | None) -> Server:
    port = free_port()
    name = "xstream secured" if tls else "xstream plain"
    data = tmp / name.replace(" ", "-")
    cmd = [sys.executable, "-m", "xstream.cli", "primary", "--port", str(free_port()),
           "--resp-port", str(port), "--data-dir", str(data), "--fsync", "everysec",
           "--log-level", "warning", "--name", "n1"]  # fmt: skip
    if tls is not None:
        (tmp / "xstream.acl").write_text(USERS)
        cmd += ["--tls-dir", str(tls), "--aclfile", str(tmp / "xstream.acl")]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    server = Server(name, port, proc, tls, tls is not None,
                    secured_kwargs(tls) if tls else {})  # fmt: skip
    wait_ping(server)
    return server


def start_redis(tmp: Path, tls: Path | None) -> Server:
    port = free_port()
    name = "redis secured" if tls else "redis plain"
    data = tmp / name.replace(" ", "-")
    data.mkdir()
    cmd = ["redis-server", "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
           "--appendfsync", "everysec", "--dir", str(data)]  # fmt: skip
    if tls is None:
        cmd += ["--port", str(port)]
    else:
        (data / "users.acl").write_text(USERS)
        cmd += ["--port", "0", "--tls-port", str(port), "--tls-cert-file", str(tls / "n1.crt"),
                "--tls-key-file", str(tls / "n1.key"), "--tls-ca-cert-file", str(tls / "ca.crt"),
                "--aclfile", str(data / "users.acl")]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    server = Server(name, port, proc, tls, tls is not None,
                    secured_kwargs(tls) if tls else {})  # fmt: skip
    wait_ping(server)
    return server


def redis_benchmark(server: Server, n: int, clients: int, pipeline: int, key: str) -> float:
    cmd = ["redis-benchmark", "-p", str(server.port), "-n", str(n), "-c", str(clients),
           "-P", str(pipeline), *server.benchmark_args(), "--csv", "XADD", key, "*",
           *FIELDS]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=900).stdout
    rows = list(csv.reader(io.StringIO(out)))
    return float(rows[-1][1])


def redis_py_unary(server: Server, n: int, key: str) -> float:
    fields = {"user_id": "123456789012", "action": "click", "amount": "42"}
    with server.client() as r:
        r.ping()  # connected (and the TLS handshake done) before the clock starts
        start = time.perf_counter()
        for _ in range(n):
            r.xadd(key, fields)
        elapsed = time.perf_counter() - start
    return n / elapsed


def certificates(tmp: Path) -> Path:
    tls = tmp / "tls"
    cmd = [sys.executable, "-m", "xstream.cli", "certs", "--out", str(tls), "--node", "n1",
           "--client", "app"]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    return tls


Measure = Callable[[Server, str], float]


def main() -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("-n", type=int, default=50_000, help="requests per redis-benchmark measure")
    args = p.parse_args()
    n = args.n
    measures: list[tuple[str, Measure]] = [
        ("redis-benchmark -c 1 -P 1 XADD", lambda s, key: redis_benchmark(s, n, 1, 1, key)),
        ("redis-py xadd (unary)", lambda s, key: redis_py_unary(s, n // 5, key)),
        ("redis-benchmark -c 8 -P 16 XADD", lambda s, key: redis_benchmark(s, n, 8, 16, key)),
    ]
    print(f"nproc: {os.cpu_count()} (shared with whatever else runs on this machine)")
    with tempfile.TemporaryDirectory(prefix="security-bench-") as d:
        tmp = Path(d)
        tls = certificates(tmp)
        servers: list[Server] = []
        try:
            for start in (start_xstream, start_redis):
                servers += [start(tmp, None), start(tmp, tls)]
            head = f"{'measure':33}" + "".join(f"{s.name:>17}" for s in servers)
            print(f"{head}{'xstream ratio':>15}{'redis ratio':>13}  (req/s; ratio: secured/plain)")
            for i, (name, run) in enumerate(measures):
                rates = [run(s, f"bench{i}") for s in servers]
                cells = "".join(f"{r:17,.0f}" for r in rates)
                ratios = f"{rates[1] / rates[0]:15.2f}{rates[3] / rates[2]:13.2f}"
                print(f"{name:33}{cells}{ratios}", flush=True)
        finally:
            for s in servers:
                s.proc.terminate()
                s.proc.wait(15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
