"""etcd over TLS with client certificates (etcd's --client-cert-auth), certificates from
xstream.certs: the election's calls and its watch through it; coordinated `xstream node`
processes electing a primary and handing over through it; and the refusals: no client
certificate, one from a foreign CA, or a server the client's CA did not sign."""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from tests.integration.conftest import Cluster, Node, poll
from xstream.coord.etcd import Election, EtcdUnavailableError
from xstream.coord.resolver import Role
from xstream.node.tls import Tls, TlsFiles
from xstream.v1 import xstream_pb2 as pb

from .conftest import TlsEtcd


def node_tls(pki: Path, name: str) -> Tls:
    """The TLS material a node started with `--tls-dir pki --name name` dials etcd with."""
    return Tls(TlsFiles(pki / f"{name}.crt", pki / f"{name}.key", pki / "ca.crt"))


def election(etcd: TlsEtcd, prefix: str, name: str, tls: Tls) -> Election:
    return Election([etcd.url], prefix, name, 2, timeout=2.0, tls=tls.client_context)


def test_an_election_runs_over_tls_with_the_nodes_certificates(
    etcd_tls: TlsEtcd, prefix: str
) -> None:
    a = election(etcd_tls, prefix, "n1", node_tls(etcd_tls.pki, "n1"))
    b = election(etcd_tls, prefix, "n2", node_tls(etcd_tls.pki, "n2"))
    try:
        epoch = a.campaign("n1:7700")
        assert epoch is not None and b.campaign("n2:7700") is None
        a.publish_status("n1:7700", Role.PRIMARY, epoch, 10, "r")
        b.publish_status("n2:7700", Role.REPLICA, epoch, 10, "r")
        assert [(n.name, n.role) for n in b.nodes()] == [("n1", Role.PRIMARY), ("n2", Role.REPLICA)]
        assert a.keepalive()
        leader = b.leader()
        assert leader is not None and leader.name == "n1"
        assert a.resign()
        assert b.observe(5.0) is None  # the watch stream runs over TLS too
    finally:
        for e in (a, b):
            with contextlib.suppress(Exception):
                e.close()


def _context(ca: Path, cert: Path | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=ca)
    if cert is not None:
        ctx.load_cert_chain(cert, cert.with_suffix(".key"))
    return ctx


def test_etcd_refuses_a_client_without_a_certificate_or_with_a_foreign_one(
    etcd_tls: TlsEtcd, prefix: str
) -> None:
    pki, foreign = etcd_tls.pki, etcd_tls.foreign
    cases = {
        "no client certificate": _context(pki / "ca.crt"),
        "a certificate of another CA": _context(pki / "ca.crt", foreign / "n1.crt"),
    }
    for case, ctx in cases.items():
        e = Election([etcd_tls.url], prefix, "n1", 2, timeout=1.0, tls=lambda ctx=ctx: ctx)
        with pytest.raises(EtcdUnavailableError, match="TLS failed") as refused:
            e.campaign("n1:7700")
        assert "SSL" in str(refused.value), case
        assert not e.keepalive(), case
    # The other way round: a node whose CA did not sign etcd's certificate does not talk to it.
    e = Election([etcd_tls.url], prefix, "n1", 2, timeout=1.0,
                 tls=lambda: _context(foreign / "ca.crt", foreign / "n1.crt"))  # fmt: skip
    with pytest.raises(EtcdUnavailableError, match="CERTIFICATE_VERIFY_FAILED"):
        e.leader()
    # Plain HTTP to the TLS port gets nothing either.
    plain = etcd_tls.url.replace("https://", "http://")
    with pytest.raises(EtcdUnavailableError):
        Election([plain], prefix, "n1", 2, timeout=1.0).leader()
    # Nothing of those reached etcd.
    me = election(etcd_tls, prefix, "n2", node_tls(pki, "n2"))
    assert me.leader() is None and me.nodes() == []


@pytest.fixture
def tls_cluster(tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(tmp_path)
    failed = True
    try:
        yield c
        failed = False
    finally:
        c.close(dump=failed)


def tls_node(cluster: Cluster, etcd: TlsEtcd, prefix: str, name: str, pki: Path) -> Node:
    credentials = grpc.ssl_channel_credentials(
        (etcd.pki / "ca.crt").read_bytes(),
        (etcd.pki / "app.key").read_bytes(),
        (etcd.pki / "app.crt").read_bytes(),
    )
    args = ["--etcd", etcd.url, "--etcd-prefix", prefix, "--lease-ttl", "2", "--name", name,
            "--tls-dir", str(pki), "--expect-replicas", "1"]  # fmt: skip
    return cluster._node("node", args, credentials)


def role(node: Node) -> str:
    info = node.info(timeout=1)
    return "deposed" if info.deposed else info.role


def test_coordinated_nodes_elect_and_hand_over_through_tls_etcd(
    tls_cluster: Cluster, etcd_tls: TlsEtcd, prefix: str
) -> None:
    nodes = [tls_node(tls_cluster, etcd_tls, prefix, n, etcd_tls.pki).start() for n in ("n1", "n2")]
    roles = lambda: sorted(role(n) for n in nodes)  # noqa: E731
    poll("one primary, one replica", lambda: roles() == ["primary", "replica"])
    primary = next(n for n in nodes if role(n) == "primary")
    (replica,) = [n for n in nodes if n is not primary]
    concern = pb.WriteConcern(acks=pb.ACKS_QUORUM, timeout_ms=5000)
    cmd = pb.Command(argv=[b"XADD", b"s", b"1-1", b"v", b"1"], concern=concern)
    assert primary.streams().Execute(cmd, timeout=10).value.bulk == b"1-1"
    primary.stop()  # a graceful stop frees the leader key: the replica is elected
    poll("the replica is elected", lambda: role(replica) == "primary", timeout=20)
    assert replica.execute("XLEN", "s").value.integer == 1
    watcher = election(etcd_tls, prefix, "watcher", node_tls(etcd_tls.pki, "n3"))
    leader = watcher.leader()
    assert leader is not None and leader.value == replica.address


def test_a_node_with_a_foreign_certificate_never_joins_the_election(
    tls_cluster: Cluster, etcd_tls: TlsEtcd, prefix: str
) -> None:
    # The rogue trusts both CAs (so it could verify etcd) but shows the foreign CA's cert.
    rogue_pki = tls_cluster.root / "rogue"
    rogue_pki.mkdir()
    for f in ("n1.crt", "n1.key"):
        (rogue_pki / f).write_bytes((etcd_tls.foreign / f).read_bytes())
    cas = (etcd_tls.pki / "ca.crt").read_bytes() + (etcd_tls.foreign / "ca.crt").read_bytes()
    (rogue_pki / "ca.crt").write_bytes(cas)
    rogue = tls_node(tls_cluster, etcd_tls, prefix, "n1", rogue_pki)
    rogue.credentials = grpc.ssl_channel_credentials(
        cas, (etcd_tls.foreign / "n1.key").read_bytes(), (etcd_tls.foreign / "n1.crt").read_bytes()
    )
    rogue.start()
    refused = lambda: "TLS failed" in rogue.log.read_text(errors="replace")  # noqa: E731
    poll("the rogue logs etcd's refusal", refused)
    assert rogue.info(timeout=1).role != "primary"
    watcher = election(etcd_tls, prefix, "watcher", node_tls(etcd_tls.pki, "n3"))
    assert watcher.leader() is None and watcher.nodes() == []
