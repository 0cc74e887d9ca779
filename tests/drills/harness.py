"""The drill harness: xstream nodes as containers on one Docker network, driven by fault verbs.

    image = build_node_image()                      # scripts/images.sh -> "xstream-node:<hash>"
    with Cluster(image) as c:
        c.start_primary("n1"); c.start_replica("n2", primary="n1")
        c.client("n1").xadd("s", {"a": "1"})
        c.partition("n2"); ...; c.heal("n2")
        c.poll(lambda: c.client("n2").xlen("s") == 1, 30, "n2 has the entry")

Coordinated mode (automatic failover): `start_etcd()` runs etcd (xstream-base) as "etcd" on
the cluster network, then `start_node(name, ...)` runs `xstream node` nodes that elect their
primary there; `primary()` names the node acting as primary (asking every node's Admin.Info).

Verbs: `kill` (SIGKILL), `restart` (start a killed node's container again, its data kept),
`pause`/`unpause` (cgroup freezer), `partition` (disconnect from the cluster network, etcd
included) and `heal` (reconnect under the same aliases); disk faults: `fill_disk`/`free_disk`
(the node's data file system full to the last byte, then freed), `fail_fsync`/`mend_fsync`
(strace attached to the node's process makes every fsync fail with EIO, then detaches) and
`corrupt_log` (a byte flipped in a record in the middle of a stopped node's log).

Each node is also on Docker's default bridge, which has no names: peers cannot reach a
partitioned node (they know it only by its alias), while its published port keeps it
observable from the test. Every wait is `poll`: bounded, on something observable, failing
with a message that names what was awaited; the drills' conftest.py adds every node's logs
(`Cluster.logs()`) to a failed test's report.

Disks: a node's /data is a tmpfs volume of DISK_SIZE (its own small file system, which
`fill_disk` fills without touching the host's disk), kept mounted by a *holder* container
(`Node.disk`, sleeping, root) that mounts it too at /disk: Docker unmounts a tmpfs volume,
and drops its data, when the last container using it stops, and `kill` / `restart` must keep
a node's data. The holder is also where a stopped node's files are changed. Nodes run with
CAP_SYS_PTRACE, so strace (in the image) can be attached to them from `docker exec`.

TLS and users, as deploy/compose.yaml runs them: the cluster's first node or etcd runs
`xstream secrets` (the node image, as root) into a volume of its own, mounted read-only at
/secrets by etcd and every node, and copies it out for the test (`secrets`); a node named
later gets its certificate added the same way. etcd serves https only and asks for a node
certificate (--client-cert-auth, the node CA); nodes serve TLS with their certificate
(--tls-dir), load the users (--aclfile: default off, admin, app, replica) and replicate as
`replica` (--primary-password-file); no --insecure. The test's observers (`channel`,
`healthy`) call as `admin` and the writers (rpc channels, the product Client) as `app`, each
by its client certificate (its CN is the user).

Invariants: a node's name is its network alias (peers reach it as NAME:7700) and its
`--name`; every node listens on 7700 in its container, published on a free host port (a
restart may publish it on another: `address(name)` is current); a Cluster removes its
containers, volumes and network on exit, killed or not (conftest.py has read a failed test's logs by
then). Observers (`node_info`, `primary`, `digest`, `xrange`) talk to one node over raw gRPC
(rpc.py), never through a Client that could route elsewhere; they are thread-safe.
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import json
import os
import shutil
import ssl
import subprocess
import tarfile
import tempfile
import threading
import time
import urllib.request
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
from testcontainers.core.docker_client import DockerClient
from testcontainers.core.network import Network

from xstream.client import Client
from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc

from . import rpc

ROOT = Path(__file__).resolve().parents[2]
PORT = 7700  # every node's gRPC port inside its container
ETCD_PORT = 2379  # etcd's client port, in its container and as https://etcd:2379 to nodes
ETCD_IMAGE = "xstream-base:latest"  # Debian's etcd-server 3.4 (scripts/images.sh tags it)
DATA = "/data"  # a node's data directory, in its container
DISK = "/disk"  # the same file system, in the node's holder container
DISK_SIZE = 256 << 20  # bytes of each node's tmpfs (only what is written uses memory)
UID = 10001  # the image's `xstream` user, owner of /data (deploy/image/node.Dockerfile)
SECRETS = "/secrets"  # `xstream secrets`' tree, in etcd's and every node's container (ro)
NAMED = ("etcd", "n1", "n2", "n3")  # certificates made with the secrets (others: on demand)
EIO_PID_FILE = "/tmp/xstream-drill-strace.pid"  # in a node's container, while fail_fsync holds
PAGE = 5000  # entries per XRANGE call when reading a whole stream
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
    disk: DockerContainer | None = None  # the holder of its /data volume (None: etcd)

    @property
    def id(self) -> str:
        return str(self.container.get_wrapped_container().id)


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
        self.etcd: Node | None = None  # started by start_etcd()
        self._clients: dict[str, Client] = {}  # host-side clients, by node name
        self._channels: dict[str, grpc.Channel] = {}  # raw gRPC, by "host:port"
        self._lock = threading.Lock()  # guards _channels (writers observe from threads)
        self._client: docker.DockerClient | None = None  # the Docker SDK's, made when needed
        self._volumes: list[str] = []  # the nodes' tmpfs volumes, removed by close()
        self.secrets_volume = f"{self.network.name}-secrets"  # made with the first node
        self.secrets: Path | None = None  # the test's copy of it (a temporary directory)
        self._issued: set[str] = set()  # names with a node certificate in the volume

    # --- starting nodes ---

    def start_primary(self, name: str, *args: str) -> Node:
        return self._start(name, ["primary", *args])

    def start_replica(self, name: str, primary: str, *args: str) -> Node:
        return self._start(name, ["replica", "--primary", f"{primary}:{PORT}", *args])

    def start_node(self, name: str, *args: str) -> Node:
        """An `xstream node` (coordinated mode) electing through this cluster's etcd."""
        assert self.etcd is not None, "start_etcd() first"
        argv = ["node", "--advertise", f"{name}:{PORT}", "--etcd", f"https://etcd:{ETCD_PORT}"]
        return self._start(name, [*argv, *args], ready=lambda: self.node_info(name))

    def start_etcd(self) -> Node:
        """A single-member etcd as "etcd" on the cluster network (client port also published).
        Raft timings are short (heartbeat 50 ms, election 500 ms): it starts fast and a 2 s
        lease is well above its election timeout. https only, node certificates only."""
        self._certify("etcd")
        peer = "http://127.0.0.1:2380"  # one member: no peer traffic
        tls = f"{SECRETS}/tls"
        argv = [
            "etcd", "--name", "etcd", "--data-dir", "/tmp/etcd",
            "--listen-client-urls", f"https://0.0.0.0:{ETCD_PORT}",
            "--advertise-client-urls", f"https://etcd:{ETCD_PORT}",
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"etcd={peer}",
            "--heartbeat-interval", "50", "--election-timeout", "500",
            "--cert-file", f"{tls}/etcd.crt", "--key-file", f"{tls}/etcd.key",
            "--trusted-ca-file", f"{tls}/nodes-ca.crt", "--client-cert-auth",
        ]  # fmt: skip
        container, address = self._container(ETCD_IMAGE, argv, ETCD_PORT, "etcd")
        self.etcd = Node("etcd", container, address, ["etcd"])
        ctx = self._etcd_context()
        poll(lambda: _etcd_healthy(address, ctx), 20, "etcd answers /health")
        return self.etcd

    def _start(self, name: str, argv: list[str], ready: Callable[[], object] | None = None) -> Node:
        assert name not in self.nodes, f"node {name} already started"
        self._certify(name)
        common = ["--host", "0.0.0.0", "--port", str(PORT), "--data-dir", DATA,
                  "--tls-dir", f"{SECRETS}/tls", "--aclfile", f"{SECRETS}/users/users.acl",
                  "--primary-user", "replica",
                  "--primary-password-file", f"{SECRETS}/users/replica.password"]  # fmt: skip
        command = [*argv[:1], *common, "--name", name, *argv[1:]]
        volume, disk = self._disk(name)
        container, address = self._container(
            self.image, command, PORT, name, volume=volume, cap_add=["SYS_PTRACE"]
        )
        node = Node(name, container, address, [name], disk)
        self.nodes[name] = node
        poll(ready or (lambda: self.healthy(name)), 20, f"{name} serves gRPC")
        return node

    def _disk(self, name: str) -> tuple[str, DockerContainer]:
        """Node `name`'s tmpfs volume, and its started holder (see the module's Disks)."""
        volume = f"{self.network.name}-{name}"
        options = f"size={DISK_SIZE},uid={UID},gid={UID},mode=0755"
        self._docker().volumes.create(
            volume, driver="local", driver_opts={"type": "tmpfs", "device": "tmpfs", "o": options}
        )
        self._volumes.append(volume)
        holder = (
            DockerContainer(self.image)
            .with_kwargs(entrypoint=["sleep", "infinity"], user="root")
            .with_volume_mapping(volume, DISK, "rw")
        )
        holder.start()
        return volume, holder

    def _container(
        self,
        image: str,
        command: list[str],
        port: int,
        alias: str,
        volume: str | None = None,
        cap_add: list[str] | None = None,
    ) -> tuple[DockerContainer, tuple[str, int]]:
        """A started container publishing `port`, on the cluster network as `alias`, with
        `volume` (if any) as its data directory."""
        container = DockerContainer(image).with_command(command).with_exposed_ports(port)
        container.with_volume_mapping(self.secrets_volume, SECRETS, "ro")
        if volume is not None:
            container.with_volume_mapping(volume, DATA, "rw")
        if cap_add:
            container.with_kwargs(cap_add=cap_add)
        # WARNING: partition() relies on this. The container is made on Docker's default bridge,
        # which stays its gateway and carries its published port, and joins the cluster network
        # second: disconnecting a container from its gateway network can drop the port mapping
        # (Docker 20.10), and the test could no longer observe a partitioned node.
        # (A node started before the join retries its peers and etcd, with a backoff under 1 s.)
        container.start()
        try:
            self.network.connect(container.get_container_id(), network_aliases=[alias])
            address = (container.get_container_host_ip(), int(container.get_exposed_port(port)))
        except BaseException:
            container.stop()
            raise
        return container, address

    def _certify(self, name: str) -> None:
        """Make the secrets volume with the first name (NAMED's certificates too), or add
        `name`'s certificate to it; the first time, copy it out for the test."""
        if name in self._issued:
            return
        names = sorted({name, *NAMED}) if not self._issued else [name]
        if not self._issued:
            self._docker().volumes.create(self.secrets_volume)
            self._volumes.append(self.secrets_volume)
        argv = ["secrets", "--out", SECRETS, "--node", ",".join(names), "--owner", f"{UID}:{UID}"]
        for host in self._host_names():
            argv += ["--host", host]
        maker = self._docker().containers.run(
            self.image, argv, user="root", detach=True,
            volumes={self.secrets_volume: {"bind": SECRETS, "mode": "rw"}},
        )  # fmt: skip
        try:
            code = maker.wait(timeout=60)["StatusCode"]
            if code != 0:
                raise DrillError(f"xstream secrets exited {code}: {maker.logs().decode()}")
            if self.secrets is None:
                stream, _ = maker.get_archive(SECRETS)
                self.secrets = Path(tempfile.mkdtemp(prefix="xstream-drill-secrets-"))
                with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
                    tar.extractall(self.secrets, filter="data")
                self.secrets /= Path(SECRETS).name
        finally:
            maker.remove(force=True)
        self._issued.update(names)

    def _host_names(self) -> list[str]:
        """What the test dials published ports as, for the node certificates' SANs:
        testcontainers' host, or inside a container the default bridge's gateway (given, or
        the first address of its subnet, as Docker picks it)."""
        names = [DockerClient().host()]
        with contextlib.suppress(Exception):  # no bridge IPAM: the host name alone
            ipam = self._docker().networks.get("bridge").attrs["IPAM"]["Config"][0]
            gateway = ipam.get("Gateway") or str(ipaddress.ip_network(ipam["Subnet"])[1])
            names.append(gateway)
        return names

    def _bundle(self) -> Path:
        assert self.secrets is not None, "no node started yet: no secrets"
        return self.secrets / "client"

    def credentials(self, user: str) -> grpc.ChannelCredentials:
        """gRPC TLS credentials whose client certificate logs in as `user` (admin, app)."""
        b = self._bundle()
        return grpc.ssl_channel_credentials(
            (b / "ca.crt").read_bytes(), (b / f"{user}.key").read_bytes(),
            (b / f"{user}.crt").read_bytes(),
        )  # fmt: skip

    def client_tls(self, user: str) -> dict[str, str]:
        """The product Client's TLS arguments for `user`."""
        b = self._bundle()
        return {"ssl_ca_certs": str(b / "ca.crt"), "ssl_certfile": str(b / f"{user}.crt"),
                "ssl_keyfile": str(b / f"{user}.key")}  # fmt: skip

    def _etcd_context(self) -> ssl.SSLContext:
        """etcd's own certificate, the node CA: what etcd accepts."""
        assert self.secrets is not None
        tls = self.secrets / "tls"
        ctx = ssl.create_default_context(cafile=tls / "nodes-ca.crt")
        ctx.load_cert_chain(tls / "etcd.crt", tls / "etcd.key")
        return ctx

    # --- observing ---

    def client(self, name: str) -> Client:
        """A host-side Client of node `name` (cached; decode_responses=True)."""
        if name not in self._clients:
            host, port = self.nodes[name].address
            tls = self.client_tls("app")
            self._clients[name] = Client(host, port, decode_responses=True, **tls)
        return self._clients[name]

    def address(self, name: str) -> str:
        """Where the test reaches node `name`'s gRPC port: "host:port"."""
        host, port = self.nodes[name].address
        return f"{host}:{port}"

    def name_of(self, address: str) -> str:
        """The node published at "host:port" ("" if none is)."""
        return next((n for n in self.nodes if self.address(n) == address), "")

    def channel(self, name: str) -> grpc.Channel:
        """A raw gRPC channel to node `name` (cached per address)."""
        address = self.address(name)
        with self._lock:
            if address not in self._channels:
                self._channels[address] = rpc.channel(address, self.credentials("admin"))
            return self._channels[address]

    def healthy(self, name: str) -> bool:
        """True iff the node answers SERVING to a grpc.health.v1 Check within 1 s."""
        host, port = self.nodes[name].address
        with grpc.secure_channel(f"{host}:{port}", self.credentials("admin")) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)

    def node_info(self, name: str, timeout: float = 1.0) -> pb.InfoReply:
        """The node's Admin.Info (raises grpc.RpcError if it does not answer in time)."""
        return rpc.info(self.channel(name), timeout)

    def digest(self, name: str) -> str:
        """The digest of the node's logical state (Admin.Digest)."""
        return str(rpc.digest(self.channel(name)).digest)

    def primary(self, timeout: float = 0.2) -> str | None:
        """The node acting as primary: of the nodes answering Info within `timeout` (asked all
        at once), the one with role primary, not deposed, at the highest epoch; None if no
        node is one."""
        asked = []
        for name in list(self.nodes):
            stub = pb_grpc.AdminStub(self.channel(name))
            asked.append((name, stub.Info.future(pb.InfoRequest(), timeout=timeout)))
        best: tuple[int, str] | None = None
        for name, future in asked:
            try:
                info = future.result()
            except grpc.RpcError:  # down, paused: not a primary we can use
                continue
            acting = info.role == "primary" and not info.deposed
            if acting and (best is None or info.epoch > best[0]):
                best = (info.epoch, name)
        return None if best is None else best[1]

    def xrange(self, name: str, key: str) -> list[tuple[str, dict[str, str]]]:
        """The whole stream `key` as node `name` holds it, read from that node, page by page."""
        out: list[tuple[str, dict[str, str]]] = []
        start = b"-"
        while True:
            argv = [b"XRANGE", key.encode(), start, b"+", b"COUNT", str(PAGE).encode()]
            page = rpc.execute(self.channel(name), argv, timeout=30).value
            assert isinstance(page, list), page
            for item in page:
                entry_id, flat = item
                words = [w.decode() for w in flat]
                out.append((entry_id.decode(), dict(zip(words[::2], words[1::2], strict=True))))
            if len(page) < PAGE:
                return out
            start = b"(" + out[-1][0].encode()

    def poll(self, fn: Callable[[], T | None], timeout: float, what: str) -> T:
        """The module's bounded `poll`, as a verb of the cluster."""
        return poll(fn, timeout, what)

    def logs(self) -> str:
        """Every node's stdout and stderr (etcd's last), one titled block per node."""
        blocks = []
        every = [*self.nodes.values(), *([self.etcd] if self.etcd else [])]
        for node in every:
            blocks.append(f"----- {node.name} ({self._state(node)}) -----\n{_logs_of(node)}")
        return "\n".join(blocks)

    def events(self, name: str, event: str) -> list[dict[str, object]]:
        """The structured log lines (logs.py's JSON) of node `name` whose event is `event`,
        over the container's whole life (a restarted container keeps its earlier logs)."""
        out = []
        for line in _logs_of(self.nodes[name]).splitlines():
            if f'"{event}"' not in line:
                continue
            with contextlib.suppress(ValueError):
                record = json.loads(line[line.index("{") :])
                if record.get("event") == event:
                    out.append(record)
        return out

    def status(self, name: str) -> str:
        """Docker's state of the node's container: running, paused, exited, ..."""
        return self._state(self.nodes[name])

    def _state(self, node: Node) -> str:
        try:
            container = node.container.get_wrapped_container()
            container.reload()
            return str(container.status)
        except Exception as e:  # removed
            return f"unknown: {e!r}"

    # --- fault verbs ---

    def kill(self, name: str) -> None:
        """SIGKILL the node: no shutdown, whatever it had not fsynced is lost."""
        self.nodes[name].container.get_wrapped_container().kill(signal="SIGKILL")
        self._drop_client(name)

    def restart(self, name: str) -> None:
        """Start a killed (exited) node's container again: same data, aliases and command;
        wait until it answers Info (its published port may have changed)."""
        node = self.nodes[name]
        self._drop_client(name)
        node.container.get_wrapped_container().start()
        host_port = node.container.get_exposed_port(PORT)
        node.address = (node.container.get_container_host_ip(), int(host_port))
        poll(lambda: self.node_info(name), 30, f"restarted {name} answers Info")

    def pause(self, name: str) -> None:
        """Freeze every process of the node (its sockets stay open, nothing answers)."""
        self.nodes[name].container.get_wrapped_container().pause()

    def unpause(self, name: str) -> None:
        self.nodes[name].container.get_wrapped_container().unpause()

    def partition(self, name: str) -> None:
        """Cut the node off the cluster network: peers and etcd neither reach it nor resolve
        it; the test still reaches its published port (it stays on Docker's default bridge)."""
        self._docker_network().disconnect(self.nodes[name].id, force=True)

    def heal(self, name: str) -> None:
        """Reconnect a partitioned node under its aliases."""
        node = self.nodes[name]
        self._docker_network().connect(node.id, aliases=node.aliases)

    def fill_disk(self, name: str) -> int:
        """Fill the node's data file system to the last byte (a file `.filler` in its data
        directory); answer the bytes still free (0 unless the node freed some since)."""
        disk = self._holder(name)
        _exec(disk, f"dd if=/dev/zero of={DISK}/.filler bs=1M 2>/dev/null; true")
        return int(_exec(disk, f"df -B1 --output=avail {DISK} | tail -1").strip())

    def free_disk(self, name: str) -> None:
        """Undo fill_disk."""
        _exec(self._holder(name), f"rm -f {DISK}/.filler")

    def fail_fsync(self, name: str) -> None:
        """Attach strace to the node's process (PID 1 of its container, every thread): from
        now on each fsync and fdatasync it makes fails with EIO. Undone by mend_fsync."""
        strace = (
            "strace -f -qq -o /dev/null -p 1 -e trace=fsync,fdatasync "
            "-e inject=fsync,fdatasync:error=EIO"
        )
        container = self._wrapped(name)
        container.exec_run(["sh", "-c", f"echo $$ > {EIO_PID_FILE}; exec {strace}"], user="root",
                           detach=True)  # fmt: skip
        poll(lambda: self._tracer(name) != 0, 10, f"strace is attached to {name}'s process")

    def mend_fsync(self, name: str) -> None:
        """Detach fail_fsync's strace (SIGINT: it lets go of every thread)."""
        _exec(self._wrapped(name), f"kill -INT $(cat {EIO_PID_FILE}) && rm {EIO_PID_FILE}")
        poll(lambda: self._tracer(name) == 0, 10, f"strace has let go of {name}'s process")

    def corrupt_log(self, name: str) -> str:
        """Flip one bit in the middle of a record in the middle of the node's largest log
        segment (never its last record, so it cannot pass for a torn tail), the node being
        stopped; answer what was changed ("aof-<base>.xlog@<byte>/<file size>")."""
        assert self.status(name) == "exited", f"corrupt_log: {name} must be stopped first"
        return _exec(self._holder(name), ["python3", "-c", _FLIP, DISK]).strip()

    def _holder(self, name: str) -> docker.models.containers.Container:
        disk = self.nodes[name].disk
        assert disk is not None, f"{name} has no disk holder"
        return disk.get_wrapped_container()

    def _wrapped(self, name: str) -> docker.models.containers.Container:
        return self.nodes[name].container.get_wrapped_container()

    def _tracer(self, name: str) -> int:
        """The TracerPid of the node's process (0: none is attached)."""
        status = _exec(self._wrapped(name), "cat /proc/1/status")
        return int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("Tracer")))

    # --- teardown ---

    def close(self) -> None:
        for name in list(self._clients):
            self._drop_client(name)
        with self._lock:
            for ch in self._channels.values():
                ch.close()
            self._channels.clear()
        for node in [*self.nodes.values(), *([self.etcd] if self.etcd else [])]:
            with contextlib.suppress(Exception):  # already gone: teardown goes on
                node.container.stop()
            if node.disk is not None:
                with contextlib.suppress(Exception):
                    node.disk.stop()
        for volume in self._volumes:
            with contextlib.suppress(Exception):
                self._docker().volumes.get(volume).remove(force=True)
        self.network.remove()
        if self.secrets is not None:
            shutil.rmtree(self.secrets.parent, ignore_errors=True)

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


def _exec(container: docker.models.containers.Container, command: str | list[str]) -> str:
    """Run `command` (a shell line, or an argv) in the container as root; its output.
    Raises DrillError if it fails."""
    argv = ["sh", "-c", command] if isinstance(command, str) else command
    code, out = container.exec_run(argv, user="root")
    text = out.decode(errors="replace")
    if code != 0:
        raise DrillError(f"{argv} in {container.name} exited {code}: {text}")
    return text


# corrupt_log's program, run in a holder (the node image: xstream's records module is there).
_FLIP = """
import pathlib, sys
from xstream.node import records
segments = sorted(pathlib.Path(sys.argv[1]).glob("aof-*.xlog"), key=lambda p: p.stat().st_size)
if not segments:
    sys.exit("no log segment")
seg = segments[-1]
data = bytearray(seg.read_bytes())
starts, pos = [], 0
while pos + records.HEADER.size <= len(data):
    length, _ = records.HEADER.unpack_from(data, pos)
    if pos + records.HEADER.size + length > len(data):
        break
    starts.append((pos, length))
    pos += records.HEADER.size + length
if len(starts) < 3:
    sys.exit(f"{seg.name} holds {len(starts)} records: too few to damage its middle")
start, length = starts[len(starts) // 2]
at = start + records.HEADER.size + length // 2
data[at] ^= 0x01
seg.write_bytes(data)
print(f"{seg.name}@{at}/{len(data)}")
"""


def _logs_of(node: Node) -> str:
    try:
        out, err = node.container.get_logs()
        return (out + err).decode(errors="replace")
    except Exception as e:  # a removed container still gets a block saying so
        return f"(no logs: {e!r})"


def _etcd_healthy(address: tuple[str, int], ctx: ssl.SSLContext) -> bool:
    host, port = address
    with urllib.request.urlopen(f"https://{host}:{port}/health", timeout=1, context=ctx) as r:
        return bool(json.load(r).get("health") == "true")
