"""Integration tier: real `xstream` processes on free loopback ports.

`cluster` hands out a Cluster: start a primary and replicas as child processes (each with
its own data directory and JSON log file), kill them (-9), stop them (SIGTERM), restart
them on the same port and directory (possibly in another role), promote them and re-point
them (Admin.Promote, Admin.ReplicaOf), read their Admin info and digests, and wait for
replication to settle. Every wait is a bounded poll with a clear failure message; when a
test fails, every node's log is printed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

from xstream.client import Client
from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.integration)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]


_HANDED_OUT: set[int] = set()  # ports free_port/free_ports gave out in this run


def free_port() -> int:
    """A loopback port free right now and not given out before in this run: two calls made
    before either port is bound could otherwise get the same one (a node once got its RESP
    port equal to its gRPC port and failed to bind)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


def free_ports(n: int) -> int:
    """The first of `n` consecutive loopback ports that are free right now."""
    for _ in range(100):
        with ExitStack() as stack:
            first = stack.enter_context(socket.socket())
            first.bind(("127.0.0.1", 0))
            base = int(first.getsockname()[1])
            if base + n > 65536:
                continue
            if _HANDED_OUT.intersection(range(base, base + n)):
                continue
            try:
                for port in range(base + 1, base + n):
                    stack.enter_context(socket.socket()).bind(("127.0.0.1", port))
            except OSError:
                continue
            _HANDED_OUT.update(range(base, base + n))
            return base
    raise AssertionError(f"no {n} consecutive free ports")


def poll(what: str, check: Callable[[], Any], timeout: float = 20.0, every: float = 0.05) -> Any:
    """Call `check` until it returns something truthy; fail with `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except grpc.RpcError as e:
            last = e
        if last and not isinstance(last, grpc.RpcError):
            return last
        time.sleep(every)
    pytest.fail(f"timed out after {timeout} s waiting for {what} (last: {last!r})")


@dataclass
class Node:
    role: str
    port: int
    data_dir: Path
    args: list[str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    _channel: grpc.Channel | None = None
    credentials: grpc.ChannelCredentials | None = None  # a TLS node: the tests' client's
    auth: tuple[tuple[str, str], ...] = ()  # ACL user metadata the tests' calls carry

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> Node:
        cmd = [
            sys.executable, "-m", "xstream.cli", self.role, "--port", str(self.port),
            "--data-dir", str(self.data_dir), *self.args,
        ]  # fmt: skip
        with self.log.open("ab") as f:
            f.write(f"---- start: {' '.join(cmd)}\n".encode())
            self.proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
        poll(f"{self.role} {self.address} to serve", self._ready)
        return self

    def _ready(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            pytest.fail(f"{self.role} {self.address} exited with {self.proc.returncode}")
        self.info(timeout=0.5)
        return True

    def kill(self) -> None:
        """SIGKILL: no shutdown, no flush."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self._close_channel()

    def stop(self) -> None:
        """SIGTERM: a graceful shutdown."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(15)
            assert self.proc.returncode == 0, f"{self.address} exited with {self.proc.returncode}"
        self._close_channel()

    def pause(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGCONT)

    def _close_channel(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None

    @property
    def channel(self) -> grpc.Channel:
        if self._channel is None:
            if self.credentials is None:
                self._channel = grpc.insecure_channel(self.address)
            else:
                self._channel = grpc.secure_channel(self.address, self.credentials)
            if self.auth:
                self._channel = grpc.intercept_channel(self._channel, _Auth(self.auth))
        return self._channel

    def info(self, timeout: float = 5.0) -> pb.InfoReply:
        return pb_grpc.AdminStub(self.channel).Info(pb.InfoRequest(), timeout=timeout)

    def digest(self) -> str:
        return pb_grpc.AdminStub(self.channel).Digest(pb.DigestRequest(), timeout=10).digest

    def streams(self) -> pb_grpc.StreamsStub:
        return pb_grpc.StreamsStub(self.channel)

    def execute(self, *words: str | bytes) -> Any:
        argv = [w if isinstance(w, bytes) else str(w).encode() for w in words]
        return self.streams().Execute(pb.Command(argv=argv), timeout=10)

    def promote(self, epoch: int = 0) -> pb.PromoteReply:
        return pb_grpc.AdminStub(self.channel).Promote(pb.PromoteRequest(epoch=epoch), timeout=30)

    def replicaof(self, primary: Node, epoch: int = 0) -> pb.ReplicaOfReply:
        request = pb.ReplicaOfRequest(primary=primary.address, epoch=epoch)
        return pb_grpc.AdminStub(self.channel).ReplicaOf(request, timeout=30)

    def restart_as_replica(self, primary: Node) -> Node:
        """Start this (stopped) node on its data directory as a replica of `primary`."""
        args = list(self.args)
        if "--primary" in args:
            i = args.index("--primary")
            del args[i : i + 2]
        self.role, self.args = "replica", ["--primary", primary.address, *args]
        return self.start()

    def events(self, name: str) -> list[dict[str, Any]]:
        out = []
        for line in self.log.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                e = json.loads(line)
                if e.get("event") == name:
                    out.append(e)
        return out


class _Auth(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Adds a node's `auth` metadata (an ACL user) to every unary call of the tests."""

    def __init__(self, auth: tuple[tuple[str, str], ...]) -> None:
        self.auth = auth

    def intercept_unary_unary(self, continuation: Callable[..., Any], details: Any, request: Any):  # type: ignore[no-untyped-def]
        details = details._replace(metadata=(*(details.metadata or ()), *self.auth))
        return continuation(details, request)


@dataclass
class Cluster:
    root: Path
    nodes: list[Node] = field(default_factory=list)
    clients: list[Client] = field(default_factory=list)

    def _node(
        self, role: str, args: list[str], credentials: grpc.ChannelCredentials | None = None
    ) -> Node:
        port = free_port()
        name = f"{role}-{len(self.nodes)}"
        node = Node(role, port, self.root / name, args, self.root / f"{name}.log")
        node.credentials = credentials
        self.nodes.append(node)
        return node

    def primary(self, *args: str, credentials: grpc.ChannelCredentials | None = None) -> Node:
        return self._node("primary", list(args), credentials).start()

    def replica(
        self, primary: Node, *args: str, credentials: grpc.ChannelCredentials | None = None
    ) -> Node:
        args = ("--primary", primary.address, *args)
        node = self._node("replica", list(args), credentials).start()
        poll(f"replica {node.address} online", lambda: node.info().link == "up")
        return node

    def client(self, node: Node, **kwargs: Any) -> Client:
        c = Client("127.0.0.1", node.port, **kwargs)
        self.clients.append(c)
        return c

    def settled(self, primary: Node, replicas: list[Node], timeout: float = 30.0) -> int:
        """Wait until every replica applied everything the primary logged; its offset."""

        def check() -> int | None:
            target = primary.info().offset
            if all(r.info().offset == target for r in replicas):
                return target or -1
            return None

        off = poll("replicas to reach the primary's offset", check, timeout)
        return max(off, 0)

    def close(self, dump: bool) -> None:
        for c in self.clients:
            c.close()
        for n in self.nodes:
            if n.proc is not None and n.proc.poll() is None:
                n.kill()
        if dump:
            for n in self.nodes:
                sys.stderr.write(f"\n===== {n.role} {n.address} log ({n.log}) =====\n")
                sys.stderr.write(n.log.read_text(errors="replace")[-20000:])


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    c = Cluster(tmp_path)
    try:
        yield c
    finally:
        rep = getattr(request.node, "rep_call", None)
        c.close(dump=rep is None or rep.failed)
