"""The RESP port: redis-py (RESP2 and RESP3), raw sockets and redis-cli against real nodes.

Every node is started with `--resp-port` on a free port; what Redis itself answers byte for
byte is compared in tests/compat/test_resp_compat.py.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time

import pytest
import redis
from conftest import Cluster, Node, free_port, poll


def _with_resp(cluster: Cluster, role: str, primary: Node | None = None) -> tuple[Node, int]:
    port = free_port()
    if primary is None:
        return cluster.primary("--resp-port", str(port)), port
    return cluster.replica(primary, "--resp-port", str(port)), port


def _raw(port: int, data: bytes, timeout: float = 5.0) -> bytes:
    """Send `data`, read until the server closes the connection (or `timeout`)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                return out + b"<closed>"
            out += chunk
        return out


@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_streams(cluster: Cluster, protocol: int) -> None:
    _, port = _with_resp(cluster, "primary")
    r = redis.Redis(port=port, protocol=protocol, decode_responses=True)
    other = redis.Redis(port=port, protocol=protocol, decode_responses=True)
    first = r.xadd("events", {"user": "1", "action": "click"})
    assert r.xrange("events") == [(first, {"user": "1", "action": "click"})]
    assert r.xlen("events") == 1
    got: list[object] = []
    reader = threading.Thread(target=lambda: got.append(r.xread({"events": "$"}, block=10000)))
    reader.start()
    poll("the reader to block", lambda: other.info("clients")["blocked_clients"] == 1)
    second = other.xadd("events", {"user": "2"})
    reader.join(10)
    entries = [(second, {"user": "2"})]
    # redis-py's shapes: RESP3's map as a dict of [entries], RESP2's array of [key, entries]
    assert got == [{"events": [entries]}] if protocol == 3 else [[["events", entries]]]
    assert r.ping() is True
    assert r.client_id() > 0
    r.close()
    other.close()


def test_pipeline_of_1000(cluster: Cluster) -> None:
    _, port = _with_resp(cluster, "primary")
    r = redis.Redis(port=port)
    pipe = r.pipeline(transaction=False)
    for i in range(1000):
        pipe.xadd("p", {"n": str(i)}, id=f"{i + 1}-0")
    ids = pipe.execute()
    assert ids == [f"{i + 1}-0".encode() for i in range(1000)]
    assert r.xlen("p") == 1000
    r.close()


def test_blocked_command_holds_back_its_connection_only(cluster: Cluster) -> None:
    _, port = _with_resp(cluster, "primary")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"XREAD BLOCK 0 STREAMS k $\r\nPING\r\n")
        r = redis.Redis(port=port)
        poll("the read to block", lambda: r.info("clients")["blocked_clients"] == 1)
        assert r.ping() is True  # another connection is not stalled
        new_id = r.xadd("k", {"f": "v"})
        data = b""
        while not data.endswith(b"+PONG\r\n"):
            data += s.recv(65536)
        assert data == (
            b"*1\r\n*2\r\n$1\r\nk\r\n*1\r\n*2\r\n$%d\r\n%s\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n+PONG\r\n"
            % (len(new_id), new_id)
        )
        r.close()


def test_disconnect_while_blocked_frees_the_waiter(cluster: Cluster) -> None:
    _, port = _with_resp(cluster, "primary")
    r = redis.Redis(port=port)
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(
        b"*6\r\n$5\r\nXREAD\r\n$5\r\nBLOCK\r\n$1\r\n0\r\n$7\r\nSTREAMS\r\n$1\r\nk\r\n$1\r\n$\r\n"
    )
    poll("the read to block", lambda: r.info("clients")["blocked_clients"] == 1)
    s.close()
    poll("the waiter to be freed", lambda: r.info("clients")["blocked_clients"] == 0)
    assert r.info("clients")["connected_clients"] == 1
    r.close()


def test_replica_refuses_writes_and_serves_replicated_ones(cluster: Cluster) -> None:
    primary, pport = _with_resp(cluster, "primary")
    _, rport = _with_resp(cluster, "replica", primary)
    p = redis.Redis(port=pport)
    rep = redis.Redis(port=rport)
    with pytest.raises(redis.exceptions.ReadOnlyError):
        rep.xadd("s", {"f": "v"})
    new_id = p.xadd("s", {"f": "v"})
    poll("the write on the replica", lambda: rep.xlen("s") == 1)
    assert rep.xrange("s") == [(new_id, {b"f": b"v"})]
    assert rep.execute_command("HELLO")[b"role"] == b"replica"
    p.close()
    rep.close()


@pytest.mark.parametrize(
    ("request_bytes", "error"),
    [
        (
            b'\xff\xfe garbage "unbalanced\r\n',
            b"-ERR Protocol error: unbalanced quotes in request\r\n",
        ),
        (b"*2\r\n$4\r\nPING\r\nxx\r\n", b"-ERR Protocol error: expected '$', got 'x'\r\n"),
        (b"*1\r\n$" + b"1" * 70000, b"-ERR Protocol error: too big bulk count string\r\n"),
        (b"*1\r\n$99999999999\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
        (b"*x\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    ],
)
def test_protocol_errors_close_the_connection(
    cluster: Cluster, request_bytes: bytes, error: bytes
) -> None:
    _, port = _with_resp(cluster, "primary")
    other = redis.Redis(port=port)
    assert other.ping() is True
    assert _raw(port, request_bytes) == error + b"<closed>"
    assert other.ping() is True
    other.close()


def test_inline_and_connection_commands(cluster: Cluster) -> None:
    _, port = _with_resp(cluster, "primary")
    out = _raw(port, b"PING\r\nECHO hi\r\nSELECT 15\r\nSELECT 16\r\nHELLO 4\r\nQUIT\r\nPING\r\n")
    assert out == (
        b"+PONG\r\n$2\r\nhi\r\n+OK\r\n-ERR DB index is out of range\r\n"
        b"-NOPROTO unsupported protocol version\r\n+OK\r\n<closed>"
    )


def test_redis_cli(cluster: Cluster) -> None:
    """(redis-cli comes with Debian's redis-server, which scripts/test.sh installs.)"""
    assert shutil.which("redis-cli"), "redis-cli is missing (scripts/test.sh installs it)"
    _, port = _with_resp(cluster, "primary")
    out = subprocess.run(
        ["redis-cli", "-p", str(port), "XADD", "s", "*", "f", "v"],
        capture_output=True, text=True, timeout=10, check=True,
    )  # fmt: skip
    new_id = out.stdout.strip()
    assert new_id.endswith("-0")
    out = subprocess.run(
        ["redis-cli", "-p", str(port), "XRANGE", "s", "-", "+"],
        capture_output=True, text=True, timeout=10, check=True,
    )  # fmt: skip
    assert out.stdout.split() == [new_id, "f", "v"]


@pytest.mark.parametrize("protocol", [2, 3])
def test_long_replies_encoded_in_pieces(cluster: Cluster, protocol: int) -> None:
    _, port = _with_resp(cluster, "primary")
    r = redis.Redis(port=port, protocol=protocol)
    pipe = r.pipeline(transaction=False)
    for i in range(5000):
        pipe.xadd("long", {"n": str(i)}, id=f"{i + 1}-1")
    pipe.execute()
    entries = r.xrange("long")
    assert [e[0] for e in entries] == [f"{i + 1}-1".encode() for i in range(5000)]
    assert entries[-1][1] == {b"n": b"4999"}
    read = r.xread({"long": "0", "none": "0"})
    got = read[b"long"][0] if protocol == 3 else read[0][1]
    assert got == entries
    r.close()


def test_select_reaches_the_database_and_a_replica_keeps_it(cluster: Cluster) -> None:
    primary, port = _with_resp(cluster, "primary")
    _, rport = _with_resp(cluster, "replica", primary)
    seven, zero = redis.Redis(port=port, db=7), redis.Redis(port=port, db=0)
    seven.xadd("s", {"f": "seven"})
    assert zero.exists("s") == 0
    with seven.pipeline() as p:
        p.watch("s")
        p.multi()
        p.xlen("s")
        zero.xadd("s", {"f": "zero"})  # the same name in another database: no conflict
        assert p.execute() == [1]
    replica7, replica0 = redis.Redis(port=rport, db=7), redis.Redis(port=rport, db=0)
    poll("both databases on the replica", lambda: replica7.xlen("s") == replica0.xlen("s") == 1)
    assert replica0.xrange("s")[0][1] == {b"f": b"zero"}
    assert replica7.xrange("s")[0][1] == {b"f": b"seven"}
    for c in (seven, zero, replica7, replica0):
        c.close()


def test_blpop_waits_for_a_push_from_another_connection(cluster: Cluster) -> None:
    _, port = _with_resp(cluster, "primary")
    waiting, pusher = redis.Redis(port=port), redis.Redis(port=port)
    got: list[object] = []
    t = threading.Thread(target=lambda: got.append(waiting.blpop(["q"], timeout=10)))
    t.start()
    poll("the blocked client", lambda: pusher.info("clients")["blocked_clients"] == 1)
    pusher.xadd("q2", {"f": "v"})
    pusher.rpush("q", "job")
    t.join(10)
    assert got == [(b"q", b"job")]
    assert pusher.exists("q") == 0
    assert waiting.blpop(["q"], timeout=0.2) is None
    gone = socket.create_connection(("127.0.0.1", port))
    gone.sendall(b"BLPOP q 0\r\n")  # a client that leaves while blocked frees its wait
    poll("the second blocked client", lambda: pusher.info("clients")["blocked_clients"] == 1)
    gone.close()
    poll("no blocked client", lambda: pusher.info("clients")["blocked_clients"] == 0)
    waiting.close()
    pusher.close()


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_a_client_that_does_not_read_is_bounded_and_others_are_served(cluster: Cluster) -> None:
    """100,000 pipelined XRANGEs from a client that does not read its replies: the node stops
    reading it once its unsent replies pass the high-water mark (its memory stays bounded),
    another client is served meanwhile, and once the first reads, every reply arrives."""
    node, port = _with_resp(cluster, "primary")
    assert node.proc is not None
    redis.Redis(port=port).xadd("s", {"f": "v" * 100})
    one = b"*4\r\n$6\r\nXRANGE\r\n$1\r\ns\r\n$1\r\n-\r\n$1\r\n+\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=5) as probe:
        probe.sendall(one)
        single = b""
        while not single.endswith(b"v" * 100 + b"\r\n"):
            single += probe.recv(65536)
    rss_before = _rss_kb(node.proc.pid)
    hog = socket.create_connection(("127.0.0.1", port))
    sender = threading.Thread(target=hog.sendall, args=(one * 100_000,), daemon=True)
    sender.start()
    time.sleep(2.0)  # the node answers until the replies back up, then stops reading it
    other = redis.Redis(port=port, socket_timeout=10)
    assert other.xlen("s") == 1  # served while the first client's replies wait
    grown_mb = (_rss_kb(node.proc.pid) - rss_before) / 1024
    assert grown_mb < 64, f"RSS grew {grown_mb:.0f} MB for a client that does not read"
    want, got = 100_000 * len(single), 0
    hog.settimeout(20)
    while got < want:
        chunk = hog.recv(1 << 20)
        assert chunk, "connection closed early"
        got += len(chunk)
    assert got == want
    sender.join(10)
    hog.close()
    other.close()
