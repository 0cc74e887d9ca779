"""The TLS options of nodes and clients: which files they name, what is refused, and which
addresses a plaintext node may bind (the TLS handshakes themselves are integration tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from xstream.client.tls import client_tls, from_options
from xstream.node.tls import TlsConfigError, TlsFiles, is_loopback
from xstream.server.config import NodeConfig, check_exposure


def _files(tmp_path: Path, *names: str) -> None:
    for n in names:
        (tmp_path / n).write_text("pem")


def resolve(**kw: object) -> TlsFiles | None:
    args: dict[str, object] = {"cert": None, "key": None, "ca": None, "directory": None}
    args |= {"name": "", "client_auth": "required"}
    args.update(kw)
    return TlsFiles.resolve(**args)  # type: ignore[arg-type]


def test_no_options_is_no_tls() -> None:
    assert resolve() is None


def test_a_tls_dir_names_the_nodes_files(tmp_path: Path) -> None:
    _files(tmp_path, "ca.crt", "n1.crt", "n1.key")
    f = resolve(directory=tmp_path, name="n1")
    assert f == TlsFiles(tmp_path / "n1.crt", tmp_path / "n1.key", tmp_path / "ca.crt")
    other = tmp_path / "other.crt"
    other.write_text("pem")
    g = resolve(directory=tmp_path, name="n1", ca=other)
    assert g is not None and g.ca == other  # explicit files win


@pytest.mark.parametrize(("kw", "says"), [
    ({"directory": Path("d")}, "--tls-dir needs --name"),
    ({"cert": Path("c")}, "both --tls-cert and --tls-key"),
    ({"ca": Path("c")}, "--tls-ca without"),
    ({"cert": Path("c"), "key": Path("k")}, "needs --tls-ca"),
    ({"cert": Path("c"), "key": Path("k"), "client_auth": "maybe"}, "must be one of"),
    ({"cert": Path("c"), "key": Path("k"), "client_auth": "no"}, "does not exist"),
])  # fmt: skip
def test_incomplete_options_are_refused(kw: dict[str, object], says: str) -> None:
    with pytest.raises(TlsConfigError, match=says):
        resolve(**kw)


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("[::1]", True),
    ("localhost", True), ("0.0.0.0", False), ("::", False), ("10.1.2.3", False),
    ("node-1", False),
])  # fmt: skip
def test_loopback_addresses(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_an_exposed_plaintext_node_is_refused_unless_insecure() -> None:
    check_exposure(NodeConfig("primary"), tls=False)
    exposed = NodeConfig("primary", host="0.0.0.0")
    with pytest.raises(TlsConfigError, match=r"0\.0\.0\.0 without TLS.*--insecure"):
        check_exposure(exposed, tls=False)
    check_exposure(exposed, tls=True)
    exposed.insecure = True
    check_exposure(exposed, tls=False)
    resp = NodeConfig("primary", resp_port=0, resp_host="10.0.0.1")
    with pytest.raises(TlsConfigError, match=r"10\.0\.0\.1"):
        check_exposure(resp, tls=False)
    resp.resp_port = None  # no RESP port: its host does not matter
    check_exposure(resp, tls=False)


def test_client_parameters_as_redis_py(tmp_path: Path) -> None:
    _files(tmp_path, "ca.crt", "app.crt", "app.key")
    assert client_tls() is None
    t = client_tls(True)
    assert t is not None and t.ca is None and t.cert is None  # the system's roots
    t = client_tls(ssl_ca_certs=tmp_path / "ca.crt")  # a file implies ssl=True
    assert t is not None and t.ca == b"pem"
    with pytest.raises(ValueError, match="go together"):
        client_tls(True, ssl_certfile=tmp_path / "app.crt")
    t = from_options(None, None, None, tmp_path, "app")
    assert t is not None and (t.ca, t.cert, t.key) == (b"pem", b"pem", b"pem")
    t = from_options(None, None, None, tmp_path, "")
    assert t is not None and t.cert is None
    assert from_options(None, None, None, None, "") is None
    with pytest.raises(ValueError, match="--tls-name needs --tls-dir"):
        from_options(None, None, None, None, "app")


def test_spark_source_tls_options(tmp_path: Path) -> None:
    from xstream.pipeline.options import OptionError, TlsFiles, parse  # noqa: PLC0415

    _files(tmp_path, "ca.crt", "app.crt", "app.key")
    base = {"streams": "s", "primary": "h:1"}
    assert parse(base, mode="read").tls is None
    assert parse({**base, "tls": "true"}, mode="read").tls == TlsFiles()
    files = {"tlsCaFile": str(tmp_path / "ca.crt"), "tlsCertFile": str(tmp_path / "app.crt"),
             "tlsKeyFile": str(tmp_path / "app.key")}  # fmt: skip
    opts = parse({**base, **files}, mode="write")
    assert opts.tls == TlsFiles(files["tlsCaFile"], files["tlsCertFile"], files["tlsKeyFile"])
    with pytest.raises(OptionError, match="go together"):
        parse({**base, "tlsCertFile": files["tlsCertFile"]}, mode="read")
    with pytest.raises(OptionError, match="'tlsCaFile': no file"):
        parse({**base, "tlsCaFile": str(tmp_path / "nope")}, mode="read")
    with pytest.raises(OptionError, match="'tls' must be true or false"):
        parse({**base, "tls": "yes"}, mode="read")
