"""`xstream info` and `xstream cli`: talk to a running node over gRPC.

`info` prints what a node says of itself (Admin.Info) in plain words, only the fields that
mean something for its role; `cli` runs commands through Streams.Execute, read and printed
the redis-cli way by `console` (one command, a prompt, or lines on stdin).

`add_tls_args` / `channel` are the TLS options every command that dials a node shares
(`--tls-dir DIR [--tls-name NAME]`, or `--tls-ca/--tls-cert/--tls-key`: client/tls.py), and
`add_auth_args` its ACL user: `--user` (else $XSTREAM_USER), the password from $XSTREAM_PASSWORD,
`--askpass` (read from the terminal, not echoed) or `--password` (which warns on stderr, as
redis-cli's -a does: other users of the machine may see a command line). The password is
never printed; every call on the channel carries the user as metadata (server/grpcauth.py).
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

from xstream import console
from xstream.client.tls import from_options
from xstream.engine.reply import Reply
from xstream.protocol import ERROR_MARK, PASSWORD_KEY, USER_KEY, from_value, write_concern
from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc

USER_ENV = "XSTREAM_USER"
PASSWORD_ENV = "XSTREAM_PASSWORD"


def add_tls_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("TLS", "for nodes started with --tls-*; all off by default")
    g.add_argument("--tls-ca", type=Path, help="CA bundle (PEM) that verifies the node")
    g.add_argument("--tls-cert", type=Path, help="client certificate (PEM), with --tls-key")
    g.add_argument("--tls-key", type=Path, help="its private key (PEM)")
    g.add_argument(
        "--tls-dir",
        type=Path,
        help="a directory from `xstream certs`: DIR/ca.crt, and DIR/<name>.crt/.key with "
        "--tls-name",
    )
    g.add_argument(
        "--tls-name", default="", help="the client certificate's name in --tls-dir (e.g. app)"
    )


def add_auth_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "users", "for nodes with --requirepass or --aclfile; without them, the default user"
    )
    g.add_argument("--user", help=f"the ACL user to run as (default ${USER_ENV}, else default)")
    g.add_argument(
        "--password",
        help=f"its password: visible to other users of this machine, prefer ${PASSWORD_ENV} "
        "or --askpass",
    )
    g.add_argument(
        "--askpass", action="store_true", help="read the password from the terminal, unechoed"
    )


def credentials(args: argparse.Namespace) -> tuple[tuple[str, str], ...]:
    """The call metadata naming the command's ACL user (none: the node's default user)."""
    user = args.user if args.user is not None else os.environ.get(USER_ENV, "")
    if args.askpass:
        password = getpass.getpass("Password: ")
    elif args.password is not None:
        print(
            "Warning: a password given with --password can be seen by other users of this "
            f"machine; use ${PASSWORD_ENV} or --askpass instead.",
            file=sys.stderr,
        )
        password = args.password
    else:
        password = os.environ.get(PASSWORD_ENV, "")
    if not (user or password):
        return ()
    return ((USER_KEY, user or "default"), (PASSWORD_KEY, password))


class _Metadata(grpc.UnaryUnaryClientInterceptor):
    """Every unary call on the channel carries `metadata` (the ACL user)."""

    def __init__(self, metadata: tuple[tuple[str, str], ...]) -> None:
        self.metadata = metadata

    def intercept_unary_unary(
        self, continuation: Callable[[Any, Any], Any], details: Any, request: Any
    ) -> Any:
        details = details._replace(metadata=(*(details.metadata or ()), *self.metadata))
        return continuation(details, request)


def channel(node: str, args: argparse.Namespace) -> grpc.Channel:
    """A channel to `node`, over TLS when the TLS options say so, its calls as the user the
    auth options name. Raises ValueError or OSError when they name files that are
    incomplete or unreadable."""
    tls = from_options(args.tls_ca, args.tls_cert, args.tls_key, args.tls_dir, args.tls_name)
    if tls is None:
        ch = grpc.insecure_channel(node)
    else:
        ch = grpc.secure_channel(node, tls.credentials())
    auth = credentials(args)
    return grpc.intercept_channel(ch, _Metadata(auth)) if auth else ch


def open_channel(node: str, args: argparse.Namespace) -> grpc.Channel | None:
    """`channel`, or None after printing why not."""
    try:
        return channel(node, args)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return None


def add_parsers(sub: Any) -> None:
    ip = sub.add_parser(
        "info",
        help="show a node's role, offsets and lag",
        description="Show a node's role, replication offsets, replicas and lag.",
    )
    ip.add_argument("--node", default="127.0.0.1:7700", help="HOST:PORT (default 127.0.0.1:7700)")
    add_tls_args(ip)
    add_auth_args(ip)
    ip.set_defaults(func=info)
    cp = sub.add_parser(
        "cli",
        help="run a command on a node",
        description="Run commands on a node, redis-cli style: one command given as words; "
        "with none, an interactive prompt on a terminal (`HOST:PORT> `, history in "
        "~/.xstream_history; quit, exit or Ctrl-D leave), otherwise one command per line of "
        "stdin (e.g. `xstream cli < commands.txt`). Words are split as a shell splits them. "
        "An error reply prints as `(error) ...` on stdout; exit status 1 if a command failed.",
    )
    cp.add_argument("--node", default="127.0.0.1:7700", help="HOST:PORT (default 127.0.0.1:7700)")
    cp.add_argument(
        "--acks",
        choices=["leader", "quorum", "all"],
        default="leader",
        help="write concern for writes (default leader)",
    )
    cp.add_argument("--timeout", type=float, default=30.0, help="seconds per command (default 30)")
    add_tls_args(cp)
    add_auth_args(cp)
    cp.add_argument("command", nargs=argparse.REMAINDER, help="e.g. XADD s '*' f v")
    cp.set_defaults(func=cli)


def info(args: argparse.Namespace) -> int:
    ch = open_channel(args.node, args)
    if ch is None:
        return 2
    with ch:
        try:
            reply = pb_grpc.AdminStub(ch).Info(pb.InfoRequest(), timeout=5)
        except grpc.RpcError as e:
            print(f"error: {args.node}: {e.code().name}: {e.details()}", file=sys.stderr)
            return 1
    print(format_info(reply))
    return 0


def format_info(r: pb.InfoReply) -> str:
    """What a node says about itself, in plain words; a field is shown only when it means
    something for this node (no replid2 that is empty, no "led epoch" of a node that never
    led one). One `label: value` a line, the values aligned."""
    rows = [("role", r.role)] + (_replica_rows(r) if r.role == "replica" else _primary_rows(r))
    rows += [
        ("keys", str(r.keys)),
        ("last snapshot at", f"offset {r.snapshot_offset}" if r.snapshot_offset else "none yet"),
        ("fsync", f"{r.fsync} ({_FSYNC.get(r.fsync, r.fsync)})"),
    ]
    width = max(len(label) for label, _ in rows) + 2
    return "\n".join(f"{label + ':':<{width}}{value}".rstrip() for label, value in rows)


_FSYNC = {
    "always": "before each write is answered",
    "everysec": "once a second",
    "no": "left to the OS",
}


def _history(r: pb.InfoReply) -> str:
    return ", ".join(f"epoch {e.epoch} from offset {e.start}" for e in r.history) or "none"


def _common_rows(r: pb.InfoReply) -> list[tuple[str, str]]:
    return [
        ("name", r.name),
        ("epoch", str(r.epoch)),
        ("epoch history", _history(r)),
        ("replication id", r.replid),
    ]


def _primary_rows(r: pb.InfoReply) -> list[tuple[str, str]]:
    rows = _common_rows(r)
    if r.deposed:
        rows.insert(0, ("deposed", f"yes: epoch {r.epoch} is newer than its own "
                                   f"({r.leader_epoch}); it refuses writes"))  # fmt: skip
    rows.append(("offset", f"{r.offset} (bytes in the replication stream)"))
    if r.replid2 and r.replid2_end:
        rows.append(("continues", f"replication id {r.replid2} up to offset {r.replid2_end}"))
    rows.append(("backlog from", f"offset {r.backlog_start}"))
    rows.append(("syncs served", f"{r.full_syncs} full, {r.partial_syncs} partial"))
    rows.append(("replicas", str(len(r.replicas))))
    for rep in r.replicas:
        rows.append((f"  {rep.address}", _replica_line(rep)))
    return rows


def _replica_line(rep: pb.ReplicaInfo) -> str:
    name = f" (name {rep.name})" if rep.name and rep.name != rep.address else ""
    return (
        f"{rep.state}, acked offset {rep.ack_offset}, {rep.lag_offset} bytes and "
        f"{rep.lag_ms} ms behind{name}"
    )


def _replica_rows(r: pb.InfoReply) -> list[tuple[str, str]]:
    rows = [("primary", r.primary), ("link", r.link), *_common_rows(r)]
    if r.leader_epoch:
        rows.append(("was primary in", f"epoch {r.leader_epoch}"))
    rows += [
        ("offset", f"{r.offset} (bytes applied)"),
        ("behind primary", f"{r.lag_offset} bytes, {r.lag_ms} ms"),
        ("apply lag", f"p50 {r.apply_lag_p50_ms:.1f} ms, p99 {r.apply_lag_p99_ms:.1f} ms"),
        ("syncs done", f"{r.full_syncs} full, {r.partial_syncs} partial"),
    ]
    return rows


def cli(args: argparse.Namespace) -> int:
    concern = write_concern(args.acks)
    ch = open_channel(args.node, args)
    if ch is None:
        return 2
    with ch:
        stub = pb_grpc.StreamsStub(ch)

        def execute(argv: list[bytes]) -> Reply:
            try:
                reply = stub.Execute(pb.Command(argv=argv, concern=concern), timeout=args.timeout)
            except grpc.RpcError as e:
                trailer = {m.key: m.value for m in e.trailing_metadata() or ()}
                if trailer.get(ERROR_MARK[0]):
                    raise console.ReplyError(e.details() or "") from None
                raise console.UnreachableError(
                    f"{args.node}: {e.code().name}: {e.details()}"
                ) from None
            return from_value(reply.value)

        return console.run(args.command, execute, f"{args.node}> ")
