"""deploy/compose.yaml starts a working cluster: etcd and three nodes electing a primary.

The compose file is run as a user would run it (docker-compose, the project's images), on
free host ports and under a project name of its own: one node becomes primary, a write on it
is read on the two others, and killing its container hands the role to another node, where
the entry is still there.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import uuid
from collections.abc import Iterator

import grpc
import pytest

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
        self.env = {
            **os.environ,
            "XSTREAM_IMAGE": image,
            "XSTREAM_ETCD_IMAGE": "xstream-base:latest",
            "XSTREAM_ETCD_PORT": str(free_port()),
        }
        for i, (_, port) in enumerate(self.ports.items(), 1):
            self.env[f"XSTREAM_PORT{i}"] = str(port)
            self.env[f"XSTREAM_METRICS_PORT{i}"] = str(free_port())

    def run(self, *args: str, check: bool = True) -> str:
        cmd = ["docker-compose", "-f", str(COMPOSE), "-p", self.project, *args]
        done = subprocess.run(cmd, env=self.env, capture_output=True, text=True, check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed:\n{done.stdout}{done.stderr}")
        return done.stdout + done.stderr

    def info(self, service: str) -> pb.InfoReply:
        with grpc.insecure_channel(f"127.0.0.1:{self.ports[service]}") as ch:
            return pb_grpc.AdminStub(ch).Info(pb.InfoRequest(), timeout=1)

    def primary(self, among: list[str]) -> str | None:
        found = []
        for s in among:
            info = self.info(s)
            if info.role == "primary" and not info.deposed:
                found.append(s)
        return found[0] if len(found) == 1 else None


@pytest.fixture
def compose(node_image: str) -> Iterator[Compose]:
    if shutil.which("docker-compose") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("docker-compose missing: the compose test needs it under CI=true")
        pytest.skip("docker-compose missing")
    c = Compose(node_image)
    try:
        c.run("up", "-d")
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
    with Client("127.0.0.1", port, acks="quorum", decode_responses=True) as c:
        entry = c.xadd("s", {"a": "1"})
    for s in services:
        with Client("127.0.0.1", compose.ports[s], decode_responses=True) as r:
            poll(lambda r=r: r.xrange("s") == [(entry, {"a": "1"})], 20, f"{s} has the entry")
    compose.run("kill", leader)
    others = [s for s in services if s != leader]
    successor = poll(lambda: compose.primary(others), 30, "a new primary")
    with Client("127.0.0.1", compose.ports[successor], decode_responses=True) as c:
        assert c.xrange("s") == [(entry, {"a": "1"})]
        c.xadd("s", {"a": "2"})
