#!/usr/bin/env python3
"""xstream-healthcheck [HOST:PORT [SERVICE]]: exit 0 iff the node's gRPC health service
(grpc.health.v1) answers SERVING, else print why on stderr and exit 1.

Baked into xstream-node as /usr/local/bin/xstream-healthcheck for compose's healthcheck: the
same question Kubernetes' native `grpc:` probe asks (service "" = the whole server).
Defaults: 127.0.0.1:7700 (or $XSTREAM_PORT), service "", 3 s deadline.
"""

from __future__ import annotations

import os
import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


def check(address: str, service: str) -> int:
    with grpc.insecure_channel(address) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
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
    address = argv[0] if argv else f"127.0.0.1:{os.environ.get('XSTREAM_PORT', '7700')}"
    return check(address, argv[1] if len(argv) > 1 else "")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
