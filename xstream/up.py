"""`xstream up`: a local cluster as child processes, no Docker: a primary on 7700 and
replicas on 7701 and 7702, data under ./data, metrics on 9700-9702. Ctrl-C (or SIGTERM)
stops all three gracefully; if one exits, the others are stopped too."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc

from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "up",
        help="run a local primary and two replicas",
        description="Run a local primary (7700) and two replicas (7701, 7702) as child "
        "processes, data under --data-dir. Stops them all on Ctrl-C.",
    )
    p.add_argument("--data-dir", type=Path, default=Path("data"), help="default ./data")
    p.add_argument("--port", type=int, default=7700, help="primary port; replicas use the next two")
    p.add_argument("--fsync", choices=["always", "everysec", "no"], default="everysec")
    p.add_argument(
        "--metrics-port",
        type=int,
        default=9700,
        help="primary metrics port; replicas use the next two (0 = off)",
    )
    p.set_defaults(func=up)


def _spawn(
    role: str, port: int, args: argparse.Namespace, extra: list[str]
) -> subprocess.Popen[bytes]:
    d = args.data_dir / (role if role == "primary" else f"replica-{port}")
    metrics = args.metrics_port + (port - args.port) if args.metrics_port else 0
    cmd = [
        sys.executable, "-m", "xstream.cli", role,
        "--port", str(port), "--data-dir", str(d), "--fsync", args.fsync,
        "--metrics-port", str(metrics), *extra,
    ]  # fmt: skip
    return subprocess.Popen(cmd)


def _wait_ready(address: str, deadline: float, proc: subprocess.Popen[bytes]) -> bool:
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with grpc.insecure_channel(address) as ch:
                pb_grpc.AdminStub(ch).Info(pb.InfoRequest(), timeout=1)
            return True
        except grpc.RpcError:
            time.sleep(0.1)
    return False


def up(args: argparse.Namespace) -> int:
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    ports = [args.port, args.port + 1, args.port + 2]
    primary = f"127.0.0.1:{args.port}"
    procs = [_spawn("primary", args.port, args, ["--expect-replicas", "2"])]
    if _wait_ready(primary, time.monotonic() + 30, procs[0]):
        for port in ports[1:]:
            procs.append(_spawn("replica", port, args, ["--primary", primary]))
        for port, proc in zip(ports[1:], procs[1:], strict=True):
            _wait_ready(f"127.0.0.1:{port}", time.monotonic() + 30, proc)
    if all(p.poll() is None for p in procs) and len(procs) == 3:
        print(
            f"up: primary {primary}, replicas 127.0.0.1:{ports[1]} and 127.0.0.1:{ports[2]}; "
            f"data under {args.data_dir}/. "
            f"Try: xstream cli --node {primary} XADD s '*' f v. Ctrl-C stops.",
            file=sys.stderr,
            flush=True,
        )
    while not stopping and len(procs) == 3 and all(p.poll() is None for p in procs):
        time.sleep(0.2)
    if not stopping:
        print("up: a node exited; stopping the others", file=sys.stderr, flush=True)
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    code = 0
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
        code = code or (p.returncode if not stopping else 0)
    return code
