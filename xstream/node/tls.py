"""A node's TLS material: which files, loaded and checked, and reloaded while the node runs.

    TlsFiles     the paths (--tls-cert/--tls-key/--tls-ca, or --tls-dir DIR with --name N:
                 DIR/N.crt, DIR/N.key, DIR/ca.crt) and --tls-client-auth
    Tls          the material of the moment (PEM bytes, for grpcio) and an ssl.SSLContext
                 (for the RESP port, the metrics endpoint, the etcd client), swapped whole on
                 `reload()` (SIGHUP) or when `poll()` sees a file's mtime or size change

Reloading keeps every open connection: what changes is what *new* handshakes get. gRPC asks
`Tls.version` through its certificate fetcher (server/tlsgrpc.py); the listening SSLContext's
sni_callback, run on every ClientHello, moves the connection to the current SSLContext; the
replica's link and the etcd client build their credentials per connection. Material that does
not load (a key that does not match its certificate while the files are being rewritten) is
logged and skipped: the previous material stays until the next change loads.

Every endpoint requires TLS 1.2 or later. Client certificates (`client_auth`): "required" (the
default: until users and passwords exist, a certificate from the CA is the only thing keeping
a stranger from the Admin and Replication services, and it is Redis's own default,
tls-auth-clients yes), "optional" (verified when sent; grpcio can only require or not ask, so
on the gRPC port it does not ask) or "no".

This module is plain ssl and files; grpcio's types are built from `material()` at the edges.
"""

from __future__ import annotations

import ipaddress
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path

from xstream.engine.errors import CoreError

from .logs import slog

CLIENT_AUTH = ("required", "optional", "no")
_VERIFY = {"required": ssl.CERT_REQUIRED, "optional": ssl.CERT_OPTIONAL, "no": ssl.CERT_NONE}
POLL_SECONDS = 2.0  # how often the files' mtimes are checked


class TlsConfigError(CoreError, ValueError):
    """The TLS options do not name usable files (the message says which and why)."""


@dataclass(frozen=True, slots=True)
class TlsFiles:
    cert: Path  # the node's certificate chain (PEM), served and shown to peers it dials
    key: Path  # its private key (PEM, unencrypted)
    ca: Path | None  # CA bundle: verifies client certificates and the peers it dials
    client_auth: str = "required"  # one of CLIENT_AUTH

    @classmethod
    def resolve(
        cls,
        *,
        cert: Path | None,
        key: Path | None,
        ca: Path | None,
        directory: Path | None,
        name: str,
        client_auth: str,
    ) -> TlsFiles | None:
        """The files the options name (explicit paths win over --tls-dir's), or None when
        TLS is off. Raises TlsConfigError when they are incomplete or missing."""
        if directory is not None:
            if not name:
                raise TlsConfigError("--tls-dir needs --name (DIR/<name>.crt, DIR/<name>.key)")
            cert = cert or directory / f"{name}.crt"
            key = key or directory / f"{name}.key"
            ca = ca or directory / "ca.crt"
        if cert is None and key is None:
            if ca is not None:
                raise TlsConfigError("--tls-ca without --tls-cert and --tls-key")
            return None
        if cert is None or key is None:
            raise TlsConfigError("TLS needs both --tls-cert and --tls-key (or --tls-dir)")
        if client_auth not in CLIENT_AUTH:
            raise TlsConfigError(f"--tls-client-auth must be one of {', '.join(CLIENT_AUTH)}")
        if ca is None and client_auth != "no":
            raise TlsConfigError(
                f"--tls-client-auth {client_auth} needs --tls-ca (the CA of client "
                "certificates); or say --tls-client-auth no"
            )
        for path in (cert, key, ca):
            if path is not None and not path.is_file():
                raise TlsConfigError(f"TLS file {path} does not exist")
        return cls(cert, key, ca, client_auth)

    def paths(self) -> tuple[Path, ...]:
        return (self.cert, self.key) + ((self.ca,) if self.ca else ())


@dataclass(frozen=True, slots=True)
class Material:
    """One consistent load of the files."""

    cert: bytes  # PEM chain
    key: bytes  # PEM key
    ca: bytes | None  # PEM bundle
    version: int  # 1, 2, ...: which load this is
    server: ssl.SSLContext  # for listening sockets (RESP, metrics)
    client: ssl.SSLContext  # for dialing (etcd): verifies the server with `ca`, shows `cert`


def _server_context(files: TlsFiles) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(files.cert, files.key)
    if files.ca is not None:
        ctx.load_verify_locations(cafile=files.ca)
    ctx.verify_mode = _VERIFY[files.client_auth]
    return ctx


def _client_context(files: TlsFiles) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=files.ca)  # system roots when no CA is given
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(files.cert, files.key)
    return ctx


def _signature(files: TlsFiles) -> tuple[tuple[int, int], ...]:
    out = []
    for p in files.paths():
        try:
            st = p.stat()
            out.append((st.st_mtime_ns, st.st_size))
        except OSError:
            out.append((-1, -1))
    return tuple(out)


class Tls:
    """The node's TLS material of the moment. Thread-safe: gRPC's fetcher and the metrics
    server read it from their threads, the node's loop reloads it."""

    def __init__(self, files: TlsFiles) -> None:
        self.files = files
        self._lock = threading.Lock()  # one reload at a time
        self._seen = _signature(files)  # files' (mtime, size) when last loaded or tried
        self._material = self._load(1)  # raises at start: a node does not start half-secure

    @property
    def material(self) -> Material:
        return self._material

    @property
    def version(self) -> int:
        return self._material.version

    def _load(self, version: int) -> Material:
        f = self.files
        server = _server_context(f)
        server.sni_callback = self._move
        return Material(
            f.cert.read_bytes(),
            f.key.read_bytes(),
            f.ca.read_bytes() if f.ca else None,
            version,
            server,
            _client_context(f),
        )

    def reload(self, reason: str = "sighup") -> bool:
        """Load the files again; True if the new material is in place."""
        with self._lock:
            self._seen = _signature(self.files)  # before reading: a later write is seen
            try:
                material = self._load(self._material.version + 1)
            except (OSError, ssl.SSLError, ValueError) as e:
                slog("tls_reload_failed", level="error", reason=reason, error=str(e))
                return False
            self._material = material
        slog("tls_reloaded", reason=reason, version=material.version)
        return True

    def poll(self) -> bool:
        """Reload if a file changed since the last load or try."""
        if _signature(self.files) == self._seen:
            return False
        return self.reload("file_changed")

    def server_context(self) -> ssl.SSLContext:
        """The SSLContext to listen with: each new connection is moved to the material of the
        moment as its handshake begins (sni_callback), so one listening socket serves
        rotated certificates."""
        return self._material.server

    def client_context(self) -> ssl.SSLContext:
        return self._material.client

    def _move(self, conn: ssl.SSLObject | ssl.SSLSocket, _name: str | None, ctx: object) -> None:
        current = self._material.server
        if ctx is not current:
            conn.context = current


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the port to this machine (a name that is not an address
    counts as exposed unless it is localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


__all__ = ["CLIENT_AUTH", "POLL_SECONDS", "Material", "Tls", "TlsConfigError", "TlsFiles",
           "is_loopback"]  # fmt: skip
