"""Coordinator tier: a real etcd (Debian's /usr/bin/etcd, 3.4.23; production wants 3.5+) on
free loopback ports, its data in a temporary directory, one per session; `etcd_tls` is a
second one serving https only, with client certificates required (--client-cert-auth), all
its certificates made by xstream.certs.

Skipped when the binary is absent, unless CI=true, where its absence fails the run. Raft
timings are shortened (heartbeat 50 ms, election 500 ms) so it starts fast and accepts a
1 s lease. Each test gets its own key prefix.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ETCD = os.environ.get("XSTREAM_ETCD", "/usr/bin/etcd")
_prefixes = itertools.count()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class TlsEtcd:
    url: str  # https://127.0.0.1:<port>
    pki: Path  # ca.crt; etcd (its server certificate), n1..n3 (nodes), app (a client)
    foreign: Path  # another CA's ca.crt and n1


@pytest.fixture(scope="session")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The client URL of a fresh single-member etcd."""
    with _etcd(tmp_path_factory.mktemp("etcd"), None) as url:
        yield url


@pytest.fixture(scope="session")
def etcd_tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsEtcd]:
    """A fresh single-member etcd on https only, requiring client certificates of its CA."""
    from xstream import certs  # noqa: PLC0415 (the server extra)

    work: Path = tmp_path_factory.mktemp("etcd-tls")
    certs.make(work / "pki", ["etcd", "n1", "n2", "n3"], ["app"])
    certs.make(work / "foreign", ["n1"])
    with _etcd(work, work / "pki") as url:
        yield TlsEtcd(url, work / "pki", work / "foreign")


@contextlib.contextmanager
def _etcd(work: Path, pki: Path | None) -> Iterator[str]:
    """etcd serving its client URL (https with `pki`'s etcd.crt, client certificates of its
    ca.crt required) until the block ends."""
    if shutil.which(ETCD) is None:  # scripts/test.sh installs it (scripts/etcd.sh)
        pytest.fail(f"etcd binary {ETCD} missing: run scripts/etcd.sh")
    scheme = "http" if pki is None else "https"
    client, peer = f"{scheme}://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"
    tls = []
    if pki is not None:
        tls = ["--cert-file", str(pki / "etcd.crt"), "--key-file", str(pki / "etcd.key"),
               "--trusted-ca-file", str(pki / "ca.crt"), "--client-cert-auth"]  # fmt: skip
    log = (work / "etcd.log").open("wb")
    proc = subprocess.Popen(
        [
            ETCD,
            "--name",
            "t",
            "--data-dir",
            str(work / "data"),
            "--listen-client-urls",
            client,
            "--advertise-client-urls",
            client,
            "--listen-peer-urls",
            peer,
            "--initial-advertise-peer-urls",
            peer,
            "--initial-cluster",
            f"t={peer}",
            "--heartbeat-interval",
            "50",
            "--election-timeout",
            "500",
            *tls,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_healthy(client, proc, work / "etcd.log", _health_context(pki))
        yield client
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _health_context(pki: Path | None) -> ssl.SSLContext | None:
    if pki is None:
        return None
    ctx = ssl.create_default_context(cafile=pki / "ca.crt")
    ctx.load_cert_chain(pki / "app.crt", pki / "app.key")
    return ctx


def _wait_healthy(
    url: str, proc: subprocess.Popen[bytes], log: Path, ctx: ssl.SSLContext | None
) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"etcd exited {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=1, context=ctx) as resp:
                if b'"true"' in resp.read():
                    return
        except OSError:
            pass
        time.sleep(0.05)
    pytest.fail(f"etcd at {url} not healthy within 15 s:\n{log.read_text()[-3000:]}")


@pytest.fixture
def prefix() -> str:
    """A key prefix of this test's own."""
    return f"/xstream-test/{os.getpid()}-{next(_prefixes)}"
