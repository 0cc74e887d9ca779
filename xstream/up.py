"""`xstream up`: a local cluster as child processes, no Docker: a primary on 7700 and
replicas on 7701 and 7702 (gRPC; Redis's protocol on 6379-6381), data under ./data, metrics
on 9700-9702. Ctrl-C (or SIGTERM)
stops all three gracefully; if one exits, the others are stopped too.

The terminal gets a short human summary (nodes, roles, addresses, data and log files, how to
stop) and, while it runs, one line per warning or error a node logs; the nodes' JSON log
lines go to `<data-dir>/logs/<node>.log`. `--log-format json` prints the JSON lines on the
terminal instead (as a service manager wants them).

`--tls`: every endpoint over TLS with client certificates required, from a CA and
certificates made once in `<data-dir>/tls` (xstream certs: `primary`, `replica-<port>`, and
`cli` for clients; kept and reused by later runs)."""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import threading
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
    p.add_argument(
        "--resp-port",
        type=int,
        default=6379,
        help="primary's RESP (Redis protocol) port; replicas use the next two (default 6379)",
    )
    p.add_argument("--fsync", choices=["always", "everysec", "no"], default="everysec")
    p.add_argument(
        "--metrics-port",
        type=int,
        default=9700,
        help="primary metrics port; replicas use the next two (0 = off)",
    )
    p.add_argument(
        "--log-format",
        choices=["human", "json"],
        default="human",
        help="human: a summary here, JSON logs in <data-dir>/logs/ (default); json: the "
        "nodes' JSON log lines here",
    )
    p.add_argument(
        "--tls",
        action="store_true",
        help="TLS on every endpoint, client certificates required; certificates are made in "
        "<data-dir>/tls on first use (ca.crt, a pair per node, cli.crt/cli.key for clients)",
    )
    p.set_defaults(func=up)


CLIENT = "cli"  # the client certificate `up --tls` makes


def _tls_dir(args: argparse.Namespace) -> Path:
    data_dir: Path = args.data_dir
    return data_dir / "tls"


def _make_certs(args: argparse.Namespace, ports: list[int]) -> None:
    from xstream import certs  # noqa: PLC0415 (the server extra's cryptography)

    out = _tls_dir(args)
    names = [_name("primary" if p == args.port else "replica", p) for p in ports]
    missing = [n for n in [*names, CLIENT] if not (out / f"{n}.crt").exists()]
    if missing:
        certs.make(out, [n for n in names if n in missing], [CLIENT] if CLIENT in missing else [])


def _tls_args(args: argparse.Namespace, role: str, port: int) -> list[str]:
    if not args.tls:
        return []
    d, name = _tls_dir(args), _name(role, port)
    return ["--tls-cert", str(d / f"{name}.crt"), "--tls-key", str(d / f"{name}.key"),
            "--tls-ca", str(d / "ca.crt")]  # fmt: skip


def _credentials(args: argparse.Namespace) -> grpc.ChannelCredentials | None:
    if not args.tls:
        return None
    d = _tls_dir(args)
    return grpc.ssl_channel_credentials(
        (d / "ca.crt").read_bytes(),
        (d / f"{CLIENT}.key").read_bytes(),
        (d / f"{CLIENT}.crt").read_bytes(),
    )


def _name(role: str, port: int) -> str:
    return role if role == "primary" else f"replica-{port}"


def _log_path(args: argparse.Namespace, role: str, port: int) -> Path:
    data_dir: Path = args.data_dir
    return data_dir / "logs" / f"{_name(role, port)}.log"


def _spawn(
    role: str, port: int, args: argparse.Namespace, extra: list[str]
) -> subprocess.Popen[bytes]:
    d = args.data_dir / _name(role, port)
    metrics = args.metrics_port + (port - args.port) if args.metrics_port else 0
    resp = args.resp_port + (port - args.port)
    cmd = [
        sys.executable, "-m", "xstream.cli", role,
        "--port", str(port), "--data-dir", str(d), "--fsync", args.fsync,
        "--metrics-port", str(metrics), "--resp-port", str(resp),
        *_tls_args(args, role, port), *extra,
    ]  # fmt: skip
    if args.log_format == "json":
        return subprocess.Popen(cmd)
    log = _log_path(args, role, port)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as f:
        return subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)


def _summary(args: argparse.Namespace, ports: list[int]) -> str:
    rows = [("node", "role", "address", "redis", "metrics", "data", "log")]
    for port in ports:
        role = "primary" if port == args.port else "replica"
        metrics = args.metrics_port + (port - args.port) if args.metrics_port else 0
        rows.append((
            _name(role, port), role, f"127.0.0.1:{port}",
            f"127.0.0.1:{args.resp_port + port - args.port}",
            f"{'https' if args.tls else 'http'}://127.0.0.1:{metrics}/metrics" if metrics else "-",
            str(args.data_dir / _name(role, port)),
            str(_log_path(args, role, port)) if args.log_format == "human" else "(here)",
        ))  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    table = ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
             for r in rows]  # fmt: skip
    primary = f"127.0.0.1:{args.port}"
    d = _tls_dir(args)
    tls = f" --tls-dir {d} --tls-name {CLIENT}" if args.tls else ""
    redis_tls = (
        f" --tls --cacert {d}/ca.crt --cert {d}/{CLIENT}.crt --key {d}/{CLIENT}.key"
        if args.tls
        else ""
    )
    return "\n".join([
        f"xstream up: 3 nodes running{' (TLS)' if args.tls else ''}; Ctrl-C stops them all",
        *table,
        f"try:  xstream cli --node {primary}{tls} XADD events '*' user_id 1 action click",
        f"      redis-cli{redis_tls} -p {args.resp_port} XADD events '*' user_id 1 action click",
        f"      xstream info --node 127.0.0.1:{ports[1]}{tls}",
    ])  # fmt: skip


class LogTail(threading.Thread):
    """Prints one human line per warning or error the nodes log (their JSON log files)."""

    def __init__(self, paths: dict[str, Path]) -> None:
        super().__init__(daemon=True)
        self.paths = paths
        self.offsets = {name: p.stat().st_size if p.exists() else 0 for name, p in paths.items()}
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(0.5):
            for name, path in self.paths.items():
                for line in self._new_lines(name, path):
                    print(_human(name, line), file=sys.stderr, flush=True)

    def _new_lines(self, name: str, path: Path) -> list[str]:
        try:
            with path.open("rb") as f:
                f.seek(self.offsets[name])
                data = f.read()
        except OSError:
            return []
        whole = data[: data.rfind(b"\n") + 1]
        self.offsets[name] += len(whole)
        out = []
        for raw in whole.decode(errors="replace").splitlines():
            try:
                event = json.loads(raw)
            except ValueError:
                continue  # not a log line (a traceback is in the file)
            if isinstance(event, dict) and event.get("level") in ("warning", "error", "critical"):
                out.append(event)
        return out  # type: ignore[return-value]


def _human(name: str, event: Any) -> str:
    skip = {"ts", "level", "node", "event"}
    fields = " ".join(f"{k}={v}" for k, v in event.items() if k not in skip)
    when = str(event.get("ts", ""))[11:19]
    return f"{when} {name} {event.get('level')}: {event.get('event')} {fields}"


def _wait_ready(
    address: str,
    deadline: float,
    proc: subprocess.Popen[bytes],
    credentials: grpc.ChannelCredentials | None = None,
) -> bool:
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with (
                grpc.secure_channel(address, credentials)
                if credentials is not None
                else grpc.insecure_channel(address)
            ) as ch:
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
    if args.tls:
        _make_certs(args, ports)
    creds = _credentials(args)
    procs = [_spawn("primary", args.port, args, ["--expect-replicas", "2"])]
    if _wait_ready(primary, time.monotonic() + 30, procs[0], creds):
        for port in ports[1:]:
            procs.append(_spawn("replica", port, args, ["--primary", primary]))
        for port, proc in zip(ports[1:], procs[1:], strict=True):
            _wait_ready(f"127.0.0.1:{port}", time.monotonic() + 30, proc, creds)
    tail = None
    if all(p.poll() is None for p in procs) and len(procs) == 3:
        print(_summary(args, ports), file=sys.stderr, flush=True)
        if args.log_format == "human":
            roles = ["primary", "replica", "replica"]
            paths = {
                _name(r, port): _log_path(args, r, port)
                for r, port in zip(roles, ports, strict=True)
            }
            tail = LogTail(paths)
            tail.start()
    while not stopping and len(procs) == 3 and all(p.poll() is None for p in procs):
        time.sleep(0.2)
    if not stopping:
        where = f" (see {args.data_dir / 'logs'})" if args.log_format == "human" else ""
        print(f"up: a node exited{where}; stopping the others", file=sys.stderr, flush=True)
    if tail is not None and stopping:  # what nodes log while asked to stop is no news
        tail.stopped.set()
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
    if tail is not None:
        tail.stopped.set()
    print("up: stopped", file=sys.stderr, flush=True)
    return code
