"""The `xstream` command line: run nodes and talk to them.

xstream primary --port P --data-dir D        a primary
xstream replica --port P --data-dir D --primary HOST:PORT
xstream up                                   a primary on 7700, replicas on 7701, 7702
xstream info --node HOST:PORT                role, offsets, lag
xstream promote --node HOST:PORT [--epoch N] make a replica the primary of a new epoch
xstream replicaof --node N --primary P [--epoch N]   re-point a replica (or demote a primary)
xstream cli --node HOST:PORT [WORDS ...]     one command (or a prompt, or lines from stdin)
xstream shell [WORDS ...]                    the same on an in-process engine, no server

Running a node (primary, replica, node, check-log) and `xstream certs` need the `server` extra
(`pip install "xstream[server]"`); its modules are imported when such a command runs, so
without it `xstream --help` and the client commands work and a node command says, in one
line, what to install.

A node command (NODE_COMMANDS as the first word) builds only the node commands' parsers: the
other commands' modules (the client, `up`, certs, the console, check-log, deploy-secrets, the
Spark pipeline) are imported only when one of them runs or `xstream --help` lists them, so a
starting node does not load them (tests/unit/test_startup_imports.py).
"""

from __future__ import annotations

import argparse
import os
import ssl
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import grpc

from xstream.clock import now_ms
from xstream.engine import Engine, EngineConfig, StreamError, snapshot
from xstream.engine.reply import Reply
from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc

if TYPE_CHECKING:
    from xstream.server.runner import NodeConfig

# The `server` extra's top-level modules (pyproject.toml): a node command missing one of them
# says to install the extra.
SERVER_EXTRA = ("grpc_health", "grpc_reflection", "prometheus_client", "cryptography")
# WARNING: the same as xstream.node.store.FSYNC_POLICIES (imported only when a node runs);
# tests/unit/test_protocol.py compares them.
FSYNC_POLICIES = ("always", "everysec", "no")
# WARNING: the same as xstream.server.loops.EVENT_LOOPS (tests/unit/test_protocol.py compares).
EVENT_LOOPS = ("auto", "uvloop", "asyncio")
# The commands that run a node: named first, they are the only parsers built (see the top).
NODE_COMMANDS = ("primary", "replica", "node")


def _load(engine: Engine, path: Path | None) -> None:
    if path is not None and path.exists():
        snapshot.restore(engine, path.read_bytes())


def _save(engine: Engine, path: Path | None) -> None:
    if path is not None:
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_bytes(snapshot.dump(engine))
        tmp.replace(path)


def shell(args: argparse.Namespace) -> int:
    from xstream import console  # noqa: PLC0415 (not a node's: see the top)

    engine = Engine(EngineConfig(args.node_max_bytes, args.node_max_entries))
    path = Path(args.snapshot) if args.snapshot else None
    _load(engine, path)

    def execute(argv: list[bytes]) -> Reply:
        try:
            return engine.execute(argv, now_ms()).reply
        except StreamError as e:
            raise console.ReplyError(e.line) from None

    try:
        return console.run(args.command, execute, "xstream shell> ")
    finally:
        _save(engine, path)


def _node_args(p: argparse.ArgumentParser, port: int) -> None:
    p.add_argument("--port", type=int, default=port, help=f"gRPC port (default {port}; 0 = any)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--data-dir", required=True, type=Path, help="snapshots and log segments")
    p.add_argument("--name", default="", help="node name in logs and INFO (default host:port)")
    p.add_argument("--fsync", choices=FSYNC_POLICIES, default="everysec", help="appendfsync")
    p.add_argument(
        "--snapshot-bytes",
        type=int,
        default=64 << 20,
        help="snapshot when the log segment passes this many bytes (default 64 MiB)",
    )
    p.add_argument(
        "--disk-reserve-bytes",
        type=int,
        default=64 << 20,
        help="refuse writes (MISCONF) while the data directory's file system has less free "
        "space than this (default 64 MiB)",
    )
    p.add_argument(
        "--max-reply-bytes",
        type=_reply_bytes,
        default=128 << 20,
        help="refuse a read whose reply would pass this many bytes (ERR ... read it in pages "
        "with COUNT); at most 200 MiB, below the gRPC message limit (default 128 MiB)",
    )
    p.add_argument(
        "--proto-max-bulk-len",
        type=_positive,
        default=512 << 20,
        help="refuse a command with an argument longer than this (Redis's proto-max-bulk-len; "
        "default 512 MiB)",
    )
    p.add_argument(
        "--resp-port",
        type=int,
        default=None,
        help="serve Redis's protocol (RESP2/RESP3) on this port too (0 = any; default: none)",
    )
    p.add_argument("--resp-host", default="", help="address of the RESP port (default --host)")
    p.add_argument(
        "--event-loop",
        choices=EVENT_LOOPS,
        default="auto",
        help="the asyncio event loop: uvloop (libuv; ~15%% less CPU per request), asyncio "
        "(the standard library's), or auto: uvloop when installed (default auto)",
    )
    p.add_argument(
        "--client-query-buffer-limit",
        type=_positive,
        default=1 << 30,
        help="close a RESP connection with more unparsed input than this (Redis's "
        "client-query-buffer-limit; default 1 GiB)",
    )
    p.add_argument(
        "--enable-debug-command",
        choices=["no", "yes"],
        default="no",
        help="allow DEBUG (RELOAD, LOADAOF, LOG, SLEEP), as Redis's enable-debug-command "
        "(default no)",
    )
    p.add_argument("--metrics-port", type=int, default=0, help="Prometheus /metrics (0 = off)")
    p.add_argument("--node-max-bytes", type=int, default=4096, help="stream-node-max-bytes")
    p.add_argument("--node-max-entries", type=int, default=100, help="stream-node-max-entries")
    p.add_argument("--log-level", choices=["debug", "info", "warning", "error"], default="info")
    _tls_node_args(p)
    _acl_node_args(p)


def _acl_node_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("users (Redis's ACLs)")
    g.add_argument(
        "--requirepass",
        default=os.environ.get("XSTREAM_REQUIREPASS", ""),
        help="password of the default user (clients AUTH with it); or XSTREAM_REQUIREPASS",
    )
    g.add_argument(
        "--aclfile",
        type=Path,
        help="users in Redis's ACL file format (`user reader on >secret ~* +@read`); "
        "ACL LOAD/SAVE read and write it",
    )
    g.add_argument("--primary-user", default="", help="user this node replicates as")
    g.add_argument(
        "--primary-password",
        default=os.environ.get("XSTREAM_PRIMARY_PASSWORD", ""),
        help="its password; or XSTREAM_PRIMARY_PASSWORD",
    )
    g.add_argument(
        "--primary-password-file",
        type=Path,
        help="read that password from this file's first line instead (a mounted secret)",
    )


def _tls_node_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "TLS",
        "TLS 1.2+ on every endpoint (gRPC, RESP, metrics), the replica's link to its primary "
        "and etcd (https:// URLs), reloaded on SIGHUP or when a file changes",
    )
    g.add_argument("--tls-cert", type=Path, help="the node's certificate chain (PEM)")
    g.add_argument("--tls-key", type=Path, help="its private key (PEM, unencrypted)")
    g.add_argument(
        "--tls-ca", type=Path, help="CA bundle (PEM) that verifies client and peer certificates"
    )
    g.add_argument(
        "--tls-dir",
        type=Path,
        help="a directory as `xstream certs` writes it: DIR/ca.crt, DIR/<name>.crt, "
        "DIR/<name>.key with name = --name (explicit --tls-* files win)",
    )
    g.add_argument(
        "--tls-client-auth",
        choices=("required", "optional", "no"),
        default="required",
        help="client certificates (clients and peer nodes): required (default, as Redis's "
        "tls-auth-clients), optional (verified when sent; the gRPC port does not ask), no",
    )
    g.add_argument(
        "--insecure",
        action="store_true",
        help="allow listening on a non-loopback address without TLS (refused otherwise: "
        "anyone who reaches the port could read, write and reconfigure the node)",
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a number > 0")
    return value


def _whole(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is not a number >= 0")
    return value


def _reply_bytes(text: str) -> int:
    value = _positive(text)
    if value > 200 << 20:
        raise argparse.ArgumentTypeError(f"{text} is above 200 MiB (209715200)")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a number of seconds >= 0")
    return value


def _forget_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--replica-forget-after",
        type=_seconds,
        default=60.0,
        help="seconds a departed replica still counts in R for acks=quorum|all (default 60)",
    )


def _primary_args(pp: argparse.ArgumentParser) -> None:
    """Options of a node that takes writes (a primary, or a node that may be elected)."""
    pp.add_argument(
        "--backlog-bytes",
        type=_positive,
        default=1 << 20,
        help="the latest replication stream kept in memory for replicas (default 1 MiB, "
        "Redis's repl-backlog-size); older positions are read from the log on disk, so a "
        "replica resyncs partially from anywhere after the last snapshot",
    )
    pp.add_argument(
        "--acks-timeout-ms",
        type=int,
        default=5000,
        help="default timeout of writes asking acks=quorum|all",
    )
    pp.add_argument(
        "--expect-replicas",
        type=int,
        default=0,
        help="replicas in the cluster, for acks=quorum|all before they attach",
    )
    _forget_arg(pp)
    pp.add_argument(
        "--min-replicas-to-write",
        type=int,
        default=0,
        help="refuse writes unless this many replicas acked recently (0 = off)",
    )
    pp.add_argument(
        "--min-replicas-max-lag",
        type=float,
        default=10.0,
        help="seconds since a replica's last ack for it to count (default 10)",
    )
    pp.add_argument(
        "--repl-flow-lag-ms",
        type=_whole,
        default=25,  # WARNING: xstream.node.pacing.LAG_MS (not imported by the CLI)
        help="flow control: a write waits while a replica has not acked a record older than "
        "this (default 25; 0 = off; CONFIG SET repl-flow-lag-ms)",
    )
    pp.add_argument(
        "--repl-flow-timeout-ms",
        type=_positive,
        default=500,
        help="a replica whose acks stall this long stops holding writes until it is within "
        "the window again (default 500; CONFIG SET repl-flow-timeout-ms)",
    )


def _node_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    np = sub.add_parser(
        "node",
        help="run a node under automatic failover (etcd)",
        description="Run a node whose role comes from an election on etcd: it starts as a "
        "replica of nobody, the most up-to-date node is promoted (its epoch is the etcd "
        "leader key's revision), the others follow it, and a primary stops acknowledging "
        "writes before its lease can expire. Production needs etcd 3.5+.",
    )
    _node_args(np, 7700)
    _primary_args(np)
    np.add_argument(
        "--etcd",
        required=True,
        help="etcd client URLs, comma-separated (e.g. http://etcd:2379)",
    )
    np.add_argument("--etcd-prefix", default="/xstream", help="key prefix of this cluster")
    np.add_argument(
        "--lease-ttl", type=int, default=2, help="etcd lease TTL in whole seconds (default 2)"
    )
    np.add_argument(
        "--advertise",
        default="",
        help="HOST:PORT that peers and clients dial (default --host:--port; set it when "
        "binding 0.0.0.0)",
    )
    np.set_defaults(func=run_node)


def _config(args: argparse.Namespace, role: str) -> NodeConfig:
    from xstream.server.runner import NodeConfig  # noqa: PLC0415 (the server extra)

    cfg = NodeConfig(role=role)
    for key in vars(cfg):
        if hasattr(args, key):
            setattr(cfg, key, getattr(args, key))
    return cfg


def _serve(cfg: NodeConfig) -> int:
    from xstream.node.damage import CorruptLog  # noqa: PLC0415 (the server extra)
    from xstream.node.tls import TlsConfigError  # noqa: PLC0415
    from xstream.server.loops import EventLoopError, run  # noqa: PLC0415
    from xstream.server.runner import serve  # noqa: PLC0415

    try:
        run(serve(cfg), cfg.event_loop)
    except CorruptLog as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    except (TlsConfigError, ssl.SSLError, EventLoopError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def run_primary(args: argparse.Namespace) -> int:
    return _serve(_config(args, "primary"))


def run_replica(args: argparse.Namespace) -> int:
    return _serve(_config(args, "replica"))


def run_node(args: argparse.Namespace) -> int:
    cfg = _config(args, "node")
    cfg.etcd = tuple(u.strip() for u in args.etcd.split(",") if u.strip())
    if not cfg.etcd:
        print("error: --etcd needs at least one URL", file=sys.stderr)
        return 2
    if cfg.lease_ttl < 1:
        print("error: --lease-ttl must be at least 1 second", file=sys.stderr)
        return 2
    if not cfg.name and cfg.host in ("0.0.0.0", "::") and not cfg.advertise:
        print("error: binding a wildcard address needs --advertise or --name", file=sys.stderr)
        return 2
    return _serve(cfg)


def _admin(args: argparse.Namespace, call: str, request: object) -> object | None:
    from xstream import tools  # noqa: PLC0415 (not a node's: see the top)

    node = args.node
    ch = tools.open_channel(node, args)
    if ch is None:
        return None
    with ch:
        try:
            reply: object = getattr(pb_grpc.AdminStub(ch), call)(request, timeout=30)
            return reply
        except grpc.RpcError as e:
            print(f"error: {node}: {e.code().name}: {e.details()}", file=sys.stderr)
            return None


def promote(args: argparse.Namespace) -> int:
    reply = _admin(args, "Promote", pb.PromoteRequest(epoch=args.epoch))
    if not isinstance(reply, pb.PromoteReply):
        return 1
    print(f"primary: {args.node}\nepoch: {reply.epoch}\nreplid: {reply.replid}")
    print(f"offset: {reply.offset}")
    return 0


def replicaof(args: argparse.Namespace) -> int:
    request = pb.ReplicaOfRequest(primary=args.primary, epoch=args.epoch)
    reply = _admin(args, "ReplicaOf", request)
    if not isinstance(reply, pb.ReplicaOfReply):
        return 1
    print(f"role: {reply.role}\nprimary: {args.primary}\noffset: {reply.offset}")
    print(f"epoch: {reply.epoch}")
    return 0


def _role_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from xstream import tools  # noqa: PLC0415 (not a node's: see the top)

    pr = sub.add_parser(
        "promote",
        help="make a node the primary of a new epoch",
        description="Promote a replica (or a deposed primary) to primary of a new epoch; its "
        "siblings are then re-pointed with `xstream replicaof` and continue partially.",
    )
    pr.add_argument("--node", required=True, help="HOST:PORT of the node to promote")
    pr.add_argument(
        "--epoch", type=int, default=0, help="the new epoch (default: highest seen + 1)"
    )
    tools.add_tls_args(pr)
    tools.add_auth_args(pr)
    pr.set_defaults(func=promote)
    ro = sub.add_parser(
        "replicaof",
        help="make a node a replica of a primary",
        description="Re-point a replica at another primary, or demote a primary to a replica "
        "(it cuts back any log tail the new primary does not have).",
    )
    ro.add_argument("--node", required=True, help="HOST:PORT of the node to re-point")
    ro.add_argument("--primary", required=True, help="HOST:PORT of the primary to follow")
    ro.add_argument(
        "--epoch", type=int, default=0, help="that primary's epoch, if known (refuse older ones)"
    )
    tools.add_tls_args(ro)
    tools.add_auth_args(ro)
    ro.set_defaults(func=replicaof)


def _other_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The commands that do not run a node, in `xstream --help`'s order after them."""
    from xstream import certs, checklog, deploysecrets, tools, up  # noqa: PLC0415 (see the top)
    from xstream.pipeline import subcommand as pipeline_subcommand  # noqa: PLC0415

    _role_parsers(sub)
    up.add_parser(sub)
    tools.add_parsers(sub)
    checklog.add_parser(sub)
    certs.add_parser(sub)
    deploysecrets.add_parser(sub)
    pipeline_subcommand.add_parser(sub)
    sh = sub.add_parser(
        "shell",
        help="run stream commands against an in-process engine",
        description="Run stream commands against an in-process engine (no server), "
        "redis-cli style: one command given as words; with none, an interactive prompt on a "
        "terminal (history in ~/.xstream_history; quit, exit or Ctrl-D leave), otherwise "
        "one command per line of stdin. Exit status 1 if a command failed.",
    )
    sh.add_argument("command", nargs="*", help="one command as words (else see above)")
    sh.add_argument("--snapshot", help="load the keyspace from / save it to this file")
    sh.add_argument("--node-max-bytes", type=int, default=4096)
    sh.add_argument("--node-max-entries", type=int, default=100)
    sh.set_defaults(func=shell)


def build_parser(every_command: bool = True) -> argparse.ArgumentParser:
    """The command line's parser: with every command, or only NODE_COMMANDS' (what `main`
    builds when one of them is the first word: the same parse, fewer modules loaded)."""
    parser = argparse.ArgumentParser(
        prog="xstream",
        description="xstream: a replicated Redis Streams service.",
        epilog="Run `xstream COMMAND --help` for a command's options.",
    )
    sub = parser.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    pp = sub.add_parser("primary", help="run a primary", description="Run a primary node.")
    _node_args(pp, 7700)
    _primary_args(pp)
    pp.set_defaults(func=run_primary)
    rp = sub.add_parser("replica", help="run a replica", description="Run a replica node.")
    _node_args(rp, 7701)
    rp.add_argument("--primary", required=True, help="the primary's HOST:PORT")
    rp.add_argument(
        "--backlog-bytes",
        type=_positive,
        default=1 << 20,
        help="the latest records kept in memory for its replicas once promoted (default "
        "1 MiB; older ones are read from its log on disk)",
    )
    _forget_arg(rp)
    rp.set_defaults(func=run_replica)
    _node_parser(sub)
    if every_command:
        _other_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    only_nodes = bool(words) and words[0] in NODE_COMMANDS
    args = build_parser(every_command=not only_nodes).parse_args(words)
    try:
        return int(args.func(args))
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in SERVER_EXTRA:
            raise
        print(
            f"error: `xstream {args.cmd}` needs the server extra: pip install 'xstream[server]' "
            f"(module {e.name} is missing)",
            file=sys.stderr,
        )
        return 2


if __name__ == "__main__":
    sys.exit(main())
