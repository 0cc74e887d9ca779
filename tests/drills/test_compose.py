"""deploy/compose.yaml starts a working cluster: its secrets step, etcd on TLS and three nodes
electing a primary, with TLS and users on every link.

The compose file is run as a user would run it (docker-compose, the project's images), on
free host ports and under a project name of its own, and the client bundle is copied out as
the README says (docker cp): one node becomes primary, a write on it (as `app`, over TLS) is
read on the two others, and killing its container hands the role to another node, where the
entry is still there. What the deployment refuses is checked too: a plaintext client, `app`
reconfiguring a node, a client certificate at etcd, and RESP without AUTH.
"""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import redis

from tests.drills.harness import ROOT, poll
from xstream.client import Client
from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc

pytestmark = pytest.mark.drills

COMPOSE = ROOT / "deploy" / "compose.yaml"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Compose:
    def __init__(self, image: str) -> None:
        self.project = f"xstream-test-{uuid.uuid4().hex[:8]}"
        self.ports = {f"xstream{i}": free_port() for i in (1, 2, 3)}
        self.resp_ports = {s: free_port() for s in self.ports}
        self.etcd_port = free_port()
        self.env = {
            **os.environ,
            "XSTREAM_IMAGE": image,
            "XSTREAM_ETCD_IMAGE": "xstream-base:latest",
            "XSTREAM_ETCD_PORT": str(self.etcd_port),
        }
        for i, s in enumerate(self.ports, 1):
            self.env[f"XSTREAM_PORT{i}"] = str(self.ports[s])
            self.env[f"XSTREAM_RESP_PORT{i}"] = str(self.resp_ports[s])
            self.env[f"XSTREAM_METRICS_PORT{i}"] = str(free_port())
        self.bundle = Path()  # the client bundle (DIR/client), once copied out

    def copy_bundle(self, to: Path) -> Path:
        """`docker cp` the client bundle out of a node, as the README says."""
        (container,) = self.run("ps", "-q", "xstream1").split()
        done = subprocess.run(["docker", "cp", f"{container}:/secrets/client", str(to)],
                              capture_output=True, text=True, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
        self.bundle = to
        return to

    def tls(self, user: str = "app") -> dict[str, str]:
        """The Client's TLS arguments: a client certificate that logs in as `user`."""
        b = self.bundle
        return {"ssl_ca_certs": str(b / "ca.crt"), "ssl_certfile": str(b / f"{user}.crt"),
                "ssl_keyfile": str(b / f"{user}.key")}  # fmt: skip

    def channel(self, service: str, user: str = "admin") -> grpc.Channel:
        b = self.bundle
        creds = grpc.ssl_channel_credentials(
            (b / "ca.crt").read_bytes(), (b / f"{user}.key").read_bytes(),
            (b / f"{user}.crt").read_bytes(),
        )  # fmt: skip
        return grpc.secure_channel(f"127.0.0.1:{self.ports[service]}", creds)

    def run(self, *args: str, check: bool = True) -> str:
        """docker-compose's stdout (its stderr too when check=False)."""
        cmd = ["docker-compose", "-f", str(COMPOSE), "-p", self.project, *args]
        done = subprocess.run(cmd, env=self.env, capture_output=True, text=True, check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed:\n{done.stdout}{done.stderr}")
        return done.stdout if check else done.stdout + done.stderr

    def info(self, service: str) -> pb.InfoReply:
        with self.channel(service) as ch:
            return pb_grpc.AdminStub(ch).Info(pb.InfoRequest(), timeout=1)

    def primary(self, among: list[str]) -> str | None:
        found = []
        for s in among:
            info = self.info(s)
            if info.role == "primary" and not info.deposed:
                found.append(s)
        return found[0] if len(found) == 1 else None


@pytest.fixture
def compose(node_image: str, tmp_path: Path) -> Iterator[Compose]:
    if shutil.which("docker-compose") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("docker-compose missing: the compose test needs it under CI=true")
        pytest.skip("docker-compose missing")
    c = Compose(node_image)
    try:
        c.run("up", "-d")
        c.copy_bundle(tmp_path / "xstream-client")
        yield c
    except BaseException:
        print(c.run("logs", "--no-color", check=False)[-20000:])
        raise
    finally:
        c.run("down", "-v", "--timeout", "2", check=False)


def test_compose_elects_a_primary_and_fails_over(compose: Compose) -> None:
    services = list(compose.ports)
    leader = poll(lambda: compose.primary(services), 60, "one elected primary")
    port = compose.ports[leader]
    with Client("127.0.0.1", port, acks="quorum", decode_responses=True, **compose.tls()) as c:
        entry = c.xadd("s", {"a": "1"})
    for s in services:
        with Client("127.0.0.1", compose.ports[s], decode_responses=True, **compose.tls()) as r:
            poll(lambda r=r: r.xrange("s") == [(entry, {"a": "1"})], 20, f"{s} has the entry")
    refusals(compose, leader)
    compose.run("kill", leader)
    others = [s for s in services if s != leader]
    successor = poll(lambda: compose.primary(others), 30, "a new primary")
    tls = compose.tls()
    with Client("127.0.0.1", compose.ports[successor], decode_responses=True, **tls) as c:
        assert c.xrange("s") == [(entry, {"a": "1"})]
        c.xadd("s", {"a": "2"})


def refusals(compose: Compose, leader: str) -> None:
    """What the deployment keeps out, and RESP with the generated password."""
    b = compose.bundle
    plain_channel = grpc.insecure_channel(f"127.0.0.1:{compose.ports[leader]}")
    with plain_channel as ch, pytest.raises(grpc.RpcError) as plain:
        pb_grpc.AdminStub(ch).Info(pb.InfoRequest(), timeout=5)
    assert plain.value.code() == grpc.StatusCode.UNAVAILABLE
    with compose.channel(leader, user="app") as ch, pytest.raises(grpc.RpcError) as promote:
        pb_grpc.AdminStub(ch).Promote(pb.PromoteRequest(), timeout=5)
    assert promote.value.code() == grpc.StatusCode.PERMISSION_DENIED
    # etcd trusts node certificates only: a client certificate of the deployment is refused.
    ctx = ssl.create_default_context(cafile=b / "ca.crt")
    ctx.load_cert_chain(b / "admin.crt", b / "admin.key")
    with pytest.raises(OSError):
        urllib.request.urlopen(
            f"https://127.0.0.1:{compose.etcd_port}/health", timeout=5, context=ctx
        )
    resp = {"port": compose.resp_ports[leader], "ssl": True, "socket_timeout": 5, **compose.tls()}
    with redis.Redis(**resp) as r, pytest.raises(redis.AuthenticationError):
        r.xlen("s")
    password = (b / "app.password").read_text().strip()
    with redis.Redis(username="app", password=password, **resp) as r:
        assert r.xlen("s") == 1
        with pytest.raises(redis.exceptions.NoPermissionError):
            r.flushall()
