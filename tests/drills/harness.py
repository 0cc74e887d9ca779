"""The drill harness: xstream nodes as containers on one Docker network, driven by fault verbs.

    image = build_node_image()                      # scripts/images.sh -> "xstream-node:<hash>"
    with Cluster(image) as c:
        c.start_primary("n1"); c.start_replica("n2", primary="n1")
        c.client("n1").xadd("s", {"a": "1"})
        c.partition("n2"); ...; c.heal("n2")
        c.poll(lambda: c.client("n2").xlen("s") == 1, 30, "n2 has the entry")

Verbs: `kill` (SIGKILL), `pause`/`unpause` (cgroup freezer), `partition` (disconnect from the
cluster network) and `heal` (reconnect under the same aliases). Each node is also on Docker's
default bridge, which has no names: peers cannot reach a partitioned node (they know it only
by its alias), while its published port keeps it observable from the test. Every wait is
`poll`: bounded, on something observable, failing with a message that names what was
awaited; the drills' conftest.py adds every node's logs (`Cluster.logs()`) to a failed
test's report.

Invariants: a node's name is its network alias (peers reach it as NAME:7700) and its
`--name`; every node listens on 7700 in its container, published on a free host port; a
Cluster removes its containers and network on exit, killed or not (conftest.py has read a
failed test's logs by then).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TypeVar

# Ryuk (testcontainers' reaper) is an image to pull; Cluster.close() removes what it made.
os.environ["TESTCONTAINERS_RYUK_DISABLED"] = "true"  # before testcontainers is imported

import docker
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from testcontainers.core.container import DockerContainer
from testcontainers.core.network import Network

from xstream.client import Client

ROOT = Path(__file__).resolve().parents[2]
PORT = 7700  # every node's gRPC port inside its container
T = TypeVar("T")


class DrillError(AssertionError):
    """A bounded wait ran out, or a node did not come up; the text names what and why."""


def build_node_image() -> str:
    """Run scripts/images.sh (cached: seconds when warm) and answer the xstream-node tag."""
    done = subprocess.run(
        [str(ROOT / "scripts" / "images.sh")], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise DrillError(f"scripts/images.sh failed ({done.returncode}):\n{done.stderr}")
    tags = [t for t in done.stdout.split() if t.startswith("xstream-node:")]
    if len(tags) != 1:
        raise DrillError(f"scripts/images.sh printed no node tag:\n{done.stdout}{done.stderr}")
    return tags[0]


def docker_available() -> bool:
    """True iff a Docker daemon answers (not merely a `docker` binary on PATH)."""
    try:
        docker.from_env().ping()
    except Exception:  # any failure to reach the daemon means no Docker here
        return False
    return True


def poll(fn: Callable[[], T | None], timeout: float, what: str, interval: float = 0.1) -> T:
    """Call fn until it answers truthy, within `timeout` seconds; answer that value. Errors
    fn raises count as "not yet" (a node may be down); the last one is in the failure text."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        try:
            value = fn()
            if value:
                return value
        except Exception as e:  # not yet: the node may be down, paused or partitioned
            last = e
        if time.monotonic() >= deadline:
            why = f" (last error: {last!r})" if last else ""
            raise DrillError(f"not true after {timeout:g} s: {what}{why}")
        time.sleep(interval)


@dataclass
class Node:
    name: str  # alias on the cluster network and the node's --name
    container: DockerContainer  # started; removed by Cluster.close()
    address: tuple[str, int]  # (host, port) where the test reaches its gRPC port
    aliases: list[str] = field(default_factory=list)  # what heal() reconnects it under

    @property
    def id(self) -> str:
        return self.container.get_wrapped_container().id


class Cluster:
    """Nodes of one image on one fresh Docker network; a context manager."""

    def __init__(self, image: str) -> None:
        self.image = image  # xstream-node:<hash>
        self.network = Network()  # the cluster network; removed by close()
        # WARNING: named to sort after "bridge": of a container's networks Docker makes the
        # first by name its gateway, which carries the published ports (see _start).
        self.network.name = f"xstream-drill-{self.network.name}"
        self.network.create()
        self.nodes: dict[str, Node] = {}  # by name, in start order
        self._clients: dict[str, Client] = {}  # host-side clients, by node name
        self._client: docker.DockerClient | None = None  # the Docker SDK's, made when needed

    # --- starting nodes ---

    def start_primary(self, name: str, *args: str) -> Node:
        return self._start(name, ["primary", *args])

    def start_replica(self, name: str, primary: str, *args: str) -> Node:
        return self._start(name, ["replica", "--primary", f"{primary}:{PORT}", *args])

    def _start(self, name: str, argv: list[str]) -> Node:
        assert name not in self.nodes, f"node {name} already started"
        common = ["--host", "0.0.0.0", "--port", str(PORT), "--data-dir", "/data"]
        container = (
            DockerContainer(self.image)
            .with_command([*argv[:1], *common, "--name", name, *argv[1:]])
            .with_exposed_ports(PORT)
        )
        # WARNING: partition() relies on this. The container is made on Docker's default bridge,
        # which stays its gateway and carries its published port, and joins the cluster network
        # second: disconnecting a container from its gateway network can drop the port mapping
        # (Docker 20.10), and the test could no longer observe a partitioned node.
        # (A replica started before the join retries its primary, with a backoff under 1 s.)
        container.start()
        try:
            self.network.connect(container.get_container_id(), network_aliases=[name])
            address = (container.get_container_host_ip(), int(container.get_exposed_port(PORT)))
        except BaseException:
            container.stop()
            raise
        node = Node(name, container, address, [name])
        self.nodes[name] = node
        poll(lambda: self.healthy(name), 20, f"{name} serves gRPC health")
        return node

    # --- observing ---

    def client(self, name: str) -> Client:
        """A host-side Client of node `name` (cached; decode_responses=True)."""
        if name not in self._clients:
            host, port = self.nodes[name].address
            self._clients[name] = Client(host, port, decode_responses=True)
        return self._clients[name]

    def healthy(self, name: str) -> bool:
        """True iff the node answers SERVING to a grpc.health.v1 Check within 1 s."""
        host, port = self.nodes[name].address
        with grpc.insecure_channel(f"{host}:{port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
        return reply.status == health_pb2.HealthCheckResponse.SERVING

    def poll(self, fn: Callable[[], T | None], timeout: float, what: str) -> T:
        """The module's bounded `poll`, as a verb of the cluster."""
        return poll(fn, timeout, what)

    def logs(self) -> str:
        """Every node's stdout and stderr, one titled block per node."""
        blocks = []
        for name, node in self.nodes.items():
            try:
                out, err = node.container.get_logs()
                text = (out + err).decode(errors="replace")
            except Exception as e:  # a removed container still gets a block saying so
                text = f"(no logs: {e!r})"
            blocks.append(f"----- {name} ({self.status(name)}) -----\n{text}")
        return "\n".join(blocks)

    def status(self, name: str) -> str:
        """Docker's state of the node's container: running, paused, exited, ..."""
        try:
            container = self.nodes[name].container.get_wrapped_container()
            container.reload()
            return str(container.status)
        except Exception as e:  # removed
            return f"unknown: {e!r}"

    # --- fault verbs ---

    def kill(self, name: str) -> None:
        """SIGKILL the node: no shutdown, whatever it had not fsynced is lost."""
        self.nodes[name].container.get_wrapped_container().kill(signal="SIGKILL")
        self._drop_client(name)

    def pause(self, name: str) -> None:
        """Freeze every process of the node (its sockets stay open, nothing answers)."""
        self.nodes[name].container.get_wrapped_container().pause()

    def unpause(self, name: str) -> None:
        self.nodes[name].container.get_wrapped_container().unpause()

    def partition(self, name: str) -> None:
        """Cut the node off the cluster network: peers neither reach it nor resolve it."""
        self._docker_network().disconnect(self.nodes[name].id, force=True)

    def heal(self, name: str) -> None:
        """Reconnect a partitioned node under its aliases."""
        node = self.nodes[name]
        self._docker_network().connect(node.id, aliases=node.aliases)

    # --- teardown ---

    def close(self) -> None:
        for name in list(self._clients):
            self._drop_client(name)
        for node in self.nodes.values():
            with contextlib.suppress(Exception):  # already gone: teardown goes on
                node.container.stop()
        self.network.remove()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _drop_client(self, name: str) -> None:
        client = self._clients.pop(name, None)
        if client is not None:
            client.close()

    def _docker(self) -> docker.DockerClient:
        if self._client is None:
            self._client = docker.from_env()
        return self._client

    def _docker_network(self) -> docker.models.networks.Network:
        return self._docker().networks.get(self.network.name)
