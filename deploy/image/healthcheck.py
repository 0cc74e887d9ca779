#!/usr/bin/env python3
"""xstream-healthcheck [HOST:PORT [SERVICE]] [--tls-dir DIR] [--tls-name NAME]: exit 0 iff the
node's gRPC health service (grpc.health.v1) answers SERVING, else print why on stderr and
exit 1.

Baked into xstream-node as /usr/local/bin/xstream-healthcheck for compose's healthcheck and
Kubernetes' exec probes (Kubernetes' native `grpc:` probe speaks no TLS). Over TLS it shows
the node's own certificate (DIR/NAME.crt, DIR/NAME.key: node certificates are client
certificates too) and verifies the node with DIR/ca.crt, dialing 127.0.0.1, which node
certificates name. The health service needs no user, so no password is involved.
Defaults: 127.0.0.1:7700 (or $XSTREAM_PORT), service "", a 3 s deadline, --tls-dir
$XSTREAM_TLS_DIR (unset: plaintext), --tls-name $XSTREAM_TLS_NAME or else the host name
(a StatefulSet pod's name is its node's).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


def channel(address: str, tls_dir: str, name: str) -> grpc.Channel:
    if not tls_dir:
        return grpc.insecure_channel(address)
    d = Path(tls_dir)
    ca, key, cert = (d / "ca.crt", d / f"{name}.key", d / f"{name}.crt")
    credentials = grpc.ssl_channel_credentials(ca.read_bytes(), key.read_bytes(), cert.read_bytes())
    return grpc.secure_channel(address, credentials)


def check(address: str, service: str, tls_dir: str = "", name: str = "") -> int:
    try:
        ch = channel(address, tls_dir, name)
    except OSError as e:
        print(f"unhealthy: {address}: cannot read TLS files: {e}", file=sys.stderr)
        return 1
    with ch:
        try:
            reply = health_pb2_grpc.HealthStub(ch).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=3
            )
        except grpc.RpcError as e:
            print(f"unhealthy: {address}: {e.code().name}: {e.details()}", file=sys.stderr)
            return 1
    if reply.status != health_pb2.HealthCheckResponse.SERVING:
        status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
        print(f"unhealthy: {address}: {status}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="xstream-healthcheck")
    port = os.environ.get("XSTREAM_PORT", "7700")
    p.add_argument("address", nargs="?", default=f"127.0.0.1:{port}")
    p.add_argument("service", nargs="?", default="")
    p.add_argument("--tls-dir", default=os.environ.get("XSTREAM_TLS_DIR", ""))
    p.add_argument("--tls-name", default=os.environ.get("XSTREAM_TLS_NAME", ""))
    args = p.parse_args(argv)
    return check(args.address, args.service, args.tls_dir, args.tls_name or socket.gethostname())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
