"""Coordinator tier: a real etcd (Debian's /usr/bin/etcd, 3.4.23; production wants 3.5+) on
free loopback ports, its data in a temporary directory, one per session.

Skipped when the binary is absent, unless CI=true, where its absence fails the run. Raft
timings are shortened (heartbeat 50 ms, election 500 ms) so it starts fast and accepts a
1 s lease. Each test gets its own key prefix.
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ETCD = os.environ.get("XSTREAM_ETCD", "/usr/bin/etcd")
_prefixes = itertools.count()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The client URL of a fresh single-member etcd."""
    if shutil.which(ETCD) is None:  # scripts/test.sh installs it (scripts/etcd.sh)
        pytest.fail(f"etcd binary {ETCD} missing: run scripts/etcd.sh")
    work: Path = tmp_path_factory.mktemp("etcd")
    client, peer = f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"
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
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_healthy(client, proc, work / "etcd.log")
        yield client
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"etcd exited {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=1) as resp:
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
