"""ACL users on a running node: a matrix of principals over RESP and gRPC.

Every principal runs the same calls; an allowed call works, a refused one gets Redis's error
(RESP) or the matching gRPC status with Redis's line, and changes nothing: the state digest
(Admin.Digest, as admin) is the same before and after. A replica without the replication
right gets nothing; one with it follows the primary.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis
from conftest import Cluster, Node, free_port, poll

from xstream.client import Client, ResponseError
from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc

USERS = """\
user default on >defpass ~* &* +@all
user reader on >r ~* +@read
user writer on >w ~events:* +@read +@write -@dangerous
user admin on >a ~* &* +@all
user repl on >p +sync
"""
ADMIN = (("xstream-user", "admin"), ("xstream-password", "a"))


class _Meta(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """The tests' own channel calls as `admin`."""

    def intercept_unary_unary(self, continuation: Callable[..., Any], details: Any, request: Any):  # type: ignore[no-untyped-def]
        details = details._replace(metadata=(*(details.metadata or ()), *ADMIN))
        return continuation(details, request)


def _node(cluster: Cluster, role: str, *args: str) -> Node:
    aclfile = cluster.root / "users.acl"
    aclfile.write_text(USERS)
    node = cluster._node(role, ["--aclfile", str(aclfile), *args])
    node._channel = grpc.intercept_channel(grpc.insecure_channel(node.address), _Meta())
    return node.start()


@pytest.fixture
def secured(cluster: Cluster) -> tuple[Node, int]:
    port = free_port()
    return _node(cluster, "primary", "--resp-port", str(port)), port


def _resp(port: int, **kw: Any) -> redis.Redis:
    return redis.Redis(port=port, socket_timeout=10, **kw)


def _refused(call: Callable[[], Any], text: str) -> None:
    with pytest.raises(redis.ResponseError) as e:
        call()
    assert str(e.value) == text, e.value


def test_resp_matrix(secured: tuple[Node, int]) -> None:
    primary, port = secured
    admin = _resp(port, username="admin", password="a")
    admin.xadd("events:1", {"f": "v"})
    before = primary.digest()

    anonymous = _resp(port)
    with pytest.raises(
        redis.AuthenticationError, match=r"Authentication required|already authenticated"
    ):
        anonymous.xlen("events:1")
    with pytest.raises(redis.AuthenticationError, match="invalid username-password pair"):
        _resp(port, username="reader", password="nope").ping()

    reader = _resp(port, username="reader", password="r")
    assert reader.xlen("events:1") == 1
    _refused(lambda: reader.xadd("events:1", {"f": "v"}),
             "User reader has no permissions to run the 'xadd' command")  # fmt: skip
    _refused(reader.flushall,
             "User reader has no permissions to run the 'flushall' command")  # fmt: skip

    writer = _resp(port, username="writer", password="w")
    _refused(lambda: writer.xadd("other", {"f": "v"}), "No permissions to access a key")
    _refused(lambda: writer.execute_command("FLUSHALL"),
             "User writer has no permissions to run the 'flushall' command")  # fmt: skip
    _refused(lambda: writer.execute_command("CONFIG", "SET", "stream-node-max-entries", "5"),
             "User writer has no permissions to run the 'config|set' command")  # fmt: skip
    assert primary.digest() == before  # nothing refused changed anything

    writer.xadd("events:1", {"f": "w"})
    assert reader.xlen("events:1") == 2
    log = admin.execute_command("ACL", "LOG")
    entries = [e if isinstance(e, dict) else dict(zip(e[::2], e[1::2], strict=True)) for e in log]
    keys = (b"reason", b"context", b"object", b"username")
    reasons = {tuple(e[k] for k in keys) for e in entries}
    assert (b"command", b"toplevel", b"flushall", b"writer") in reasons
    assert (b"key", b"toplevel", b"other", b"writer") in reasons
    assert (b"auth", b"toplevel", b"AUTH", b"reader") in reasons
    clients = admin.execute_command("CLIENT", "LIST")
    assert b"user=writer" in clients and b"user=admin" in clients


def test_resp_multi_checks_at_queue_and_exec(secured: tuple[Node, int]) -> None:
    primary, port = secured
    admin = _resp(port, username="admin", password="a")
    admin.execute_command("ACL", "SETUSER", "tx", "on", ">t", "~*", "+@read", "+@write",
                          "+@transaction")  # fmt: skip
    tx = _resp(port, username="tx", password="t")
    pipe = tx.pipeline(transaction=True)
    pipe.xadd("events:2", {"a": "1"}).execute_command("ACL", "LIST")
    with pytest.raises(redis.ResponseError, match=r"no permissions to run the 'acl.list'"):
        pipe.execute()  # queueing failed: EXECABORT, redis-py names the first error
    before = primary.digest()
    conn = tx.connection_pool.get_connection()
    conn.send_command("MULTI")
    assert conn.read_response() == b"OK"
    conn.send_command("XADD", "events:3", "*", "a", "1")
    assert conn.read_response() == b"QUEUED"
    admin.execute_command("ACL", "SETUSER", "tx", "-xadd")  # changed before EXEC
    conn.send_command("EXEC")
    replies = conn.read_response()
    assert isinstance(replies[0], redis.ResponseError)
    assert str(replies[0]) == "User tx has no permissions to run the 'xadd' command"
    assert primary.digest() == before


def test_acl_commands_and_file(secured: tuple[Node, int], cluster: Cluster) -> None:
    primary, port = secured
    admin = _resp(port, username="admin", password="a", decode_responses=True)
    assert admin.execute_command("ACL", "WHOAMI") == "admin"
    assert admin.execute_command("ACL", "USERS") == ["admin", "default", "reader", "repl",
                                                     "writer"]  # fmt: skip
    assert admin.execute_command("ACL", "SETUSER", "late", "on", ">x", "~*", "+xlen") == "OK"
    assert "user late on sanitize-payload" in " ".join(admin.execute_command("ACL", "LIST"))
    assert admin.execute_command("ACL", "SAVE") == "OK"
    saved = (cluster.root / "users.acl").read_text()
    assert "user late on" in saved and ">x" not in saved  # hashed, never in clear
    assert admin.execute_command("ACL", "DELUSER", "late") == 1
    assert admin.execute_command("ACL", "LOAD") == "OK"
    assert "late" in admin.execute_command("ACL", "USERS")
    with pytest.raises(redis.ResponseError, match="The 'default' user cannot be removed"):
        admin.execute_command("ACL", "DELUSER", "default")
    assert "stream" in admin.execute_command("ACL", "CAT")
    assert "xadd" in admin.execute_command("ACL", "CAT", "stream")
    assert "secret" not in primary.log.read_text() and ">a" not in primary.log.read_text()


def _status(call: Callable[[], Any]) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as e:
        call()
    return e.value.code(), e.value.details()


def test_grpc_matrix(cluster: Cluster) -> None:
    primary = _node(cluster, "primary")
    before_write = primary.digest()
    channel = grpc.insecure_channel(primary.address)
    streams, adm = pb_grpc.StreamsStub(channel), pb_grpc.AdminStub(channel)

    def as_(user: str, pw: str) -> tuple[tuple[str, str], ...]:
        return (("xstream-user", user), ("xstream-password", pw))

    cmd = pb.Command(argv=[b"XLEN", b"events:1"])
    assert _status(lambda: streams.Execute(cmd)) == (
        grpc.StatusCode.UNAUTHENTICATED, "NOAUTH Authentication required.")  # fmt: skip
    assert _status(lambda: streams.Execute(cmd, metadata=as_("reader", "x"))) == (
        grpc.StatusCode.UNAUTHENTICATED,
        "WRONGPASS invalid username-password pair or user is disabled.",
    )
    streams.Execute(cmd, metadata=as_("reader", "r"))
    add = pb.Command(argv=[b"XADD", b"events:1", b"*", b"f", b"v"])
    assert _status(lambda: streams.Execute(add, metadata=as_("reader", "r"))) == (
        grpc.StatusCode.PERMISSION_DENIED,
        "NOPERM User reader has no permissions to run the 'xadd' command",
    )
    for call in (
        lambda m: adm.Promote(pb.PromoteRequest(), metadata=m),
        lambda m: adm.ReplicaOf(pb.ReplicaOfRequest(primary="127.0.0.1:1"), metadata=m),
        lambda m: adm.Snapshot(pb.SnapshotRequest(), metadata=m),
    ):
        for who in (as_("reader", "r"), as_("writer", "w"), as_("repl", "p")):
            code, _ = _status(lambda c=call, w=who: c(w))  # type: ignore[misc]
            assert code is grpc.StatusCode.PERMISSION_DENIED
    assert primary.digest() == before_write

    writer = Client("127.0.0.1", primary.port, username="writer", password="w")
    reader = Client("127.0.0.1", primary.port, username="reader", password="r")
    cluster.clients += [writer, reader]
    writer.xadd("events:1", {"f": "v"})
    assert reader.xlen("events:1") == 1
    with pytest.raises(ResponseError, match="No permissions to access a key"):
        writer.xadd("other", {"f": "v"})
    with pytest.raises(ResponseError, match="has no permissions to run the 'xadd'"):
        reader.xadd("events:1", {"f": "v"})
    # xadd_many (IngestOne for one message, an Ingest stream for more): the same checks.
    for rows in ([{"f": "v"}], [{"f": "v"}] * 5000):
        with pytest.raises(ResponseError, match="No permissions to access a key"):
            writer.xadd_many("other", rows)
        with pytest.raises(ResponseError, match="has no permissions to run the 'xadd'"):
            reader.xadd_many("events:1", rows)
    assert len(writer.xadd_many("events:1", [{"f": "v"}] * 2)) == 2
    assert reader.xlen("events:1") == 3
    adm.Snapshot(pb.SnapshotRequest(), metadata=as_("admin", "a"))


def test_rogue_replica_gets_nothing(cluster: Cluster) -> None:
    primary = _node(cluster, "primary")
    primary.execute("XADD", "events:1", "*", "secret", "data")
    rogue = _node(cluster, "replica", "--primary", primary.address,
                  "--primary-user", "reader", "--primary-password", "r")  # fmt: skip
    honest = _node(cluster, "replica", "--primary", primary.address,
                   "--primary-user", "repl", "--primary-password", "p")  # fmt: skip
    poll("the honest replica to sync", lambda: honest.info().link == "up")
    cluster.settled(primary, [honest])
    assert honest.digest() == primary.digest()
    assert rogue.info().link != "up" and rogue.info().offset == 0
    events = rogue.log.read_text()
    assert "NOPERM User reader has no permissions to run the 'sync' command" in events


def test_requirepass_and_exposure(cluster: Cluster, tmp_path: Path) -> None:
    port = free_port()
    node = cluster._node("primary", ["--requirepass", "pw", "--resp-port", str(port)])
    # no `admin` here: readiness is probed with the default user's password
    node._channel = grpc.intercept_channel(grpc.insecure_channel(node.address), _DefaultMeta())
    node.start()
    with pytest.raises(
        redis.AuthenticationError, match=r"Authentication required|already authenticated"
    ):
        _resp(port).xlen("s")
    ok = _resp(port, password="pw")
    assert ok.xlen("s") == 0
    with pytest.raises(redis.AuthenticationError, match="invalid username-password pair"):
        ok.execute_command("AUTH", "nope")
    assert ok.execute_command("HELLO", "3", "AUTH", "default", "pw")[b"proto"] == 3
    writer = Client("127.0.0.1", node.port, password="pw")
    cluster.clients.append(writer)
    writer.xadd("s", {"a": "1"})
    assert ok.xlen("s") == 1


class _DefaultMeta(_Meta):
    def intercept_unary_unary(self, continuation: Callable[..., Any], details: Any, request: Any):  # type: ignore[no-untyped-def]
        meta = (("xstream-user", "default"), ("xstream-password", "pw"))
        return continuation(details._replace(metadata=(*(details.metadata or ()), *meta)), request)


def test_a_pipeline_of_writes_is_checked_per_key(secured: tuple[Node, int]) -> None:
    """A pipelined run of XADDs runs as one batch; a user limited to some keys still gets
    NOPERM for each command on another key, in its place, and nothing written there."""
    _, port = secured
    writer = _resp(port, username="writer", password="w")
    pipe = writer.pipeline(transaction=False)
    for key in ("events:1", "other", "events:2", "events:1"):
        pipe.xadd(key, {"f": "v"})
    pipe.xadd("events:1", {"f": "v", "g": "w"})  # another arity: checked again
    replies = pipe.execute(raise_on_error=False)
    assert isinstance(replies[1], redis.exceptions.NoPermissionError)
    assert all(isinstance(r, bytes) for i, r in enumerate(replies) if i != 1), replies
    admin = _resp(port, username="admin", password="a")
    assert admin.exists("other") == 0
    assert admin.xlen("events:1") == 3 and admin.xlen("events:2") == 1
