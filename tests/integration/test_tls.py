"""TLS on every endpoint of real nodes on loopback: gRPC, RESP, metrics and the replica's link
(mutual TLS), with certificates from `xstream certs`; what is refused (plaintext, a foreign
CA, an expired certificate, no certificate), rotation without dropping connections, and the
refusal to serve a non-loopback address in the clear."""

from __future__ import annotations

import datetime as dt
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import redis
from conftest import Cluster, Node, free_port, poll

from xstream import certs
from xstream.client import Client
from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ca.crt, n1, n2 (nodes), app (a client); foreign/ (another CA's n1 and app); expired/
    (app from the right CA, expired ten days ago)."""
    root = tmp_path_factory.mktemp("pki")
    certs.make(root, ["n1", "n2"], ["app"])
    certs.make(root / "foreign", ["n1", "rogue"], ["app"])
    ca = certs.load_ca(root)
    assert ca is not None
    then = dt.datetime.now(dt.UTC) - dt.timedelta(days=11)
    (root / "expired").mkdir()
    certs.write_pair(root / "expired", "app", *certs.issue(ca, "app", server=False, days=1,
                                                         not_before=then))  # fmt: skip
    shutil.copy(root / "ca.crt", root / "expired" / "ca.crt")
    return root


def creds(pki: Path, name: str = "app") -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(
        (pki / "ca.crt").read_bytes(),
        (pki / f"{name}.key").read_bytes(),
        (pki / f"{name}.crt").read_bytes(),
    )


def ssl_ctx(pki: Path, name: str | None = "app", ca: Path | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=ca or pki / "ca.crt")
    if name is not None:
        ctx.load_cert_chain(pki / f"{name}.crt", pki / f"{name}.key")
    return ctx


def served_cert(port: int, ctx: ssl.SSLContext, h2: bool = False) -> bytes:
    """The certificate a new TLS connection to `port` is shown (h2: gRPC's ALPN)."""
    if h2:
        ctx.set_alpn_protocols(["h2"])
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s,
    ):
        cert = s.getpeercert(binary_form=True)
        assert cert is not None
        return cert


def resp(
    port: int, pki: Path, name: str = "app", ca: Path | None = None, **kwargs: object
) -> redis.Redis:
    return redis.Redis(
        port=port,
        ssl=True,
        ssl_ca_certs=str(ca or pki / "ca.crt"),
        ssl_certfile=str(pki / f"{name}.crt"),
        ssl_keyfile=str(pki / f"{name}.key"),
        socket_timeout=5,
        **kwargs,  # type: ignore[arg-type]
    )


def refused(address: str, credentials: grpc.ChannelCredentials | None) -> grpc.StatusCode:
    """The status of an Info call over `credentials` (None: plaintext) that must fail."""
    with (
        grpc.secure_channel(address, credentials)
        if credentials is not None
        else grpc.insecure_channel(address)
    ) as ch:
        with pytest.raises(grpc.RpcError) as e:
            pb_grpc.AdminStub(ch).Info(pb.InfoRequest(), timeout=5)
        code: grpc.StatusCode = e.value.code()  # type: ignore[attr-defined]
        return code


def tls_primary(cluster: Cluster, pki: Path, *args: str) -> Node:
    return cluster.primary("--name", "n1", "--tls-dir", str(pki), *args, credentials=creds(pki))


@pytest.fixture
def served(cluster: Cluster, pki: Path) -> Iterator[tuple[Node, int, int]]:
    """A TLS primary with a RESP port and a metrics port: (node, resp port, metrics port)."""
    resp_port, metrics_port = free_port(), free_port()
    node = tls_primary(cluster, pki, "--resp-port", str(resp_port),
                       "--metrics-port", str(metrics_port))  # fmt: skip
    yield node, resp_port, metrics_port


def test_grpc_resp_and_metrics_over_tls(served: tuple[Node, int, int], pki: Path) -> None:
    node, resp_port, metrics_port = served
    c = Client("127.0.0.1", node.port, ssl_ca_certs=pki / "ca.crt",
               ssl_certfile=pki / "app.crt", ssl_keyfile=pki / "app.key")  # fmt: skip
    added = c.xadd("events", {"n": "1"})
    r = resp(resp_port, pki)
    assert r.xrange("events") == [(added, {b"n": b"1"})]
    assert r.xadd("events", {"n": "2"})
    assert c.xlen("events") == 2
    c.close()
    url = f"https://127.0.0.1:{metrics_port}/metrics"
    body = urllib.request.urlopen(url, context=ssl_ctx(pki), timeout=5).read()
    assert b"xstream_commands_total" in body
    assert served_cert(node.port, ssl_ctx(pki), h2=True) == served_cert(resp_port, ssl_ctx(pki))


def test_a_plaintext_client_fails_cleanly_and_the_node_keeps_serving(
    served: tuple[Node, int, int], pki: Path
) -> None:
    node, resp_port, metrics_port = served
    assert refused(node.address, None) == grpc.StatusCode.UNAVAILABLE
    with pytest.raises(redis.ConnectionError):
        redis.Redis(port=resp_port, socket_timeout=5).ping()
    with socket.create_connection(("127.0.0.1", resp_port), timeout=5) as s:
        s.sendall(b"PING\r\n")
        assert b"PONG" not in s.recv(100)  # a TLS alert or nothing, then closed
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).read()
    assert resp(resp_port, pki).ping()
    assert node.info().role == "primary"


def test_client_certificates_are_required_from_the_nodes_ca_and_in_date(
    served: tuple[Node, int, int], pki: Path
) -> None:
    node, resp_port, metrics_port = served
    no_cert = grpc.ssl_channel_credentials((pki / "ca.crt").read_bytes())
    foreign = grpc.ssl_channel_credentials(
        (pki / "ca.crt").read_bytes(),
        (pki / "foreign/app.key").read_bytes(),
        (pki / "foreign/app.crt").read_bytes(),
    )
    for bad in (no_cert, foreign, creds(pki / "expired")):
        assert refused(node.address, bad) == grpc.StatusCode.UNAVAILABLE
    for who in (pki / "foreign", pki / "expired"):
        r = resp(resp_port, who, ca=pki / "ca.crt")
        with pytest.raises(redis.ConnectionError):
            r.ping()
    with pytest.raises(redis.ConnectionError):
        redis.Redis(port=resp_port, ssl=True, ssl_ca_certs=str(pki / "ca.crt")).ping()
    with pytest.raises(OSError):
        ctx = ssl_ctx(pki / "foreign", ca=pki / "ca.crt")
        urllib.request.urlopen(f"https://127.0.0.1:{metrics_port}/metrics", context=ctx).read()
    assert resp(resp_port, pki).ping()


def test_a_client_refuses_a_node_whose_certificate_is_not_from_its_ca(
    cluster: Cluster, pki: Path
) -> None:
    node = cluster.primary("--name", "n1", "--tls-dir", str(pki / "foreign"),
                           "--tls-client-auth", "no",
                           credentials=grpc.ssl_channel_credentials(
                               (pki / "foreign/ca.crt").read_bytes()))  # fmt: skip
    assert refused(node.address, creds(pki)) == grpc.StatusCode.UNAVAILABLE


def start_unprobed(node: Node, event: str = "primary_ready") -> Node:
    """Start `node` and wait for its `event` in its log (for nodes the tests' client cannot
    talk to)."""
    cmd = _xstream(node.role, "--port", str(node.port), "--data-dir", str(node.data_dir),
                   *node.args)  # fmt: skip
    with node.log.open("ab") as f:
        node.proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
    poll(f"{node.role} {node.address} to be ready", lambda: node.events(event))
    return node


def test_an_expired_node_certificate_is_refused(
    cluster: Cluster, pki: Path, tmp_path: Path
) -> None:
    ca = certs.load_ca(pki)
    assert ca is not None
    then = dt.datetime.now(dt.UTC) - dt.timedelta(days=11)
    certs.write_pair(tmp_path, "old", *certs.issue(ca, "old", days=1, not_before=then))
    args = ["--tls-cert", str(tmp_path / "old.crt"), "--tls-key", str(tmp_path / "old.key"),
            "--tls-client-auth", "no"]  # fmt: skip
    node = start_unprobed(cluster._node("primary", args))
    assert refused(node.address, creds(pki)) == grpc.StatusCode.UNAVAILABLE
    assert node.proc is not None and node.proc.poll() is None


def test_a_rotated_certificate_reaches_new_connections_and_old_ones_keep_going(
    cluster: Cluster, pki: Path, tmp_path: Path
) -> None:
    tls = tmp_path / "tls"
    shutil.copytree(pki, tls, ignore=shutil.ignore_patterns("foreign", "expired"))
    resp_port = free_port()
    node = tls_primary(cluster, tls, "--resp-port", str(resp_port))
    first = served_cert(resp_port, ssl_ctx(pki))
    assert served_cert(node.port, ssl_ctx(pki), h2=True) == first
    old = resp(resp_port, pki, single_connection_client=True)
    old_id = old.client_id()
    old_channel = grpc.secure_channel(node.address, creds(pki))
    pb_grpc.AdminStub(old_channel).Info(pb.InfoRequest(), timeout=5)
    ca = certs.load_ca(tls)
    assert ca is not None

    # SIGHUP: reloaded at once
    certs.write_pair(tls, "n1", *certs.issue(ca, "n1"))
    assert node.proc is not None
    node.proc.send_signal(signal.SIGHUP)
    second = poll("the RESP port to serve the new certificate",
                  lambda: (c := served_cert(resp_port, ssl_ctx(pki))) != first and c)  # fmt: skip
    poll("the gRPC port to serve it", lambda: served_cert(node.port, ssl_ctx(pki), True) == second)
    assert old.client_id() == old_id and old.ping()  # the same connection, still working
    pb_grpc.AdminStub(old_channel).Info(pb.InfoRequest(), timeout=5)
    assert resp(resp_port, pki).ping()

    # a file change alone: picked up by the poll of the files' mtimes
    time.sleep(0.05)
    certs.write_pair(tls, "n1", *certs.issue(ca, "n1"))
    poll(
        "the rotated files to be picked up without a signal",
        lambda: served_cert(resp_port, ssl_ctx(pki)) not in (first, second),
        timeout=15,
    )
    assert old.client_id() == old_id
    assert len(node.events("tls_reloaded")) == 2
    old_channel.close()


def test_a_replica_follows_a_tls_primary_with_mutual_tls(cluster: Cluster, pki: Path) -> None:
    primary = tls_primary(cluster, pki)
    replica = cluster.replica(primary, "--name", "n2", "--tls-dir", str(pki),
                              credentials=creds(pki))  # fmt: skip
    c = Client("127.0.0.1", primary.port, ssl_ca_certs=pki / "ca.crt",
               ssl_certfile=pki / "app.crt", ssl_keyfile=pki / "app.key")  # fmt: skip
    ids = [c.xadd("s", {"i": str(i)}) for i in range(20)]
    cluster.settled(primary, [replica])
    r = Client("127.0.0.1", replica.port, ssl=True, ssl_ca_certs=str(pki / "ca.crt"),
               ssl_certfile=str(pki / "app.crt"), ssl_keyfile=str(pki / "app.key"))  # fmt: skip
    assert [e[0] for e in r.xrange("s")] == ids
    assert primary.digest() == replica.digest()
    c.close()
    r.close()


def test_a_replica_with_a_foreign_certificate_gets_nothing(cluster: Cluster, pki: Path) -> None:
    """The rogue trusts our CA (it can verify the primary), but its own certificate is from
    another CA: the primary refuses the handshake and sends nothing."""
    primary = tls_primary(cluster, pki)
    Client("127.0.0.1", primary.port, ssl_ca_certs=pki / "ca.crt", ssl_certfile=pki / "app.crt",
           ssl_keyfile=pki / "app.key").xadd("secret", {"k": "v"})  # fmt: skip
    both = pki / "both-ca.crt"
    both.write_bytes((pki / "ca.crt").read_bytes() + (pki / "foreign/ca.crt").read_bytes())
    args = ["--primary", primary.address, "--name", "rogue", "--tls-dir", str(pki / "foreign"),
            "--tls-ca", str(both)]  # fmt: skip
    rogue = start_unprobed(cluster._node("replica", args), "replica_ready")
    rogue.credentials = creds(pki / "foreign", "rogue")
    refusal = "CERTIFICATE_VERIFY_FAILED"  # grpcio logs the refused handshake
    poll("the primary to refuse the rogue", lambda: refusal in primary.log.read_text("utf-8"))
    time.sleep(0.5)
    assert rogue.info().link != "up"
    assert rogue.info().offset == 0
    assert primary.events("full_resync_start") == []


def _xstream(*words: str) -> list[str]:
    return [sys.executable, "-m", "xstream.cli", *words]


def test_a_non_loopback_address_needs_tls_or_insecure(tmp_path: Path, pki: Path) -> None:
    port = str(free_port())
    out = subprocess.run(_xstream("primary", "--host", "0.0.0.0", "--port", port,
                                  "--data-dir", str(tmp_path / "d")),
                         capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert out.returncode == 2
    assert "refusing to listen on 0.0.0.0 without TLS" in out.stderr
    assert "--insecure" in out.stderr
    out = subprocess.run(_xstream("primary", "--port", port, "--data-dir", str(tmp_path / "d"),
                                  "--resp-port", "0", "--resp-host", "0.0.0.0"),
                         capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert out.returncode == 2 and "0.0.0.0" in out.stderr
    for extra in (["--insecure"], ["--name", "n1", "--tls-dir", str(pki)]):
        proc = subprocess.Popen(_xstream("primary", "--host", "0.0.0.0", "--port", port,
                                         "--data-dir", str(tmp_path / "d"), *extra),
                                stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)  # fmt: skip
        try:
            cred = creds(pki) if "--tls-dir" in extra else None
            with (
                grpc.secure_channel(f"127.0.0.1:{port}", cred)
                if cred
                else grpc.insecure_channel(f"127.0.0.1:{port}")
            ) as ch:

                def up(ch: grpc.Channel = ch, proc: subprocess.Popen[bytes] = proc) -> bool:
                    assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                    return pb_grpc.AdminStub(ch).Info(pb.InfoRequest(), timeout=1).role == "primary"

                poll(f"a primary on 0.0.0.0 with {extra[0]}", up)
        finally:
            proc.terminate()
            proc.wait(15)


def test_a_key_that_does_not_match_its_certificate_is_refused(tmp_path: Path, pki: Path) -> None:
    words = ["--tls-cert", str(pki / "n1.crt"), "--tls-key", str(pki / "n2.key"),
             "--tls-client-auth", "no"]  # fmt: skip
    out = subprocess.run(_xstream("primary", "--port", "0", "--data-dir", str(tmp_path), *words),
                         capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert out.returncode == 2
    assert out.stderr.startswith("error: ") and "Traceback" not in out.stderr


def test_the_command_line_speaks_tls(served: tuple[Node, int, int], pki: Path) -> None:
    node, _, _ = served
    tls = ["--tls-dir", str(pki), "--tls-name", "app"]

    def run(*words: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(_xstream(*words), capture_output=True, text=True, timeout=60,
                              check=False)  # fmt: skip

    out = run("cli", "--node", node.address, *tls, "XADD", "s", "*", "a", "1")
    assert out.returncode == 0 and out.stdout.startswith('"'), out.stderr
    out = run("info", "--node", node.address, *tls)
    assert out.returncode == 0 and "role:" in out.stdout
    out = run("info", "--node", node.address, "--tls-ca", str(pki / "ca.crt"))  # no certificate
    assert out.returncode == 1 and "UNAVAILABLE" in out.stderr
    out = run("info", "--node", node.address)
    assert out.returncode == 1 and "UNAVAILABLE" in out.stderr
    out = run("info", "--node", node.address, "--tls-name", "app")
    assert out.returncode == 2 and "--tls-name needs --tls-dir" in out.stderr


def test_the_spark_sources_node_calls_speak_tls(served: tuple[Node, int, int], pki: Path) -> None:
    """What the data source's planner and tasks call (pipeline/nodes.py), without Spark."""
    from xstream.pipeline import nodes  # noqa: PLC0415
    from xstream.pipeline.options import TlsFiles  # noqa: PLC0415

    node, resp_port, _ = served
    resp(resp_port, pki).xadd("events", {"n": "1"})
    tls = TlsFiles(str(pki / "ca.crt"), str(pki / "app.crt"), str(pki / "app.key"))
    assert nodes.state(node.address, "events", tls).length == 1
    with pytest.raises(nodes.NodeError):
        nodes.state(node.address, "events")  # plaintext
