"""`xstream info` and `xstream cli`: talk to a running node over gRPC."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import grpc

from xstream.server import wire
from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc


def add_parsers(sub: Any) -> None:
    ip = sub.add_parser(
        "info",
        help="show a node's role, offsets and lag",
        description="Show a node's role, replication offsets, replicas and lag.",
    )
    ip.add_argument("--node", default="127.0.0.1:7700", help="HOST:PORT (default 127.0.0.1:7700)")
    ip.set_defaults(func=info)
    cp = sub.add_parser(
        "cli",
        help="run a command on a node",
        description="Run one command given as words (or one per line from stdin), redis-cli style.",
    )
    cp.add_argument("--node", default="127.0.0.1:7700", help="HOST:PORT (default 127.0.0.1:7700)")
    cp.add_argument(
        "--acks",
        choices=["leader", "quorum", "all"],
        default="leader",
        help="write concern for writes (default leader)",
    )
    cp.add_argument("--timeout", type=float, default=30.0, help="seconds per command (default 30)")
    cp.add_argument("command", nargs=argparse.REMAINDER, help="e.g. XADD s '*' f v")
    cp.set_defaults(func=cli)


def info(args: argparse.Namespace) -> int:
    with grpc.insecure_channel(args.node) as channel:
        try:
            reply = pb_grpc.AdminStub(channel).Info(pb.InfoRequest(), timeout=5)
        except grpc.RpcError as e:
            print(f"error: {args.node}: {e.code().name}: {e.details()}", file=sys.stderr)
            return 1
    print(format_info(reply))
    return 0


def format_info(r: pb.InfoReply) -> str:
    lines = [f"role: {r.role}", f"name: {r.name}", f"replid: {r.replid}", f"offset: {r.offset}"]
    history = " ".join(f"{e.epoch}@{e.start}" for e in r.history)
    lines += [f"epoch: {r.epoch}", f"leader_epoch: {r.leader_epoch}", f"epoch_history: {history}"]
    if r.role == "replica":
        lines += [
            f"primary: {r.primary}",
            f"link: {r.link}",
            f"lag_offset: {r.lag_offset}",
            f"lag_ms: {r.lag_ms}",
            f"apply_lag_p50_ms: {r.apply_lag_p50_ms}",
            f"apply_lag_p99_ms: {r.apply_lag_p99_ms}",
        ]
    else:
        lines.append(f"deposed: {str(r.deposed).lower()}")
        lines.append(f"replid2: {r.replid2} (to offset {r.replid2_end})")
        lines.append(f"backlog_start: {r.backlog_start}")
        lines.append(f"replicas: {len(r.replicas)}")
        for i, rep in enumerate(r.replicas):
            lines.append(
                f"replica{i}: name={rep.name} address={rep.address} state={rep.state} "
                f"ack_offset={rep.ack_offset} lag_offset={rep.lag_offset} lag_ms={rep.lag_ms}"
            )
    lines += [
        f"keys: {r.keys}",
        f"full_syncs: {r.full_syncs}",
        f"partial_syncs: {r.partial_syncs}",
        f"snapshot_offset: {r.snapshot_offset}",
        f"fsync: {r.fsync}",
    ]
    return "\n".join(lines)


_ACKS = {"leader": pb.ACKS_LEADER, "quorum": pb.ACKS_QUORUM, "all": pb.ACKS_ALL}


def cli(args: argparse.Namespace) -> int:
    from xstream.cli import command_lines, format_reply, safe_stdout, words_of  # noqa: PLC0415 (cli imports this module)

    safe_stdout()
    concern = pb.WriteConcern(acks=_ACKS[args.acks])
    status = 0
    with grpc.insecure_channel(args.node) as channel:
        stub = pb_grpc.StreamsStub(channel)
        for line in command_lines(args.command):
            argv = words_of(line)
            if not argv:
                continue
            cmd = pb.Command(argv=argv, concern=concern)
            try:
                reply = stub.Execute(cmd, timeout=args.timeout)
            except grpc.RpcError as e:
                if dict(e.trailing_metadata() or ()).get(wire.ERROR_MARK[0]):
                    print(f"(error) {e.details()}")
                else:
                    print(f"error: {args.node}: {e.code().name}: {e.details()}", file=sys.stderr)
                status = 1
                continue
            print(format_reply(wire.from_value(reply.value)))
    return status
