"""`xstream secrets`: the tree it makes (modes, users, two CAs), kept and extended on a second
run; and kubesecrets storing it as Secrets through a fake API server over HTTPS."""

from __future__ import annotations

import base64
import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from xstream import certs, deploysecrets, kubesecrets
from xstream.node.acl import Acl


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_a_tree_with_users_two_cas_and_private_files(tmp_path: Path) -> None:
    out = tmp_path / "s"
    assert deploysecrets.make(out, ["etcd", "n1"], domains=["svc"]) == "made"
    modes = {str(p.relative_to(out)): p.stat().st_mode & 0o777 for p in out.rglob("*")}
    private = ("tls/n1.key", "tls/etcd.key", "users/users.acl", "users/replica.password",
               "client/app.key", "client/admin.password", "ca/ca.key",
               "ca/clients/ca.key")  # fmt: skip
    for secret in private:
        assert modes[secret] == 0o600, secret
    assert modes["tls/n1.crt"] == modes["client/ca.crt"] == 0o644
    acl = Acl()
    acl.users = acl.load((out / "users" / "users.acl").read_text(), "users.acl")
    assert acl.requires_auth() and not acl.default.enabled
    for user in ("admin", "app"):
        word = (out / "client" / f"{user}.password").read_text().strip().encode()
        assert acl.authenticate(user, word) is not None
        assert word.decode() not in (out / "users" / "users.acl").read_text()  # hashed only
    replica = acl.authenticate("replica", (out / "users" / "replica.password").read_bytes()[:-1])
    assert replica is not None
    assert acl.check(replica, [b"sync"]) is None and acl.check(replica, [b"info"]) is not None
    app = acl.users["app"]
    assert acl.check(app, [b"XADD", b"s", b"*", b"a", b"1"]) is None
    assert acl.check(app, [b"INFO"]) is None and acl.check(app, [b"FLUSHALL"]) is not None
    # Node certificates from the node CA (etcd trusts it alone), client ones from the other.
    node_ca, client_ca = _cert(out / "ca" / "ca.crt"), _cert(out / "ca" / "clients" / "ca.crt")
    _cert(out / "tls" / "n1.crt").verify_directly_issued_by(node_ca)
    _cert(out / "client" / "app.crt").verify_directly_issued_by(client_ca)
    with pytest.raises(ValueError):
        _cert(out / "client" / "app.crt").verify_directly_issued_by(node_ca)
    assert (out / "tls" / "nodes-ca.crt").read_bytes() == (out / "ca" / "ca.crt").read_bytes()
    assert (out / "tls" / "ca.crt").read_text().count("BEGIN CERTIFICATE") == 2
    sans = _cert(out / "tls" / "n1.crt").extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    )
    assert "n1.svc" in sans.value.get_values_for_type(x509.DNSName)


def test_a_complete_tree_is_kept_and_only_new_nodes_are_added(tmp_path: Path) -> None:
    out = tmp_path / "s"
    deploysecrets.make(out, ["n1"])
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert deploysecrets.make(out, ["n1"]) == "kept"
    assert deploysecrets.make(out, ["n1", "n2"]) == "added"
    after = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert {p: after[p] for p in before} == before  # no password or certificate changed
    _cert(out / "tls" / "n2.crt").verify_directly_issued_by(_cert(out / "ca" / "ca.crt"))
    (out / "ca" / "ca.key").unlink()
    with pytest.raises(ValueError, match="holds no CA"):
        deploysecrets.make(out, ["n3"])


# --- kubesecrets against a fake API server ----------------------------------------------------


class FakeApi(BaseHTTPRequestHandler):
    secrets: dict[str, Any] = {}  # noqa: RUF012 (the class is the server's state, per test)
    calls: list[tuple[str, str, str]] = []  # noqa: RUF012

    def _reply(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.calls.append(("GET", self.path, self.headers["Authorization"]))
        name = self.path.rsplit("/", 1)[-1]
        if name in self.secrets:
            self._reply(200, self.secrets[name])
        else:
            self._reply(404, {"message": f'secrets "{name}" not found'})

    def do_POST(self) -> None:
        self.calls.append(("POST", self.path, self.headers["Authorization"]))
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.secrets[body["metadata"]["name"]] = body
        self._reply(201, body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fake API server on https://127.0.0.1 and a service account directory for it."""
    pki = tmp_path / "pki"
    certs.make(pki, ["apiserver"])
    account = tmp_path / "account"
    account.mkdir()
    (account / "token").write_text("t0ken\n")
    (account / "namespace").write_text("ns1")
    (account / "ca.crt").write_bytes((pki / "ca.crt").read_bytes())
    FakeApi.secrets, FakeApi.calls = {}, []
    server = HTTPServer(("127.0.0.1", 0), FakeApi)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki / "apiserver.crt", pki / "apiserver.key")
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(server.server_address[1]))
    try:
        yield account
    finally:
        server.shutdown()
        server.server_close()


def test_the_tree_becomes_four_secrets_once(api: Path, tmp_path: Path) -> None:
    out = tmp_path / "s"
    deploysecrets.make(out, ["xstream-0"])
    assert kubesecrets.publish(out, "xstream", api) == [
        f"created secret/xstream-{p}" for p in kubesecrets.PARTS
    ]
    assert all(auth == "Bearer t0ken" for _, _, auth in FakeApi.calls)
    assert {path for m, path, _ in FakeApi.calls if m == "POST"} == {
        "/api/v1/namespaces/ns1/secrets"
    }
    tls = FakeApi.secrets["xstream-tls"]
    assert tls["type"] == "Opaque" and set(tls["data"]) == {
        "ca.crt", "nodes-ca.crt", "xstream-0.crt", "xstream-0.key"
    }  # fmt: skip
    key = base64.b64decode(tls["data"]["xstream-0.key"])
    assert key == (out / "tls" / "xstream-0.key").read_bytes()
    assert set(FakeApi.secrets["xstream-ca"]["data"]) == {
        "ca.crt", "ca.key", "clients-ca.crt", "clients-ca.key"
    }  # fmt: skip
    # Run again (a fresh tree, other passwords): every Secret exists, so all are kept.
    again = tmp_path / "again"
    deploysecrets.make(again, ["xstream-0"])
    before = json.dumps(FakeApi.secrets, sort_keys=True)
    assert kubesecrets.publish(again, "xstream", api) == [
        f"kept secret/xstream-{p}" for p in kubesecrets.PARTS
    ]
    assert json.dumps(FakeApi.secrets, sort_keys=True) == before
    del FakeApi.secrets["xstream-users"]
    with pytest.raises(kubesecrets.KubeError, match="only some of the Secrets exist"):
        kubesecrets.publish(again, "xstream", api)
    assert "xstream-users" not in FakeApi.secrets


def test_outside_a_pod_it_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(kubesecrets.KubeError, match="not in a Kubernetes pod"):
        kubesecrets.publish(tmp_path, "xstream", tmp_path / "nowhere")
