"""`xstream certs`: a local certificate authority and the certificates of nodes and clients,
for development, tests and small deployments (a real deployment may bring its own PKI: nodes
only read PEM files).

    DIR/ca.crt, ca.key          the CA (reused when DIR already holds one, so nodes and
                                clients can be added later under the same CA)
    DIR/<node>.crt, .key        a node: serverAuth and clientAuth (nodes dial each other with
                                it: mutual TLS), SANs: the name, localhost, 127.0.0.1, ::1
                                and every --host
    DIR/<client>.crt, .key      a client: clientAuth only, CN = its name (the name a later
                                ACL slice maps to a user)

Keys are ECDSA P-256, written 0600; certificates 0644. Every file is written whole to a
temporary name and renamed, so a node polling for rotated files never reads half of one.
Made with the `cryptography` library (the `server` extra), no openssl subprocess.
"""

from __future__ import annotations

import argparse
import datetime as dt
import ipaddress
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the `server` extra: imported when a certificate is made
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec

DEFAULT_DAYS = 825  # what browsers and most tools still accept for a leaf certificate
CA_DAYS = 3650


@dataclass(frozen=True)
class Authority:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey


def _new_key() -> ec.EllipticCurvePrivateKey:
    from cryptography.hazmat.primitives.asymmetric import ec  # noqa: PLC0415

    return ec.generate_private_key(ec.SECP256R1())


def _name(common_name: str) -> x509.Name:
    from cryptography import x509  # noqa: PLC0415
    from cryptography.x509.oid import NameOID  # noqa: PLC0415

    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "xstream"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _window(days: int, not_before: dt.datetime | None) -> tuple[dt.datetime, dt.datetime]:
    start = not_before or dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)  # clock skew
    return start, start + dt.timedelta(days=days)


def make_ca(days: int = CA_DAYS, name: str = "xstream local CA") -> Authority:
    from cryptography import x509  # noqa: PLC0415
    from cryptography.hazmat.primitives import hashes  # noqa: PLC0415

    usage = dict.fromkeys(("content_commitment", "key_encipherment", "data_encipherment",
                           "key_agreement", "encipher_only", "decipher_only"), False)  # fmt: skip
    ca_usage = x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, **usage)

    key = _new_key()
    start, end = _window(days, None)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(_name(name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(ca_usage, critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .sign(key, hashes.SHA256())
    )
    return Authority(cert, key)


def _sans(names: Sequence[str]) -> list[x509.GeneralName]:
    from cryptography import x509  # noqa: PLC0415

    out: list[x509.GeneralName] = []
    for n in dict.fromkeys(names):
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(n)))
        except ValueError:
            out.append(x509.DNSName(n))
    return out


def issue(
    ca: Authority,
    name: str,
    *,
    hosts: Sequence[str] = (),
    server: bool = True,
    days: int = DEFAULT_DAYS,
    not_before: dt.datetime | None = None,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A leaf certificate for `name` signed by `ca`: a node's (server=True: serverAuth and
    clientAuth, SANs `name`, localhost, loopback and `hosts`) or a client's (clientAuth).
    `not_before` moves the validity window (tests make expired certificates with it)."""
    from cryptography import x509  # noqa: PLC0415
    from cryptography.hazmat.primitives import hashes  # noqa: PLC0415
    from cryptography.x509.oid import ExtendedKeyUsageOID  # noqa: PLC0415

    key = _new_key()
    start, end = _window(days, not_before)
    usages = [ExtendedKeyUsageOID.CLIENT_AUTH]
    if server:
        usages.insert(0, ExtendedKeyUsageOID.SERVER_AUTH)
    sans = [name, *hosts] + (["localhost", "127.0.0.1", "::1"] if server else [])
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(x509.SubjectAlternativeName(_sans(sans)), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), False
        )
    )
    return builder.sign(ca.key, hashes.SHA256()), key


# ------------------------------------------------------------------ files


def _write(path: Path, data: bytes, mode: int) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.fchmod(fd, mode)  # an older tmp file keeps its mode through O_CREAT
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    tmp.replace(path)


def write_pair(
    out: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey
) -> None:
    """`<stem>.key` (0600, PKCS#8 unencrypted) first, then `<stem>.crt` (0644): a node that
    reloads on the certificate's change finds its key already in place."""
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415

    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    _write(out / f"{stem}.key", pem, 0o600)
    _write(out / f"{stem}.crt", cert.public_bytes(serialization.Encoding.PEM), 0o644)


def load_ca(out: Path) -> Authority | None:
    """The CA already in `out`, if both its files are there."""
    from cryptography import x509  # noqa: PLC0415
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric import ec  # noqa: PLC0415

    crt, key = out / "ca.crt", out / "ca.key"
    if not (crt.exists() and key.exists()):
        return None
    private = serialization.load_pem_private_key(key.read_bytes(), password=None)
    if not isinstance(private, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{key}: not an ECDSA key (xstream certs makes P-256 keys)")
    return Authority(x509.load_pem_x509_certificate(crt.read_bytes()), private)


def check_name(name: str) -> str:
    if not name or name.startswith(".") or any(c in name for c in "/\\\0") or name == "ca":
        raise ValueError(f"{name!r} cannot name a certificate file (DIR/<name>.crt)")
    return name


def make(
    out: Path,
    nodes: Sequence[str],
    clients: Sequence[str] = (),
    hosts: Sequence[str] = (),
    days: int = DEFAULT_DAYS,
) -> list[Path]:
    """Make (or reuse) the CA in `out` and a certificate per node and client; the files
    written, CA first."""
    for n in (*nodes, *clients):
        check_name(n)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    ca = load_ca(out)
    if ca is None:
        ca = make_ca()
        write_pair(out, "ca", ca.cert, ca.key)
        written += [out / "ca.crt", out / "ca.key"]
    for name in nodes:
        write_pair(out, name, *issue(ca, name, hosts=hosts, days=days))
        written += [out / f"{name}.crt", out / f"{name}.key"]
    for name in clients:
        write_pair(out, name, *issue(ca, name, server=False, days=days))
        written += [out / f"{name}.crt", out / f"{name}.key"]
    return written


# ------------------------------------------------------------------ the command


def _names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    try:
        return [check_name(n) for n in names]
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _days(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a whole number of days >= 1")
    return int(text)


def run(args: argparse.Namespace) -> int:
    nodes = [n for group in args.node for n in group]
    clients = [n for group in args.client for n in group]
    if not nodes and not clients:
        print("error: give at least one --node or --client", file=sys.stderr)
        return 2
    try:
        written = make(args.out, nodes, clients, args.host, args.days)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "certs",
        help="make a local CA and node/client TLS certificates",
        description="Make a local certificate authority (DIR/ca.crt, DIR/ca.key; an existing "
        "one in DIR is reused) and a certificate and key per node and client "
        "(DIR/<name>.crt, DIR/<name>.key, keys 0600). Nodes read them with --tls-dir DIR "
        "--name <name>; clients with --tls-dir DIR --tls-name <client> or --tls-ca/--tls-cert/"
        "--tls-key. Needs the server extra (the cryptography library).",
    )
    p.add_argument("--out", required=True, type=Path, help="directory to write into (DIR)")
    p.add_argument(
        "--node",
        type=_names,
        action="append",
        default=[],
        metavar="NAME[,NAME...]",
        help="node certificates (serverAuth + clientAuth) with SANs NAME, localhost, "
        "127.0.0.1, ::1 and every --host; repeatable",
    )
    p.add_argument(
        "--client",
        type=_names,
        action="append",
        default=[],
        metavar="NAME[,NAME...]",
        help="client certificates (clientAuth, CN=NAME); repeatable",
    )
    p.add_argument(
        "--host",
        action="append",
        default=[],
        metavar="HOST",
        help="one more DNS name or IP address in every node certificate's SANs (e.g. the "
        "name clients dial); repeatable",
    )
    p.add_argument(
        "--days",
        type=_days,
        default=DEFAULT_DAYS,
        help=f"validity of node and client certificates in days (default {DEFAULT_DAYS}; "
        f"a new CA is valid {CA_DAYS} days)",
    )
    p.set_defaults(func=run)
