"""The client's TLS: which files, read once, and the gRPC channel credentials made of them.

redis-py's names: `ssl=True` turns TLS on (verifying the server with the system's roots, or
with `ssl_ca_certs`), `ssl_certfile` and `ssl_keyfile` are the client certificate a node asks
for (`--tls-client-auth required`, its default). Unlike redis-py, giving any `ssl_*` file
implies `ssl=True`: a certificate silently not sent is a puzzle, not a choice.

The command line's form (`xstream cli|info|... --tls-dir DIR [--tls-name NAME]`, or
`--tls-ca/--tls-cert/--tls-key`) resolves to the same three files (`from_options`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import grpc

StrPath = str | Path


@dataclass(frozen=True, slots=True)
class ClientTls:
    ca: bytes | None  # PEM roots that verify the server; None = the system's (grpcio's)
    cert: bytes | None  # PEM chain shown to the server, with `key`
    key: bytes | None

    def credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(self.ca, self.key, self.cert)


def _read(path: StrPath | None) -> bytes | None:
    return Path(path).read_bytes() if path is not None else None


def client_tls(
    ssl: bool = False,
    ssl_ca_certs: StrPath | None = None,
    ssl_certfile: StrPath | None = None,
    ssl_keyfile: StrPath | None = None,
) -> ClientTls | None:
    """The TLS a client asked for (redis-py's parameters), or None for plaintext. Raises
    ValueError when only one of the certificate and its key is given, OSError when a file
    cannot be read."""
    if (ssl_certfile is None) != (ssl_keyfile is None):
        raise ValueError("ssl_certfile and ssl_keyfile go together (a certificate and its key)")
    if not (ssl or ssl_ca_certs or ssl_certfile):
        return None
    return ClientTls(_read(ssl_ca_certs), _read(ssl_certfile), _read(ssl_keyfile))


def from_options(
    ca: Path | None,
    cert: Path | None,
    key: Path | None,
    directory: Path | None,
    name: str,
) -> ClientTls | None:
    """The command line's options: explicit files win over --tls-dir's (DIR/ca.crt, and
    DIR/<name>.crt, DIR/<name>.key when a name is given)."""
    if directory is not None:
        ca = ca or directory / "ca.crt"
        if name:
            cert = cert or directory / f"{name}.crt"
            key = key or directory / f"{name}.key"
    elif name:
        raise ValueError("--tls-name needs --tls-dir")
    return client_tls(False, ca, cert, key)


__all__ = ["ClientTls", "client_tls", "from_options"]
