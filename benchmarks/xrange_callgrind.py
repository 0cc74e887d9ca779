"""The server's XRANGE read path in-process, for callgrind: instructions per entry returned.

Run by hand, never by the test suite:

    valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out \\
        .venv/bin/python benchmarks/xrange_callgrind.py --edge resp --pages 4
    .venv/bin/python benchmarks/xrange_callgrind.py --edge grpc --pages 4 --check

What one page costs the server, without sockets or an event loop's I/O: XRANGE <key> <start>
+ COUNT 10000 as the node floor reads it (slices.read: slices of 500 entries from the engine,
written in the edge's wire form: EntryForm "resp" or "protobuf", joined), then framed as the
RESP port (longreply.encode_long) or the gRPC edge's Execute (chunked.reply) does. The
stream is issue15.py's (sides.fill: user_id <i> action click amount 42), `--entries` of them
at 1,000 IDs per millisecond.

Per entry figures come from two runs: callgrind's total for `--pages 2k` minus that for
`--pages k` (loading the stream and starting Python cancel out), over k * PAGE entries:

    cost(2k pages) - cost(k pages)            pages read round-robin over the stream
    ------------------------------            (page p starts at entry (p * PAGE) % entries)
         k * PAGE entries

`--check` compares each page's bytes with codec.encode / chunked's message form of the same
entries read as lists (a harness that measured a wrong reply would measure nothing).
"""

from __future__ import annotations

import argparse
import asyncio
import time

from xstream import protocol
from xstream.engine import Engine
from xstream.engine.reply import EncodedRun, EntryForm, Reply
from xstream.node import slices
from xstream.server import chunked
from xstream.server.resp import codec, longreply
from xstream.v1 import xstream_pb2 as pb

PAGE = 10_000  # issue15.py's XRANGE COUNT
KEY = b"s"
BASE_MS = 1_764_000_000_000  # a present-day millisecond clock


def entry_id(i: int) -> bytes:
    """Entry i's ID: 1,000 entries per millisecond."""
    return b"%d-%d" % (BASE_MS + i // 1000, i % 1000)


def load(engine: Engine, entries: int) -> None:
    for i in range(entries):
        argv = [b"XADD", KEY, entry_id(i), b"user_id", b"%d" % i]
        engine.execute([*argv, b"action", b"click", b"amount", b"42"], BASE_MS)


def page_argv(p: int, entries: int) -> list[bytes]:
    return [b"XRANGE", KEY, entry_id(p * PAGE % entries), b"+", b"COUNT", b"%d" % PAGE]


async def read_page(engine: Engine, argv: list[bytes], edge: str) -> bytes:
    """One page as the edge answers it: the node floor's sliced read, then its encoding."""

    form: EntryForm = "resp" if edge == "resp" else "protobuf"

    def run(a: list[bytes]) -> Reply:
        return engine.execute(a, 0, entries=form).reply

    reply = await slices.read(engine, 0, run, argv, slices.Limits())
    if edge == "resp":
        return b"".join(await longreply.encode_long(reply, 2))
    return await chunked.reply(reply, 0)


def expected(engine: Engine, argv: list[bytes], edge: str) -> bytes:
    reply: Reply = engine.execute(argv, 0).reply
    assert isinstance(reply, list) and not isinstance(reply, EncodedRun)
    if edge == "resp":
        return codec.encode(reply, 2)
    return bytes(pb.Reply(value=protocol.to_value(reply), offset=0).SerializeToString())


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--edge", choices=("resp", "grpc"), default="resp")
    ap.add_argument("--entries", type=int, default=20_000)
    ap.add_argument("--pages", type=int, default=4)
    ap.add_argument("--check", action="store_true", help="compare every page with the list form")
    args = ap.parse_args()
    engine = Engine()
    load(engine, args.entries)
    t = time.process_time()
    for p in range(args.pages):
        argv = page_argv(p, args.entries)
        got = await read_page(engine, argv, args.edge)
        if args.check:
            want = expected(engine, argv, args.edge)
            if args.edge == "grpc":  # a chunked reply parses to the message built whole
                assert pb.Reply.FromString(got) == pb.Reply.FromString(want), p
            else:
                assert got == want, p
    cpu = time.process_time() - t
    per_entry = cpu / (args.pages * PAGE) * 1e6
    print(f"{args.edge}: {args.pages} pages, {per_entry:.3f} us CPU per entry")


if __name__ == "__main__":
    asyncio.run(main())
