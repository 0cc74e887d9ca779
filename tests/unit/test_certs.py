"""`xstream certs`: the CA and the certificates it makes, their names, usages, SANs, validity
and file modes, checked with the cryptography library and with the ssl module's own
verification (what nodes and clients do)."""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import ssl
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from xstream import certs
from xstream.cli import main


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def _sans(cert: x509.Certificate) -> set[str]:
    ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return {str(n.value) for n in ext}


def _usages(cert: x509.Certificate) -> set[x509.ObjectIdentifier]:
    return set(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)


def test_the_command_writes_a_ca_nodes_and_clients(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tls"
    words = ["--node", "n1,n2", "--node", "n3", "--client", "app"]
    words += ["--host", "db.example", "--host", "10.0.0.7", "--days", "30"]
    code = main(["certs", "--out", str(out), *words])
    assert code == 0
    names = {p.name for p in out.iterdir()}
    stems = ["ca", "n1", "n2", "n3", "app"]
    assert names == {f"{s}.{x}" for s in stems for x in ("crt", "key")}
    assert capsys.readouterr().out.split() == [
        str(out / n) for s in stems for n in (f"{s}.crt", f"{s}.key")
    ]
    for s in stems:
        assert stat.S_IMODE((out / f"{s}.key").stat().st_mode) == 0o600
        assert stat.S_IMODE((out / f"{s}.crt").stat().st_mode) == 0o644
    ca = _cert(out / "ca.crt")
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    n1 = _cert(out / "n1.crt")
    assert n1.issuer == ca.subject
    assert n1.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "n1"
    assert _sans(n1) == {"n1", "localhost", "127.0.0.1", "::1", "db.example", "10.0.0.7"}
    ip = n1.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("10.0.0.7") in ip.get_values_for_type(x509.IPAddress)
    assert _usages(n1) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    assert _usages(_cert(out / "app.crt")) == {ExtendedKeyUsageOID.CLIENT_AUTH}
    life = n1.not_valid_after_utc - n1.not_valid_before_utc
    assert life == dt.timedelta(days=30)


def test_the_certificates_verify_with_the_ssl_module(tmp_path: Path) -> None:
    """A server context with n1's pair and a client context trusting ca.crt agree (the
    chain, the key matching, the SAN 127.0.0.1 and localhost)."""
    certs.make(tmp_path, ["n1"], ["app"])
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=tmp_path / "ca.crt")
    server.load_cert_chain(tmp_path / "n1.crt", tmp_path / "n1.key")
    server.verify_mode = ssl.CERT_REQUIRED
    client = ssl.create_default_context(cafile=tmp_path / "ca.crt")
    client.load_cert_chain(tmp_path / "app.crt", tmp_path / "app.key")
    for host in ("localhost", "127.0.0.1"):
        c_in, c_out, s_in, s_out = (ssl.MemoryBIO() for _ in range(4))
        c = client.wrap_bio(c_in, c_out, server_hostname=host)
        s = server.wrap_bio(s_in, s_out, server_side=True)
        for _ in range(10):
            for obj in (c, s):
                with contextlib.suppress(ssl.SSLWantReadError):
                    obj.do_handshake()
            s_in.write(c_out.read())
            c_in.write(s_out.read())
        assert c.version() in ("TLSv1.2", "TLSv1.3")
        assert s.getpeercert()["subject"][-1] == (("commonName", "app"),)


def test_a_second_run_reuses_the_ca(tmp_path: Path) -> None:
    certs.make(tmp_path, ["n1"])
    first = (tmp_path / "ca.crt").read_bytes()
    written = certs.make(tmp_path, ["n2"])
    assert (tmp_path / "ca.crt").read_bytes() == first
    assert written == [tmp_path / "n2.crt", tmp_path / "n2.key"]
    assert _cert(tmp_path / "n2.crt").issuer == _cert(tmp_path / "ca.crt").subject


def test_a_past_validity_window_makes_an_expired_certificate(tmp_path: Path) -> None:
    ca = certs.make_ca()
    then = dt.datetime.now(dt.UTC) - dt.timedelta(days=10)
    cert, _ = certs.issue(ca, "old", days=1, not_before=then)
    assert cert.not_valid_after_utc < dt.datetime.now(dt.UTC)


@pytest.mark.parametrize("words", [
    ["--node", "a/b"], ["--node", "ca"], ["--client", ".hidden"], ["--node", "n", "--days", "0"],
])  # fmt: skip
def test_bad_names_and_days_are_refused(tmp_path: Path, words: list[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["certs", "--out", str(tmp_path), *words])
    assert e.value.code == 2
    assert list(tmp_path.iterdir()) == []


def test_nothing_to_make_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certs", "--out", str(tmp_path)]) == 2
    assert "at least one --node or --client" in capsys.readouterr().err


def test_every_option_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["certs", "--help"])
    text = capsys.readouterr().out
    for option in ("--out", "--node", "--client", "--host", "--days"):
        assert option in text
