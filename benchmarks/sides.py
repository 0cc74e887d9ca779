"""Servers started side by side for the benchmarks: an xstream primary or a redis-server
primary, each with replicas attached on demand, on free loopback ports, data in a directory
the caller owns; the process and polling helpers of every benchmark; and what every
benchmark reads off the servers. Shared by the scripts of this folder (run as scripts: this
folder is on their import path).

    XstreamSide(tmp, extra)   `xstream primary --resp-port P` (+ `extra` flags on every node)
    RedisSide(tmp)            `redis-server --appendonly yes --appendfsync everysec`
    side.attach_replicas(n)   n replicas (xstream's over gRPC; Redis's --replicaof), in sync
    side.port                 the primary's RESP port; side.replica_ports the replicas'
    side.procs                the processes, the primary's first (side.processes: Procs)
    side.stop()

    free_port()               a free loopback port
    wait_for(what, check)     poll until check() answers (not None or False); its answer
    Procs(workdir)            processes in their own groups, logs in workdir: start, stop,
                              stop_all, check_alive (the log's tail when one has exited)

    fill(port, key, start, n) XADD n entries of 3 small fields over RESP, pipelines of 1,000
    cpu_seconds(pid)          user + system CPU of a process so far (/proc/PID/stat)
    rss_mb(pid), status_kib   VmRSS and the other fields of /proc/PID/status
    machine()                 "nproc 2, load average 1.52 0.98 0.71": what shares the cores
    OffsetSampler(...)        replication lag measured alike on both kinds of server (below)
    Row, Target, print_table  the closing markdown table: Measure | xstream | redis | ratio |
                              target | met?
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import redis


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


T = TypeVar("T")
# What a server raises while it starts or loads: a no, not yet.
NOT_YET: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError,
    redis.exceptions.ResponseError,
)


def wait_for(
    what: str,
    check: Callable[[], T | None],
    timeout: float = 60.0,
    *,
    every: float = 0.05,
    errors: tuple[type[BaseException], ...] = NOT_YET,
) -> T:
    """Poll `check` every `every` s until it answers other than None or False, and return that
    answer; one of `errors` raised by it is a no. RuntimeError after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            got = check()
        except errors:
            got = None
        if got is not None and got is not False:
            return got
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not within {timeout} s")
        time.sleep(every)


# -- processes ---------------------------------------------------------------------------------


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path  # its stdout and stderr


class Procs:
    """Processes started by a run, each in its own process group (stopped as a group), each
    logging to `<workdir>/<name>.log`."""

    def __init__(self, workdir: Path, env: dict[str, str] | None = None) -> None:
        self.workdir = workdir
        self.env = env  # the processes' environment (None: this one's)
        self.live: list[Proc] = []

    def start(self, name: str, argv: Sequence[str]) -> Proc:
        log = self.workdir / f"{name}.log"
        with log.open("wb") as out:
            popen = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=self.env,
            )
        proc = Proc(name, popen, log)
        self.live.append(proc)
        return proc

    def stop(self, proc: Proc, timeout: float = 15) -> None:
        p = proc.popen
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        if proc in self.live:
            self.live.remove(proc)

    def stop_all(self) -> None:
        for proc in reversed(list(self.live)):
            try:
                self.stop(proc)
            except Exception as e:  # keep stopping the others
                print(f"warning: stopping {proc.name}: {e}", file=sys.stderr)

    def check_alive(self, proc: Proc) -> None:
        if proc.popen.poll() is not None:
            tail = proc.log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{proc.name} exited ({proc.popen.returncode}):\n{tail}")


# -- the two sides -----------------------------------------------------------------------------


class Side(ABC):
    """A primary and its replicas of one kind, started as processes (logs in `tmp`)."""

    def __init__(self, name: str, tmp: Path) -> None:
        self.name = name
        self.tmp = tmp
        self.processes = Procs(tmp)
        self.port = 0  # the primary's RESP port
        self.replica_ports: list[int] = []

    @property
    def procs(self) -> list[subprocess.Popen[bytes]]:
        """The processes, the primary's first."""
        return [proc.popen for proc in self.processes.live]

    @property
    def ports(self) -> list[int]:
        """Every RESP port, the primary's first."""
        return [self.port, *self.replica_ports]

    def spawn(self, name: str, argv: list[str]) -> None:
        self.processes.start(f"{self.name}-{name}", argv)

    def answers(self, port: int) -> bool:
        for proc in self.processes.live:
            self.processes.check_alive(proc)
        return bool(redis.Redis(port=port, socket_timeout=1).ping())

    def replicas_caught_up(self) -> bool:
        """Every replica's link is up and its offset at the primary's. (A Redis replica whose
        full sync has not started yet, its link down, reports an offset of 1, past a fresh
        primary's 0: the link is what says it replicates.)"""
        end = redis.Redis(port=self.port).info("replication")["master_repl_offset"]
        for port in self.replica_ports:
            info = redis.Redis(port=port).info("replication")
            if info.get("master_link_status") != "up" or info.get("slave_repl_offset", -1) < end:
                return False
        return True

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
        self.processes.stop_all()


class XstreamSide(Side):
    def __init__(self, tmp: Path, extra: list[str]) -> None:
        super().__init__("xstream", tmp)
        self.grpc = free_port()
        self.port = free_port()
        self.common = ["--fsync", "everysec", "--log-level", "warning", *extra]
        self.spawn("primary", [sys.executable, "-m", "xstream.cli", "primary",
                               "--port", str(self.grpc), "--resp-port", str(self.port),
                               "--data-dir", str(tmp / "xp"), *self.common])  # fmt: skip
        wait_for("the xstream primary", lambda: self.answers(self.port))

    def _replica(self, i: int) -> int:
        port = free_port()
        primary, data = f"127.0.0.1:{self.grpc}", self.tmp / f"xr{i}"
        self.spawn(f"replica{i}", [sys.executable, "-m", "xstream.cli", "replica",
                                   "--port", str(free_port()), "--primary", primary,
                                   "--resp-port", str(port), "--data-dir", str(data),
                                   *self.common])  # fmt: skip
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
        # repl-diskless-sync-delay 0: a replica's full sync starts at once (Redis's default
        # waits 5 s for more replicas; service_bench.py does the same)
        self.spawn(f"r{i}", ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--appendonly", "yes", "--appendfsync", "everysec",
                             "--repl-diskless-sync-delay", "0",
                             "--dir", str(self.tmp / f"r{i}"), *extra])  # fmt: skip
        wait_for("a redis-server", lambda: self.answers(port))
        return port


def _connected(port: int) -> int:
    return int(redis.Redis(port=port).info("replication")["connected_slaves"])


# -- what the benchmarks read off the servers --------------------------------------------------

CLK_TCK = os.sysconf("SC_CLK_TCK")


def fill(port: int, key: str, start: int, entries: int) -> float:
    """XADD `key` * user_id <i> action click amount 42, for i = `start` .. `start + entries`,
    in redis-py pipelines of 1,000; the seconds it took."""
    t = time.perf_counter()
    r = redis.Redis(port=port)
    before = r.xlen(key)
    for lo in range(start, start + entries, 1000):
        pipe = r.pipeline(transaction=False)
        for i in range(lo, min(lo + 1000, start + entries)):
            pipe.xadd(key, {"user_id": str(i), "action": "click", "amount": "42"})
        pipe.execute()
    assert r.xlen(key) == before + entries, port
    r.close()
    return time.perf_counter() - t


def cpu_seconds(pid: int, children: bool = False) -> float:
    """User + system CPU seconds of a process so far (every thread); with `children`, its
    reaped children's too (redis-server's fork that streams the RDB)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime + stime
    if children:
        ticks += int(fields[13]) + int(fields[14])  # cutime + cstime
    return ticks / CLK_TCK


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/{pid}/status")


def rss_mb(pid: int) -> float:
    return status_kib(pid, "VmRSS") / 1024


def machine() -> str:
    """The cores every process of a run shares, and how busy they are right now."""
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"nproc {os.cpu_count()}, load average {load}"


class OffsetSampler:
    """Replication lag read the same way off an xstream primary and a redis-server: a thread
    polls the primary's offset, then each replica's applied offset, every `interval` seconds
    from start() to stop(), each reading stamped with the middle of its call (a busy server
    answers late; the middle is nearer the moment it read its offset than either end).

    The lag of a primary offset P is, for the worse replica, the time from the first reading
    of the primary at P to the first reading of that replica at P or past it (0 if the replica
    was already there). Resolution: about one round of polls, which also cost the servers a
    little CPU.

        primary() -> offset          replicas: [() -> applied offset, ...]
    """

    def __init__(
        self,
        primary: Callable[[], int],
        replicas: list[Callable[[], int]],
        interval: float = 0.01,
    ) -> None:
        self.polls = [primary, *replicas]
        self.interval = interval
        self.readings: list[list[tuple[float, int]]] = [[] for _ in self.polls]  # (s, offset)
        self.error: BaseException | None = None  # what stopped the polls early, if anything
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="offset-sampler", daemon=True)

    def start(self) -> OffsetSampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._done.set()
        if self._thread.ident is not None:
            self._thread.join(30)

    def reached(self, offset: int) -> bool:
        """Whether every replica was last read at `offset` or past it."""
        return all(r and r[-1][1] >= offset for r in self.readings[1:])

    def _run(self) -> None:
        try:
            while not self._done.is_set():
                for poll, readings in zip(self.polls, self.readings, strict=True):
                    t = time.monotonic()
                    offset = poll()
                    readings.append(((t + time.monotonic()) / 2, offset))
                self._done.wait(self.interval)
        except BaseException as e:  # reported by lags_ms()
            self.error = e

    def lags_ms(self) -> list[float]:
        """The lag of every primary offset read, for those every replica reached."""
        if self.error is not None:
            raise RuntimeError(f"offset polls failed: {self.error!r}") from self.error
        out: list[float] = []
        seen = [0] * len(self.readings)  # per replica: its first reading not yet behind
        last = -1
        for t, offset in self.readings[0]:
            if offset == last:
                continue  # the same offset again: its lag counts from its first reading
            last = offset
            worst = 0.0
            for i, readings in enumerate(self.readings[1:], 1):
                while seen[i] < len(readings) and readings[seen[i]][1] < offset:
                    seen[i] += 1
                if seen[i] == len(readings):
                    return out  # not reached before stop(): neither is any later offset
                worst = max(worst, readings[seen[i]][0] - t)
            out.append(worst * 1000)
        return out

    def percentiles(self) -> tuple[float, float]:
        """(p50, p99) of lags_ms(), in ms."""
        lags = sorted(self.lags_ms())
        if not lags:
            raise RuntimeError("no primary offset was read reached by the replicas")

        def pct(p: float) -> float:
            return lags[min(len(lags) - 1, int(p * len(lags)))]

        return pct(0.5), pct(0.99)


# -- the closing table -------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A row's goal: `ratio op bound` (on_ratio), or `xstream's figure op bound`; a goal with
    no bound is only said (met? shows -)."""

    text: str
    on_ratio: bool = False
    at_least: bool = False
    bound: float | None = None

    def met(self, ratio: float | None, value: float | None) -> bool | None:
        got = ratio if self.on_ratio else value
        if got is None or self.bound is None:
            return None
        return got >= self.bound if self.at_least else got <= self.bound


def ratio_at_least(x: float) -> Target:
    return Target(f">= {x}x", on_ratio=True, at_least=True, bound=x)


def ratio_at_most(x: float) -> Target:
    return Target(f"<= {x}x", on_ratio=True, bound=x)


@dataclass
class Row:
    measure: str
    mine: float | None  # xstream's figure (the one an absolute target judges)
    theirs: float | None  # redis-server's
    unit: str  # "s", "ms", "µs", "MB", or a suffix of a count: "/s", " B/entry", ...
    target: Target | None = None
    note: str = ""  # printed after the measure, in parentheses
    label_mine: str = ""  # printed instead of the number when set
    label_theirs: str = ""

    @property
    def ratio(self) -> float | None:
        if self.mine is None or not self.theirs:
            return None
        return self.mine / self.theirs

    def cells(self) -> list[str]:
        """Measure, xstream, redis, ratio, target, met?"""
        met = self.target.met(self.ratio, self.mine) if self.target else None
        return [
            self.measure + (f" ({self.note})" if self.note else ""),
            self.label_mine or fmt(self.mine, self.unit),
            self.label_theirs or fmt(self.theirs, self.unit),
            f"{self.ratio:.2f}x" if self.ratio is not None else "-",
            self.target.text if self.target else "-",
            {True: "yes", False: "no", None: "-"}[met],
        ]


def fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    digits = {"s": 2, "µs": 2, "ms": 1, "MB": 1}.get(unit)
    if digits is not None:
        return f"{v:.{digits}f} {unit}"
    return f"{v:,.0f}{unit}"


def print_table(rows: Sequence[Row]) -> None:
    print("\n| Measure | xstream | redis | ratio | target | met? |")
    print("|---|---:|---:|---:|---|---|")
    for row in rows:
        print("| " + " | ".join(row.cells()) + " |")
    print("\nratio = xstream / redis: above 1 is better for rates, below 1 for times, bytes, CPU.")
