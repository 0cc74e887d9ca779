"""The `xstream` command line.

`xstream shell` runs stream commands against an in-process engine, redis-cli style, optionally
persisting the keyspace to a snapshot file between runs. The replicated service (primary,
replicas, `xstream up`) builds on the same engine.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from xstream.engine import Engine, EngineConfig, StreamError, snapshot
from xstream.engine.reply import NULL_ARRAY, Reply, ReplyMap, Status


def format_reply(reply: Reply, indent: int = 0) -> str:
    """A reply as redis-cli prints it."""
    pad = " " * indent
    if isinstance(reply, Status):
        return str(reply)
    if isinstance(reply, int):
        return f"(integer) {reply}"
    if isinstance(reply, bytes):
        return '"' + reply.decode("utf-8", "backslashreplace") + '"'
    if reply is None or reply is NULL_ARRAY:
        return "(nil)"
    items: list[Reply] = []
    if isinstance(reply, ReplyMap):
        for k, v in reply:
            items += [k, v]
    else:
        assert isinstance(reply, list)
        items = reply
    if not items:
        return "(empty array)"
    width = len(str(len(items)))
    lines = []
    for i, item in enumerate(items, 1):
        head = f"{i:>{width}}) "
        body = format_reply(item, indent + len(head))
        lines.append((pad if i > 1 else "") + head + body)
    return "\n".join(lines)


def _load(engine: Engine, path: Path | None) -> None:
    if path is not None and path.exists():
        snapshot.restore(engine, path.read_bytes())


def _save(engine: Engine, path: Path | None) -> None:
    if path is not None:
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_bytes(snapshot.dump(engine))
        tmp.replace(path)


def shell(args: argparse.Namespace) -> int:
    engine = Engine(EngineConfig(args.node_max_bytes, args.node_max_entries))
    path = Path(args.snapshot) if args.snapshot else None
    _load(engine, path)
    lines = [shlex.join(args.command)] if args.command else sys.stdin
    status = 0
    for line in lines:
        words = shlex.split(line)
        if not words:
            continue
        argv = [w.encode() for w in words]
        try:
            print(format_reply(engine.execute(argv, int(time.time() * 1000)).reply))
        except StreamError as e:
            print(f"(error) {e.line}")
            status = 1
    _save(engine, path)
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="xstream", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sh = sub.add_parser("shell", help="run stream commands against a local engine")
    sh.add_argument("command", nargs="*", help="one command as words; else read lines from stdin")
    sh.add_argument("--snapshot", help="load the keyspace from / save it to this file")
    sh.add_argument("--node-max-bytes", type=int, default=4096)
    sh.add_argument("--node-max-entries", type=int, default=100)
    sh.set_defaults(func=shell)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
