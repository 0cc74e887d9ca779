"""Databases across processes: a write in db 3 (gRPC metadata `xstream-db`) reaches a replica's
db 3 and no other, and survives restarts of both, from a snapshot plus the log after it."""

from __future__ import annotations

import grpc
import pytest
from conftest import Cluster, Node

from xstream import protocol
from xstream.engine.reply import Reply
from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc


def run(node: Node, db: int | str, *words: str | int) -> Reply:
    argv = [str(w).encode() for w in words]
    reply = node.streams().Execute(
        pb.Command(argv=argv), metadata=((protocol.DB_KEY, str(db)),), timeout=10
    )
    return protocol.from_value(reply.value)


def test_a_write_in_db_3_reaches_the_replicas_db_3_and_survives_restarts(
    cluster: Cluster,
) -> None:
    p = cluster.primary()
    r = cluster.replica(p)
    run(p, 3, "XADD", "s", "1-1", "f", "three")
    run(p, 3, "XGROUP", "CREATE", "s", "g", "0")
    run(p, 3, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    run(p, 0, "XADD", "s", "9-9", "f", "zero")
    run(p, 3, "COPY", "s", "s", "DB", 5)
    cluster.settled(p, [r])
    assert r.digest() == p.digest()
    assert run(r, 3, "XRANGE", "s", "-", "+") == [[b"1-1", [b"f", b"three"]]]
    assert run(r, 0, "XRANGE", "s", "-", "+") == [[b"9-9", [b"f", b"zero"]]]
    assert run(r, 5, "XPENDING", "s", "g")[0] == 1  # type: ignore[index]
    assert run(r, 4, "DBSIZE") == 0

    pb_grpc.AdminStub(p.channel).Snapshot(pb.SnapshotRequest(), timeout=30)
    run(p, 3, "XADD", "s", "2-1", "f", "after")  # in the log after the snapshot
    run(p, 3, "MOVE", "s", 7)
    cluster.settled(p, [r])
    digest = p.digest()
    p.stop()
    p.start()
    assert p.digest() == digest
    assert run(p, 7, "XLEN", "s") == 2 and run(p, 3, "EXISTS", "s") == 0
    r.stop()
    r.start()
    cluster.settled(p, [r])
    assert r.digest() == digest
    assert run(r, 7, "XRANGE", "s", "2-1", "+") == [[b"2-1", [b"f", b"after"]]]


def test_a_bad_db_is_selects_error(cluster: Cluster) -> None:
    p = cluster.primary()
    for db, line in [(16, "ERR DB index is out of range"), ("x", "ERR value is not an integer")]:
        with pytest.raises(grpc.RpcError) as err:
            run(p, db, "XLEN", "s")
        assert str(err.value.details()).startswith(line)  # type: ignore[attr-defined]
