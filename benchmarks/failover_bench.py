"""Failover time: xstream's etcd election vs Redis Sentinel, both killed with SIGKILL.

    xstream   etcd (Debian's 3.4, default flags) + three `xstream node` processes
              (--lease-ttl 2, --expect-replicas 2) on free loopback ports
    redis     redis-server primary + two replicas + three Sentinels (quorum 2), Sentinel's
              default down-after-milliseconds (30000) and, separately, a tuned one (1000)

Each round: kill -9 the primary, then poll (every 20 ms) until a write is acknowledged by the
new primary and one replica (xstream: XADD with acks=quorum; redis: XADD then WAIT 1 100 on
the address Sentinel names), the "recovery time" of issue 5 (kill -> first quorum-acked
write on the new primary). The killed node is restarted and rejoins before the next round.
Prints one line per round and a markdown table with p50 / max and the ratio to Sentinel.
Run by hand; it takes about (rounds x 6 s) + 35 s per default-Sentinel round.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import grpc
import redis
import sides
from sides import free_port

from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def wait_for(what: str, check: Callable[[], bool], timeout: float = 60.0) -> None:
    """sides.wait_for polling every 20 ms (the rounds' resolution), a failed RPC, command or
    connection a no."""
    sides.wait_for(
        what, check, timeout, every=0.02, errors=(grpc.RpcError, redis.RedisError, OSError)
    )


# --- xstream ---------------------------------------------------------------------------------


class XstreamCluster:
    def __init__(self, root: Path, etcd_bin: str) -> None:
        self.root = root
        client, peer = free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{client}"
        self.etcd = subprocess.Popen(
            [etcd_bin, "--name", "b", "--data-dir", str(root / "etcd"),
             "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
             "--listen-peer-urls", f"http://127.0.0.1:{peer}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
             "--initial-cluster", f"b=http://127.0.0.1:{peer}"],
            stdout=(root / "etcd.log").open("wb"), stderr=subprocess.STDOUT,
        )  # fmt: skip
        self.ports = [free_port() for _ in range(3)]
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.channels = {p: grpc.insecure_channel(f"127.0.0.1:{p}") for p in self.ports}
        time.sleep(1.0)
        for p in self.ports:
            self.start(p)
        self.seq = 0

    def start(self, port: int) -> None:
        log = (self.root / f"n{port}.log").open("ab")
        self.procs[port] = subprocess.Popen(
            [sys.executable, "-m", "xstream.cli", "node", "--port", str(port),
             "--data-dir", str(self.root / f"n{port}"), "--name", f"n{port}",
             "--etcd", self.etcd_url, "--lease-ttl", "2", "--expect-replicas", "2"],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip

    def info(self, port: int) -> pb.InfoReply:
        reply: pb.InfoReply = pb_grpc.AdminStub(self.channels[port]).Info(
            pb.InfoRequest(), timeout=0.3
        )
        return reply

    def primary(self, among: list[int]) -> int | None:
        for p in among:
            try:
                i = self.info(p)
            except grpc.RpcError:
                continue
            if i.role == "primary" and not i.deposed:
                return p
        return None

    def write(self, port: int) -> bool:
        self.seq += 1
        argv = [b"XADD", b"s", b"*", b"n", b"%d" % self.seq]
        concern = pb.WriteConcern(acks=pb.ACKS_QUORUM, timeout_ms=500)
        try:
            pb_grpc.StreamsStub(self.channels[port]).Execute(
                pb.Command(argv=argv, concern=concern), timeout=1.0
            )
        except grpc.RpcError:
            return False
        return True

    def round(self) -> float:
        wait_for("an xstream primary that acks", lambda: self._writable(self.ports))
        old = self.primary(self.ports)
        assert old is not None
        for _ in range(50):
            self.write(old)
        self.procs[old].kill()
        killed = time.monotonic()
        self.procs[old].wait()
        self.channels[old].close()
        self.channels[old] = grpc.insecure_channel(f"127.0.0.1:{old}")
        live = [p for p in self.ports if p != old]
        wait_for("a new xstream primary", lambda: self._writable(live))
        took = time.monotonic() - killed
        self.start(old)
        wait_for("the old primary to rejoin", lambda: self.info(old).role == "replica", 30)
        return took

    def _writable(self, among: list[int]) -> bool:
        p = self.primary(among)
        return p is not None and self.write(p)

    def close(self) -> None:
        for proc in [*self.procs.values(), self.etcd]:
            proc.kill()
            proc.wait()


# --- redis + sentinel ------------------------------------------------------------------------


class SentinelCluster:
    def __init__(self, root: Path, binary: str, down_after_ms: int) -> None:
        self.root, self.binary = root, binary
        self.ports = [free_port() for _ in range(3)]
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        for i, p in enumerate(self.ports):
            self.start(p, None if i == 0 else self.ports[0])
        wait_for("redis replicas online", lambda: self._replicas(self.ports[0]) == 2)
        self.sentinels = []
        for i in range(3):
            port = free_port()
            conf = root / f"sentinel{i}.conf"
            conf.write_text(
                f"port {port}\nbind 127.0.0.1\ndir {root}\n"
                f"sentinel monitor m 127.0.0.1 {self.ports[0]} 2\n"
                f"sentinel down-after-milliseconds m {down_after_ms}\n"
            )
            log = (root / f"sentinel{i}.log").open("ab")
            proc = subprocess.Popen(
                [binary, str(conf), "--sentinel"], stdout=log, stderr=subprocess.STDOUT
            )
            self.sentinels.append((port, proc))
        self.sentinel = redis.Redis(port=self.sentinels[0][0], socket_timeout=0.5)
        wait_for("sentinels know the replicas", self._sentinels_ready)

    def start(self, port: int, primary: int | None) -> None:
        args = [self.binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "yes", "--dir", str(self.root / f"r{port}")]  # fmt: skip
        (self.root / f"r{port}").mkdir(exist_ok=True)
        if primary is not None:
            args += ["--replicaof", "127.0.0.1", str(primary)]
        log = (self.root / f"r{port}.log").open("ab")
        self.procs[port] = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)

    def _replicas(self, port: int) -> int:
        info = redis.Redis(port=port, socket_timeout=0.5).info("replication")
        return int(info.get("connected_slaves", 0))

    def _sentinels_ready(self) -> bool:
        master = self.sentinel.sentinel_master("m")
        assert isinstance(master, dict), master
        return int(master["num-other-sentinels"]) == 2 and int(master["num-slaves"]) == 2

    def primary(self) -> int:
        addr = self.sentinel.sentinel_get_master_addr_by_name("m")
        assert isinstance(addr, tuple), addr
        _host, port = addr
        return int(port)

    def write(self, port: int) -> bool:
        r = redis.Redis(port=port, socket_timeout=0.5)
        try:
            r.xadd("s", {"n": "1"})
            return int(r.execute_command("WAIT", 1, 100)) >= 1
        except (redis.RedisError, OSError):
            return False
        finally:
            r.close()

    def round(self) -> float:
        old = self.primary()
        wait_for("the redis primary acks", lambda: self.write(old))
        self.procs[old].kill()
        killed = time.monotonic()
        self.procs[old].wait()
        wait_for(
            "a new redis primary",
            lambda: self.primary() != old and self.write(self.primary()),
            timeout=120,
        )
        took = time.monotonic() - killed
        self.start(old, self.primary())  # Sentinel reconfigures it as a replica if needed
        wait_for("the old primary to rejoin", lambda: self._replicas(self.primary()) == 2, 60)
        return took

    def close(self) -> None:
        for proc in [*self.procs.values(), *(p for _, p in self.sentinels)]:
            proc.kill()
            proc.wait()


def summary(times: list[float]) -> str:
    return f"p50 {statistics.median(times):.2f} s, max {max(times):.2f} s (n={len(times)})"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rounds", type=int, default=10, help="kills for xstream and tuned Sentinel")
    p.add_argument(
        "--default-rounds", type=int, default=1, help="kills with Sentinel's default 30 s"
    )
    p.add_argument("--redis-server", default="/usr/bin/redis-server")
    p.add_argument("--etcd", default="/usr/bin/etcd")
    args = p.parse_args()
    for binary in (args.redis_server, args.etcd):
        if shutil.which(binary) is None:
            sys.exit(f"{binary} not found (scripts/etcd.sh; apt-get install redis-server)")
    progress(
        f"nproc {os.cpu_count()}; rounds {args.rounds}, default-Sentinel {args.default_rounds}"
    )
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="failover-bench-") as tmp:
        root = Path(tmp)
        runs: list[tuple[str, Callable[[Path], XstreamCluster | SentinelCluster], int]] = [
            ("xstream (etcd, lease 2 s)", lambda d: XstreamCluster(d, args.etcd), args.rounds),
            ("Sentinel down-after 1000 ms",
             lambda d: SentinelCluster(d, args.redis_server, 1000), args.rounds),
            ("Sentinel default (30000 ms)",
             lambda d: SentinelCluster(d, args.redis_server, 30000), args.default_rounds),
        ]  # fmt: skip
        for i, (name, make, rounds) in enumerate(runs):
            if rounds <= 0:
                continue
            d = root / str(i)
            d.mkdir()
            cluster = make(d)
            try:
                times = results[name] = []
                for r in range(rounds):
                    times.append(cluster.round())
                    progress(f"{name}: round {r + 1}/{rounds}: {times[-1]:.2f} s")
            finally:
                cluster.close()
    base = results.get("xstream (etcd, lease 2 s)")
    print("\n| Setup | kill -> first quorum-acked write | xstream p50 / this p50 |")
    print("|---|---|---|")
    for name, times in results.items():
        ratio = f"{statistics.median(base) / statistics.median(times):.3f}" if base else "-"
        print(f"| {name} | {summary(times)} | {ratio} |")


if __name__ == "__main__":
    main()
