"""XDEL and XSETID: tombstones and metadata. Both ship themselves verbatim when they change
something (XDEL: only the IDs actually deleted; XSETID: always on success, as Redis does)."""

from __future__ import annotations

from ..context import Ctx
from ..errors import NO_SUCH_KEY, StreamError, syntax_error
from ..ids import MIN_ID, StreamID, parse_strict
from ..reply import OK, Reply
from ..stream import Stream
from .args import parse_ll, word
from .read import last_valid_id


def delete_entries(s: Stream, ids: list[StreamID]) -> list[bool]:
    """Tombstone live entries as XDEL does (max_deleted_entry_id, first_id kept right)."""
    done = []
    first_hit = False
    for eid in ids:
        ok = s.delete(eid)
        done.append(ok)
        if ok:
            s.max_deleted_entry_id = max(s.max_deleted_entry_id, eid)
            first_hit = first_hit or eid == s.first_id
    if any(done):
        if not s.length:
            s.first_id = MIN_ID
        elif first_hit:
            s.refresh_first_id()
    return done


def xdel(ctx: Ctx) -> Reply:
    key = ctx.argv[1]
    s = ctx.keyspace.stream(key)
    if s is None:
        return 0
    ids = [parse_strict(a) for a in ctx.argv[2:]]
    done = delete_entries(s, ids)
    deleted = [e for e, ok in zip(ids, done, strict=True) if ok]
    if deleted:
        ctx.propagate([b"XDEL", key, *(e.encode() for e in deleted)])
        ctx.touch(key)
    return len(deleted)


def xsetid(ctx: Ctx) -> Reply:
    argv = ctx.argv
    new_last = parse_strict(argv[2])
    entries_added = -1
    max_deleted = MIN_ID
    i = 3
    while i < len(argv):
        more = len(argv) - 1 - i
        w = word(argv[i])
        if w == b"entriesadded" and more:
            entries_added = parse_ll(argv[i + 1])
            if entries_added < 0:
                raise StreamError("entries_added must be positive")
        elif w == b"maxdeletedid" and more:
            max_deleted = parse_strict(argv[i + 1])
            if new_last < max_deleted:
                raise StreamError(
                    "The ID specified in XSETID is smaller than the provided max_deleted_entry_id"
                )
        else:
            raise syntax_error()
        i += 2
    s = ctx.keyspace.stream(argv[1])
    if s is None:
        raise StreamError(NO_SUCH_KEY)
    if new_last < s.max_deleted_entry_id:
        raise StreamError("The ID specified in XSETID is smaller than current max_deleted_entry_id")
    if s.length:
        if new_last < last_valid_id(s):
            raise StreamError(
                "The ID specified in XSETID is smaller than the target stream top item"
            )
        if entries_added != -1 and s.length > entries_added:
            raise StreamError(
                "The entries_added specified in XSETID is smaller than the target stream length"
            )
    s.last_id = new_last
    if entries_added != -1:
        s.entries_added = entries_added
    if max_deleted != MIN_ID:
        s.max_deleted_entry_id = max_deleted
    ctx.propagate(list(argv))
    return OK
