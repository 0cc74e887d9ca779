"""XINFO STREAM [FULL [COUNT n]] and XINFO HELP, with Redis 8.8's fields in Redis's order.

Maps are ReplyMaps (RESP3 maps, flat arrays in RESP2). radix-tree-keys/-nodes come from the
real rax, so they match Redis whenever node layout does.
"""

from __future__ import annotations

from typing import Final

from .. import idmp
from ..context import Ctx
from ..errors import NO_SUCH_KEY, StreamError, bad_subcommand_args
from ..groups import INVALID_ENTRIES_READ, ConsumerGroup
from ..ids import MAX_ID, MIN_ID
from ..lag import lag
from ..reply import Reply, ReplyMap, Status
from ..stream import Stream
from .args import parse_ll, word

HELP_LINES: Final = (
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
)


def help_reply(container: bytes, lines: tuple[str, ...]) -> Reply:
    """addReplyHelp: a header, the lines, and the HELP footer, all simple strings."""
    name = container.decode("utf-8", "replace").upper()
    head = f"{name} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    # "Print" since Redis 7.2; 7.0.15 still says "Prints this help."
    return [Status(x) for x in (head, *lines, "HELP", "    Print this help.")]


def xinfo_help(ctx: Ctx) -> Reply:
    return help_reply(ctx.argv[0], HELP_LINES)


def xinfo_stream(ctx: Ctx) -> Reply:
    argv = ctx.argv
    s = ctx.keyspace.stream(argv[2])  # looked up before the options, as xinfoCommand does
    if s is None:
        raise StreamError(NO_SUCH_KEY)
    full = False
    count = 10
    if len(argv) > 3:
        if word(argv[3]) != b"full":
            raise bad_subcommand_args("XINFO", argv[1])
        full = True
        if len(argv) > 4:
            if len(argv) != 6 or word(argv[4]) != b"count":
                raise bad_subcommand_args("XINFO", argv[1])
            count = parse_ll(argv[5])
            if count < 0:
                count = 10
    info = _summary(s, ctx.now_ms)
    if full:
        info.append((b"entries", s.range(MIN_ID, MAX_ID, count)))  # type: ignore[arg-type]
        info.append((b"groups", [_group_full(s, s.cgroups[n], count) for n in sorted(s.cgroups)]))
        return info
    info.append((b"groups", len(s.cgroups)))
    first = s.range(MIN_ID, MAX_ID, 1)
    last = s.range(MIN_ID, MAX_ID, 1, rev=True)
    info.append((b"first-entry", first[0] if first else None))  # type: ignore[arg-type]
    info.append((b"last-entry", last[0] if last else None))  # type: ignore[arg-type]
    return info


def _summary(s: Stream, now_ms: int) -> ReplyMap:
    pids, iids = idmp.live_counts(s, now_ms)
    return ReplyMap(
        [
            (b"length", s.length),
            (b"radix-tree-keys", len(s.rax)),
            (b"radix-tree-nodes", s.rax.numnodes),
            (b"last-generated-id", s.last_id.encode()),
            (b"max-deleted-entry-id", s.max_deleted_entry_id.encode()),
            (b"entries-added", s.entries_added),
            (b"recorded-first-entry-id", s.first_id.encode()),
            (b"idmp-duration", s.idmp_duration),
            (b"idmp-maxsize", s.idmp_maxsize),
            (b"pids-tracked", pids),
            (b"iids-tracked", iids),
            (b"iids-added", s.iids_added),
            (b"iids-duplicates", s.iids_duplicates),
        ]
    )


def _group_full(s: Stream, g: ConsumerGroup, count: int) -> ReplyMap:
    pending: list[Reply] = []
    for entry_id, nack in g.pel.items():
        if count and len(pending) >= count:
            break
        owner = nack.consumer.name if nack.consumer is not None else b""
        pending.append([entry_id.encode(), owner, nack.delivery_time, nack.delivery_count])
    consumers: list[Reply] = []
    for name in sorted(g.consumers):
        c = g.consumers[name]
        own: list[Reply] = []
        for entry_id, nack in c.pel.items():
            if count and len(own) >= count:
                break
            own.append([entry_id.encode(), nack.delivery_time, nack.delivery_count])
        consumers.append(
            ReplyMap(
                [
                    (b"name", name),
                    (b"seen-time", c.seen_time),
                    (b"active-time", c.active_time),
                    (b"pel-count", len(c.pel)),
                    (b"pending", own),
                ]
            )
        )
    entries_read = g.entries_read if g.entries_read != INVALID_ENTRIES_READ else None
    return ReplyMap(
        [
            (b"name", g.name),
            (b"last-delivered-id", g.last_id.encode()),
            (b"entries-read", entries_read),
            (b"lag", lag(s, g)),
            (b"pel-count", len(g.pel)),
            (b"nacked-count", sum(1 for _, n in g.pel.items() if n.consumer is None)),
            (b"pending", pending),
            (b"consumers", consumers),
        ]
    )
