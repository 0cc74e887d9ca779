"""Users are replicated and persisted like data (node/users.py), on real processes.

ACL SETUSER, DELUSER and LOAD on the primary reach a replica in order with the data (its
RESP port and its gRPC port then answer with the primary's users), a replica refuses them
(READONLY) but saves its own ACL file, users survive restarts of either node from their own
logs and snapshots, a full sync carries them, a promoted replica keeps them, and a primary
restarted with a changed --aclfile applies it. A replica's link authenticates with its own
--primary-user/--primary-password, whatever the replicated users say. No password is ever
written in clear to a log or a data file.
"""

from __future__ import annotations

import hashlib

import grpc
import pytest
import redis
from conftest import Cluster, Node, free_port, poll
from redis.backoff import NoBackoff
from redis.retry import Retry

from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc

USERS = """\
user default on >Def-pass-0 ~* &* +@all
user admin on >Adm1n-pass ~* &* +@all
user repl on >Repl-pass-9 +sync
"""
ADMIN = (("xstream-user", "admin"), ("xstream-password", "Adm1n-pass"))
LINK = ("--primary-user", "repl", "--primary-password", "Repl-pass-9")
SECRETS = [b"Old-pass-1", b"New-pass-2", b"Carol-pw-3", b"Other-def-4", b"Dave-pw-5",
           b"Erin-pw-6", b"Gina-pw-7"]  # fmt: skip


def _start(cluster: Cluster, role: str, *args: str, users: str | None = USERS) -> tuple[Node, int]:
    """A node with its own ACL file (`users`; None: no --aclfile) and a RESP port."""
    resp = free_port()
    extra = ["--resp-port", str(resp)]
    node = cluster._node(role, [*extra, *args])
    if users is not None:
        aclfile = cluster.root / f"users-{node.port}.acl"
        aclfile.write_text(users)
        node.args += ["--aclfile", str(aclfile)]
    node.auth = ADMIN
    node.start()
    if role == "replica":
        poll(f"replica {node.address} online", lambda: node.info().link == "up")
    return node, resp


def _resp(port: int, user: str = "admin", password: str = "Adm1n-pass") -> redis.Redis:
    # no retries: redis-py retries a refused AUTH (a ConnectionError) with backoff
    return redis.Redis(port=port, username=user, password=password, socket_timeout=10,
                       retry=Retry(NoBackoff(), 0))  # fmt: skip


def _resp_ok(port: int, user: str, password: str) -> bool:
    """Whether `user` authenticates with `password` on the RESP port."""
    try:
        with _resp(port, user, password) as r:
            return bool(r.ping())
    except redis.AuthenticationError:
        return False


def _grpc_code(node: Node, user: str, password: str) -> grpc.StatusCode:
    """The status of an XLEN as `user` on the gRPC port."""
    meta = (("xstream-user", user), ("xstream-password", password))
    with grpc.insecure_channel(node.address) as channel:
        try:
            pb_grpc.StreamsStub(channel).Execute(
                pb.Command(argv=[b"XLEN", b"a:1"]), metadata=meta, timeout=10
            )
        except grpc.RpcError as e:
            return e.code()  # type: ignore[no-any-return]
    return grpc.StatusCode.OK


def _refused(call: object, *args: str, match: str) -> None:
    with pytest.raises(redis.ResponseError, match=match):
        call(*args)  # type: ignore[operator]


def _no_secrets(cluster: Cluster) -> None:
    """No password in clear in any node's log, data directory or ACL file."""
    for path in cluster.root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found = [s for s in SECRETS if s in data]
            assert not found, f"{found} in {path}"


def test_changes_reach_the_replica_in_order(cluster: Cluster) -> None:
    primary, p_port = _start(cluster, "primary")
    replica, r_port = _start(cluster, "replica", "--primary", primary.address, *LINK)
    admin = _resp(p_port)
    admin.execute_command("ACL", "SETUSER", "alice", "on", ">Old-pass-1", "~a:*", "+@all")
    poll("alice on the replica", lambda: _resp_ok(r_port, "alice", "Old-pass-1"))
    assert _grpc_code(replica, "alice", "Old-pass-1") is grpc.StatusCode.OK

    admin.execute_command("ACL", "SETUSER", "alice", "resetpass", ">New-pass-2", "-xlen")
    admin.xadd("a:1", {"f": "v"})  # a data write after it: the replica applies both in order
    cluster.settled(primary, [replica])
    assert not _resp_ok(r_port, "alice", "Old-pass-1")
    assert _resp_ok(r_port, "alice", "New-pass-2")
    assert _grpc_code(replica, "alice", "Old-pass-1") is grpc.StatusCode.UNAUTHENTICATED
    assert _grpc_code(replica, "alice", "New-pass-2") is grpc.StatusCode.PERMISSION_DENIED
    alice = _resp(r_port, "alice", "New-pass-2")
    assert alice.xrange("a:1") and alice.xinfo_stream("a:1")["length"] == 1
    _refused(alice.xlen, "a:1", match="no permissions to run the 'xlen' command")
    _refused(alice.xrange, "b:1", match="No permissions to access a key")
    r_admin = _resp(r_port)
    for words in (("GETUSER", "alice"), ("LIST",), ("USERS",)):
        assert r_admin.execute_command("ACL", *words) == admin.execute_command("ACL", *words)

    # a replica refuses changes as any write; it saves its own file
    for words in (("SETUSER", "bob", "on"), ("DELUSER", "alice"), ("LOAD",)):
        _refused(r_admin.execute_command, "ACL", *words, match="^You can't write against a read")
    assert r_admin.execute_command("ACL", "SAVE") == b"OK"
    saved = (cluster.root / f"users-{replica.port}.acl").read_text()
    assert "user alice on" in saved and "New-pass-2" not in saved

    assert admin.execute_command("ACL", "DELUSER", "alice", "nobody") == 1
    cluster.settled(primary, [replica])
    assert not _resp_ok(r_port, "alice", "New-pass-2")
    assert _grpc_code(replica, "alice", "New-pass-2") is grpc.StatusCode.UNAUTHENTICATED
    assert replica.digest() == primary.digest()
    _no_secrets(cluster)


def test_users_survive_restarts_and_the_link_keeps_its_own_user(cluster: Cluster) -> None:
    primary, p_port = _start(cluster, "primary")
    replica, r_port = _start(cluster, "replica", "--primary", primary.address, *LINK)
    admin = _resp(p_port)
    admin.execute_command("ACL", "SETUSER", "carol", "on", ">Carol-pw-3", "~*", "+@read", "+ping")
    admin.execute_command("ACL", "SETUSER", "default", "resetpass", ">Other-def-4")
    cluster.settled(primary, [replica])
    primary.kill()
    replica.kill()

    replica.start()  # the primary is down: the users come from the replica's own log
    assert _resp_ok(r_port, "carol", "Carol-pw-3")
    assert _resp_ok(r_port, "default", "Other-def-4")
    assert not _resp_ok(r_port, "default", "Def-pass-0")  # its --aclfile's: not the data's
    primary.start()  # the same --aclfile as before: the users its data holds stand
    assert _resp_ok(p_port, "carol", "Carol-pw-3")
    assert not _resp_ok(p_port, "default", "Def-pass-0")
    # the replica's link authenticates with its own --primary-user, not the replicated users
    poll("the replica to link again", lambda: replica.info().link == "up")
    primary.execute("XADD", "s", "*", "f", "v")
    cluster.settled(primary, [replica])

    for node in (primary, replica):  # from snapshots now (the log they cover is dropped)
        pb_grpc.AdminStub(node.channel).Snapshot(pb.SnapshotRequest(), timeout=10)
    primary.kill()
    replica.kill()
    replica.start()
    primary.start()
    for port in (p_port, r_port):
        assert _resp_ok(port, "carol", "Carol-pw-3")
        assert _resp_ok(port, "default", "Other-def-4")
    _no_secrets(cluster)


def test_full_sync_carries_users_and_a_changed_config_applies(cluster: Cluster) -> None:
    primary, p_port = _start(cluster, "primary")
    admin = _resp(p_port)
    admin.execute_command("ACL", "SETUSER", "dave", "on", ">Dave-pw-5", "~*", "+@all")
    # a new replica configured otherwise (its own password, no users file) full-syncs
    replica, r_port = _start(cluster, "replica", "--primary", primary.address, *LINK,
                             "--requirepass", "Local-pw", users=None)  # fmt: skip
    assert replica.info().full_syncs == 1
    assert _resp_ok(r_port, "dave", "Dave-pw-5") and _resp_ok(r_port, "default", "Def-pass-0")
    assert not _resp_ok(r_port, "default", "Local-pw")
    primary.stop()
    replica.stop()
    replica.start()  # the full sync's users were persisted with its snapshot
    assert _resp_ok(r_port, "dave", "Dave-pw-5")

    # the primary restarts with an edited --aclfile: applied as ACL LOAD, replicated
    aclfile = cluster.root / f"users-{primary.port}.acl"
    erin = hashlib.sha256(b"Erin-pw-6").hexdigest()  # the file holds it hashed
    aclfile.write_text(USERS + f"user erin on #{erin} ~* +@all\n")
    primary.start()
    assert _resp_ok(p_port, "erin", "Erin-pw-6") and not _resp_ok(p_port, "dave", "Dave-pw-5")
    poll("the replica to link again", lambda: replica.info().link == "up")
    cluster.settled(primary, [replica])
    assert _resp_ok(r_port, "erin", "Erin-pw-6") and not _resp_ok(r_port, "dave", "Dave-pw-5")
    assert primary.events("users_logged")[-1]["reason"] == "config_changed"
    _no_secrets(cluster)


def test_a_promoted_replica_keeps_the_users(cluster: Cluster) -> None:
    primary, p_port = _start(cluster, "primary")
    r1, r1_port = _start(cluster, "replica", "--primary", primary.address, *LINK)
    r2, r2_port = _start(cluster, "replica", "--primary", primary.address, *LINK)
    admin = _resp(p_port)
    admin.execute_command("ACL", "SETUSER", "gina", "on", ">Gina-pw-7", "~g:*", "+@all")
    cluster.settled(primary, [r1, r2])
    primary.stop()
    r1.promote()
    r2.replicaof(r1)  # its link: its own repl user, which r1 holds as replicated
    poll("r2 to follow r1", lambda: r2.info().link == "up")
    assert _resp_ok(r1_port, "gina", "Gina-pw-7")
    new_admin = _resp(r1_port)
    new_admin.execute_command("ACL", "SETUSER", "gina", "-@all", "+xadd")
    cluster.settled(r1, [r2])
    gina = _resp(r2_port, "gina", "Gina-pw-7")
    _refused(gina.xlen, "g:1", match="no permissions to run the 'xlen' command")
    _no_secrets(cluster)
