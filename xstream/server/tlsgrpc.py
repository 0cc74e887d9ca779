"""The gRPC port's TLS: server credentials over the node's material (node/tls.py) that follow
its reloads. grpcio asks the fetcher before every new handshake; it answers None while the
material is the one it last gave, so open connections keep theirs and new ones get the new."""

from __future__ import annotations

import threading

import grpc

from xstream.node.tls import Material, Tls


def _configuration(m: Material) -> grpc.ServerCertificateConfiguration:
    return grpc.ssl_server_certificate_configuration([(m.key, m.cert)], root_certificates=m.ca)


def server_credentials(tls: Tls) -> grpc.ServerCredentials:
    """TLS 1.2+ (grpcio's floor). Client certificates: required with --tls-client-auth
    required, not asked for otherwise (grpcio has no "verify if sent")."""
    given = tls.material
    lock = threading.Lock()  # grpcio may ask from several threads

    def fetch() -> grpc.ServerCertificateConfiguration | None:
        nonlocal given
        with lock:
            m = tls.material
            if m.version == given.version:
                return None
            given = m
            return _configuration(m)

    return grpc.dynamic_ssl_server_credentials(
        _configuration(given),
        fetch,  # type: ignore[arg-type]  # grpcio documents None as "no change"; its stubs do not
        require_client_authentication=tls.files.client_auth == "required",
    )
