"""XGROUP (CREATE, SETID, DESTROY, CREATECONSUMER, DELCONSUMER, HELP), XACK, the internal
XSETCONSUMER, and XINFO GROUPS / CONSUMERS.

Effects: CREATE ships `XGROUP CREATE key group <concrete id> ENTRIESREAD n [MKSTREAM]` (`$`
resolved, the counter explicit); SETID ships `XGROUP SETID key group <concrete id> ENTRIESREAD
n`; CREATECONSUMER ships itself plus XSETCONSUMER with the creation time; DESTROY, DELCONSUMER
and XACK ship themselves (XACK with only the IDs it acknowledged) when they changed something.
"""

from __future__ import annotations

from typing import Final

from ..context import Ctx
from ..errors import NO_SUCH_KEY, StreamError, bad_subcommand_args
from ..groups import INVALID_ENTRIES_READ, ConsumerGroup
from ..ids import MIN_ID, parse_loose, parse_strict
from ..lag import lag
from ..reply import OK, Reply, ReplyMap
from ..stream import Stream
from .args import cstr, parse_ll, word
from .groupbase import consumer_effect, no_such_group, touch_consumer
from .info import help_reply

_NEEDS_KEY: Final = (
    "The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to "
    "use the MKSTREAM option to create an empty stream automatically."
)

HELP_LINES: Final = (
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
)


def _entries_read(arg: bytes) -> int:
    n = parse_ll(arg)
    if n < 0 and n != INVALID_ENTRIES_READ:
        raise StreamError("value for ENTRIESREAD must be positive or -1")
    return n


def _options(ctx: Ctx, create: bool) -> tuple[bool, int]:
    """CREATE's / SETID's words after the ID: (MKSTREAM given, ENTRIESREAD or -1). Parsed
    before anything is looked up, whatever the word count (that is checked later)."""
    argv = ctx.argv
    mkstream = False
    entries_read = INVALID_ENTRIES_READ
    i = 5
    while i < len(argv):
        w = word(argv[i])
        if create and w == b"mkstream":
            mkstream = True
            i += 1
        elif w == b"entriesread" and i + 1 < len(argv):
            entries_read = _entries_read(argv[i + 1])
            i += 2
        else:
            raise bad_subcommand_args("XGROUP", argv[1])
    return mkstream, entries_read


def _capped(ctx: Ctx, entries_read: int, s: Stream) -> int:
    """ENTRIESREAD is capped at entries-added (Redis 8.2+), but not on replay: a `>` read can
    count past entries-added (after a too-high ENTRIESREAD) and its shipped SETID must set
    exactly that counter on the replica."""
    return entries_read if ctx.replicated else min(entries_read, s.entries_added)


def _group_or_error(
    ctx: Ctx, *, create: bool = False, mkstream: bool = False
) -> tuple[Stream | None, ConsumerGroup | None]:
    """The key (WRONGTYPE first) and group, with XGROUP's missing-key and NOGROUP errors
    (MKSTREAM skips both checks; CREATE and DESTROY accept a missing group)."""
    argv = ctx.argv
    s = ctx.keyspace.stream(argv[2])
    if mkstream:
        return s, s.cgroups.get(argv[3]) if s is not None else None
    if s is None:
        raise StreamError(_NEEDS_KEY)
    g = s.cgroups.get(argv[3])
    if g is None and not create and word(argv[1]) != b"destroy":
        raise no_such_group(argv[2], argv[3])
    return s, g


def xgroup_create(ctx: Ctx) -> Reply:
    argv = ctx.argv
    mkstream, entries_read = _options(ctx, create=True)
    s, g = _group_or_error(ctx, create=True, mkstream=mkstream)
    if len(argv) > 8:
        raise bad_subcommand_args("XGROUP", argv[1])
    if cstr(argv[4]) == b"$":
        last = s.last_id if s is not None else MIN_ID
    else:
        last = parse_strict(argv[4])
    if g is not None:
        raise StreamError("Consumer Group name already exists", "BUSYGROUP")
    created = s is None
    if s is None:
        s = ctx.keyspace.stream_or_create(argv[2], ctx.config.idmp)
    entries_read = _capped(ctx, entries_read, s)
    s.cgroups[argv[3]] = ConsumerGroup(argv[3], last, entries_read, s.cgroups_ref)
    effect = [b"XGROUP", b"CREATE", argv[2], argv[3], last.encode()]
    effect += [b"ENTRIESREAD", b"%d" % entries_read]
    if created:
        effect.append(b"MKSTREAM")
        ctx.touch(argv[2])
    ctx.propagate(effect)
    return OK


def xgroup_setid(ctx: Ctx) -> Reply:
    argv = ctx.argv
    _, entries_read = _options(ctx, create=False)
    s, g = _group_or_error(ctx)
    assert s is not None and g is not None
    if len(argv) not in (5, 7):
        raise bad_subcommand_args("XGROUP", argv[1])
    new_id = s.last_id if cstr(argv[4]) == b"$" else parse_loose(argv[4])
    g.last_id = new_id
    g.entries_read = _capped(ctx, entries_read, s)
    ctx.propagate(
        [
            b"XGROUP",
            b"SETID",
            argv[2],
            argv[3],
            new_id.encode(),
            b"ENTRIESREAD",
            b"%d" % g.entries_read,
        ]
    )
    return OK


def xgroup_destroy(ctx: Ctx) -> Reply:
    s, g = _group_or_error(ctx)
    if s is None or g is None:
        return 0
    g.forget()
    del s.cgroups[g.name]
    ctx.propagate(list(ctx.argv))
    ctx.signal(ctx.argv[2])  # blocked XREADGROUPs wake up to their NOGROUP error
    return 1


def xgroup_createconsumer(ctx: Ctx) -> Reply:
    _, g = _group_or_error(ctx)
    assert g is not None
    name = ctx.argv[4]
    if g.consumer(name) is not None:
        return 0
    c = touch_consumer(ctx, g, name)
    ctx.propagate(list(ctx.argv))
    ctx.propagate(consumer_effect(ctx.argv[2], g, c))
    return 1


def xgroup_delconsumer(ctx: Ctx) -> Reply:
    _, g = _group_or_error(ctx)
    assert g is not None
    if g.consumer(ctx.argv[4]) is None:
        return 0
    pending = g.delete_consumer(ctx.argv[4])
    ctx.propagate(list(ctx.argv))
    return pending


def xgroup_help(ctx: Ctx) -> Reply:
    return help_reply(ctx.argv[0], HELP_LINES)


def xack(ctx: Ctx) -> Reply:
    argv = ctx.argv
    s = ctx.keyspace.stream(argv[1])
    g = s.cgroups.get(argv[2]) if s is not None else None
    if g is None:
        return 0
    ids = [parse_strict(a) for a in argv[3:]]
    acked = [i for i in ids if g.remove_pending(i) is not None]
    if acked:
        ctx.propagate([b"XACK", argv[1], argv[2], *(i.encode() for i in acked)])
    return len(acked)


def xsetconsumer(ctx: Ctx) -> Reply:
    """XSETCONSUMER key group consumer SEEN ms ACTIVE ms: internal, sets exact times."""
    argv = ctx.argv
    if len(argv) != 8 or word(argv[4]) != b"seen" or word(argv[6]) != b"active":
        raise StreamError("syntax error")
    seen, active = parse_ll(argv[5]), parse_ll(argv[7])
    s = ctx.keyspace.stream(argv[1])
    g = s.cgroups.get(argv[2]) if s is not None else None
    if g is None:
        raise no_such_group(argv[1], argv[2])
    c = g.consumer(argv[3]) or g.create_consumer(argv[3], seen)
    c.seen_time, c.active_time = seen, active
    ctx.propagate(list(argv))
    return OK


def group_info(s_lag: int | None, g: ConsumerGroup) -> ReplyMap:
    return ReplyMap(
        [
            (b"name", g.name),
            (b"consumers", len(g.consumers)),
            (b"pending", len(g.pel)),
            (b"last-delivered-id", g.last_id.encode()),
            (b"entries-read", g.entries_read if g.entries_read != INVALID_ENTRIES_READ else None),
            (b"lag", s_lag),
        ]
    )


def xinfo_groups(ctx: Ctx) -> Reply:
    s = ctx.keyspace.stream(ctx.argv[2])
    if s is None:
        raise StreamError(NO_SUCH_KEY)
    return [group_info(lag(s, s.cgroups[n]), s.cgroups[n]) for n in sorted(s.cgroups)]


def xinfo_consumers(ctx: Ctx) -> Reply:
    argv = ctx.argv
    s = ctx.keyspace.stream(argv[2])
    if s is None:
        raise StreamError(NO_SUCH_KEY)
    g = s.cgroups.get(argv[3])
    if g is None:
        raise no_such_group(argv[2], argv[3])
    now = ctx.now_ms
    out: list[Reply] = []
    for name in sorted(g.consumers):
        c = g.consumers[name]
        out.append(
            ReplyMap(
                [
                    (b"name", name),
                    (b"pending", len(c.pel)),
                    (b"idle", max(now - c.seen_time, 0)),
                    # not clamped, unlike idle (Redis 7.2+ does the same)
                    (b"inactive", now - c.active_time if c.active_time != -1 else -1),
                ]
            )
        )
    return out
