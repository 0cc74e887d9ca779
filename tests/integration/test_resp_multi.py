"""Transactions and batched pipelines over the RESP port, with redis-py against real nodes.

MULTI/EXEC/DISCARD/WATCH as Redis (texts compared byte for byte with redis-server in
tests/compat/test_resp_compat.py); here what only a real xstream node shows: an EXEC is one
record on the primary's and the replica's logs, a WATCH is spoiled by another connection's
write, a pipeline's run of writes is one record too.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest
import redis
from conftest import Cluster, Node, free_port, poll

from xstream.node import records


def _with_resp(cluster: Cluster, primary: Node | None = None) -> tuple[Node, int]:
    port = free_port()
    if primary is None:
        return cluster.primary("--resp-port", str(port)), port
    return cluster.replica(primary, "--resp-port", str(port)), port


def _log_records(data_dir: Path) -> list[list[list[bytes]]]:
    """Every record in a node's log segments, each as its argvs."""
    out = []
    for seg in sorted(data_dir.glob("aof-*.xlog")):
        data = seg.read_bytes()
        for begin, stop in records.scan(data):
            out.append(records.decode_payload(records.payload(data, begin, stop)))
    return out


@pytest.mark.parametrize("protocol", [2, 3])
def test_multi_exec_replies(cluster: Cluster, protocol: int) -> None:
    _, port = _with_resp(cluster)
    r = redis.Redis(port=port, protocol=protocol)
    pipe = r.pipeline(transaction=True)
    pipe.xadd("s", {"f": "1"}, id="1-0")
    pipe.xadd("s", {"f": "2"}, id="1-0")  # fails at EXEC, in its place
    pipe.xlen("s")
    pipe.set("k", "v")
    pipe.ping()
    out = pipe.execute(raise_on_error=False)
    assert out[0] == b"1-0"
    assert isinstance(out[1], redis.ResponseError) and "equal or smaller" in str(out[1])
    assert out[2:] == [1, True, True]
    assert r.xlen("s") == 1  # no rollback
    r.close()


def test_execabort_after_a_queueing_error(cluster: Cluster) -> None:
    _, port = _with_resp(cluster)
    r = redis.Redis(port=port)
    r.execute_command("MULTI")
    assert r.execute_command("XADD", "s", "*", "f", "v") == b"QUEUED"
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'xlen'"):
        r.execute_command("XLEN")
    with pytest.raises(redis.ResponseError, match="unknown command 'NOPE'"):
        r.execute_command("NOPE", "x")
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command("EXEC")
    assert str(e.value) == "Transaction discarded because of previous errors."
    assert r.exists("s") == 0  # nothing ran
    with pytest.raises(redis.ResponseError, match="EXEC without MULTI"):
        r.execute_command("EXEC")
    r.close()


def test_watch_spoiled_by_another_connection(cluster: Cluster) -> None:
    _, port = _with_resp(cluster)
    r, other = redis.Redis(port=port), redis.Redis(port=port)
    r.xadd("s", {"f": "v"})
    with r.pipeline() as pipe:
        pipe.watch("s")
        assert pipe.xlen("s") == 1
        other.xadd("s", {"f": "w"})  # another connection changes the watched key
        pipe.multi()
        pipe.xadd("s", {"f": "mine"})
        with pytest.raises(redis.WatchError):
            pipe.execute()
    assert r.xlen("s") == 2
    with r.pipeline() as pipe:  # unchanged: the transaction runs
        pipe.watch("s")
        other.xadd("t", {"f": "v"})  # another key
        other.xgroup_create("s", "g", "$")  # group state: a WATCH in Redis 7 ignores it
        pipe.multi()
        pipe.xadd("s", {"f": "mine"})
        assert len(pipe.execute()) == 1
    r.close()
    other.close()


def test_discard_and_blocking_read_inside_multi(cluster: Cluster) -> None:
    _, port = _with_resp(cluster)
    r = redis.Redis(port=port)
    r.execute_command("MULTI")
    r.execute_command("XADD", "s", "*", "f", "v")
    assert r.execute_command("DISCARD") == b"OK"
    assert r.exists("s") == 0
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"MULTI\r\nXREAD BLOCK 0 STREAMS s $\r\nEXEC\r\n")
        want = b"+OK\r\n+QUEUED\r\n*1\r\n*-1\r\n"
        got = b""
        while len(got) < len(want):
            got += sock.recv(4096)
        assert got == want  # answered at once: nothing blocks inside MULTI
    r.close()


def test_exec_is_one_record_on_the_replica(cluster: Cluster) -> None:
    primary, port = _with_resp(cluster)
    replica, rport = _with_resp(cluster, primary)
    r = redis.Redis(port=port)
    r.xadd("s", {"f": "0"})
    pipe = r.pipeline(transaction=True)
    for i in range(50):
        pipe.xadd("s", {"f": str(i)})
    pipe.xtrim("s", maxlen=10, approximate=False)
    pipe.xgroup_create("s", "g", "0")
    pipe.execute()
    cluster.settled(primary, [replica])
    rr = redis.Redis(port=rport)
    assert rr.xlen("s") == 10
    for node in (primary, replica):
        recs = _log_records(node.data_dir)
        assert len(recs) == 2, node.role  # the first XADD, then the whole EXEC
        assert len(recs[1]) == 52 and recs[1][-1][:2] == [b"XGROUP", b"CREATE"]
    rp = rr.pipeline(transaction=True)
    rp.xlen("s")
    rp.xadd("s", {"f": "v"})
    with pytest.raises(redis.ReadOnlyError, match="read only replica"):  # refused when queued
        rp.execute()  # (redis-py raises the queueing error; EXEC said EXECABORT)
    r.close()
    rr.close()


def test_pipelined_writes_are_one_record(cluster: Cluster) -> None:
    primary, port = _with_resp(cluster)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        cmds = [b"XADD p %d-0 n %d\r\n" % (i + 1, i) for i in range(200)]
        cmds.insert(50, b"XADD p 1-0 n dup\r\n")  # its error in its place
        cmds.append(b"XLEN p\r\n")
        sock.sendall(b"".join(cmds))
        got = b""
        while not got.endswith(b":200\r\n"):
            chunk = sock.recv(65536)
            assert chunk
            got += chunk
    lines = got.split(b"\r\n")
    assert lines[0] == b"$3" and lines[1] == b"1-0"
    assert lines[100].startswith(b"-ERR The ID specified in XADD is equal or smaller")
    recs = poll("the log", lambda: _log_records(primary.data_dir) or None)
    assert sum(len(r) for r in recs) == 200
    assert len(recs) < 20  # batched: at most MAX_BATCH commands, and what one read brought


def test_pipelines_of_many_connections_at_once_are_answered_in_order_and_replicated(
    cluster: Cluster,
) -> None:
    """Eight clients pipelining at once: the batches read in one turn of the loop run as one
    record (turn.py); each client still gets its own replies, in its order, errors in their
    places, and the replica ends with exactly the primary's streams."""
    primary, port = _with_resp(cluster)
    _, replica_port = _with_resp(cluster, primary)
    clients, rounds, size = 8, 15, 25
    failures: list[str] = []

    def client(i: int) -> None:
        r = redis.Redis(port=port)
        try:
            for n in range(rounds):
                pipe = r.pipeline(transaction=False)
                ids = [f"{n * size + j + 1}-0" for j in range(size)]
                for entry_id in ids:
                    pipe.xadd(f"own{i}", {"c": str(i), "n": str(n)}, id=entry_id)
                pipe.xadd(f"own{i}", {"dup": "1"}, id=ids[0])  # refused, in its place
                pipe.xadd("shared", {"c": str(i)})
                out = pipe.execute(raise_on_error=False)
                if out[:size] != [x.encode() for x in ids]:
                    failures.append(f"client {i} round {n}: {out[:size]!r}")
                if not isinstance(out[size], redis.ResponseError):
                    failures.append(f"client {i} round {n}: the duplicate got {out[size]!r}")
        finally:
            r.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not failures
    p, rr = redis.Redis(port=port), redis.Redis(port=replica_port)
    assert p.xlen("shared") == clients * rounds
    poll("the replica caught up", lambda: rr.xlen("shared") == clients * rounds or None)
    for key in ["shared", *(f"own{i}" for i in range(clients))]:
        assert rr.xrange(key) == p.xrange(key)
    assert all(p.xlen(f"own{i}") == rounds * size for i in range(clients))
    p.close()
    rr.close()
