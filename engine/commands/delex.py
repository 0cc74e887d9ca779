"""XDELEX and XACKDEL (Redis 8.2): deletions and acknowledgements with a reference policy.

    XDELEX  key [KEEPREF|DELREF|ACKED] IDS numids id ...
        per ID: 1 deleted, -1 no such entry, 2 kept because still referenced (ACKED)
    XACKDEL key group [KEEPREF|DELREF|ACKED] IDS numids id ...
        per ID: 1 acknowledged and deleted (or already gone), 2 acknowledged but kept (ACKED,
        another group still needs it), -1 not in this group's PEL

Options may come before or after the IDS block; every ID is parsed before anything changes,
and only once the key (and, for XACKDEL, the group) is found: as in Redis, a missing one
answers -1 for each ID whatever the IDs are.
Both ship themselves verbatim whenever anything changed, *including* an XDELEX DELREF that only
dropped PEL references to an entry that was already gone: Redis does not propagate that case
and its replicas keep the references (propagation.md B2).
"""

from __future__ import annotations

from ..context import Ctx
from ..errors import StreamError, syntax_error
from ..ids import StreamID, parse_strict
from ..refs import drop_refs, is_referenced
from ..reply import Reply
from ..stream import Policy, Stream
from .add_trim import POLICIES
from .args import parse_ll, word
from .delete import delete_entries


def parse_policy_ids(argv: list[bytes], start: int) -> tuple[Policy, list[bytes]]:
    """The policy and the IDS block's words, not yet parsed as IDs (`parse_ids`)."""
    policy: Policy = "KEEPREF"
    policy_given = False
    raw: list[bytes] | None = None
    i = start
    while i < len(argv):
        w = word(argv[i])
        if w in POLICIES and not policy_given:
            policy, policy_given = POLICIES[w], True
            i += 1
        elif w == b"ids" and raw is None and i + 1 < len(argv):
            n = parse_ll(argv[i + 1], "Number of IDs must be a positive integer")
            if n <= 0:
                raise StreamError("Number of IDs must be a positive integer")
            if n > len(argv) - i - 2:
                raise StreamError("The `numids` parameter must match the number of arguments")
            raw = argv[i + 2 : i + 2 + n]
            i += 2 + n
        else:
            raise syntax_error()
    if raw is None:
        raise StreamError("IDS option is required")
    return policy, raw


def parse_ids(raw: list[bytes]) -> list[StreamID]:
    return [parse_strict(a) for a in raw]


def _delete_one(s: Stream, entry_id: StreamID, policy: Policy) -> int:
    """Delete under a policy: 1 deleted, -1 no such entry, 2 kept (still referenced).

    ACKED asks about references before looking for the entry, as Redis does, so an ID some
    group still needs answers 2 even when it is not (or no longer) an entry of the stream.
    """
    if policy == "ACKED" and is_referenced(s, entry_id):
        return 2
    deleted = delete_entries(s, [entry_id])[0]
    if policy == "DELREF":
        drop_refs(s, entry_id)
    return 1 if deleted else -1


def xdelex(ctx: Ctx) -> Reply:
    argv = ctx.argv
    s = ctx.keyspace.stream(argv[1])
    policy, raw = parse_policy_ids(argv, 2)
    if s is None:
        return [-1] * len(raw)
    ids = parse_ids(raw)
    changed = False
    out: list[Reply] = []
    for entry_id in ids:
        refs_before = entry_id in s.cgroups_ref
        res = _delete_one(s, entry_id, policy)
        out.append(res)
        changed = changed or res == 1 or (refs_before and entry_id not in s.cgroups_ref)
    if changed:
        ctx.propagate(list(argv))
    if 1 in out:  # entries deleted, as XDEL
        ctx.touch(argv[1])
    return out


def xackdel(ctx: Ctx) -> Reply:
    argv = ctx.argv
    s = ctx.keyspace.stream(argv[1])
    policy, raw = parse_policy_ids(argv, 3)
    g = s.cgroups.get(argv[2]) if s is not None else None
    if s is None or g is None:
        return [-1] * len(raw)
    ids = parse_ids(raw)
    out: list[Reply] = []
    deleted = False
    for entry_id in ids:
        if g.remove_pending(entry_id) is None:
            out.append(-1)
            continue
        res = _delete_one(s, entry_id, policy)
        out.append(2 if res == 2 else 1)
        deleted = deleted or res == 1
    if any(r != -1 for r in out):
        ctx.propagate(list(argv))
    if deleted:  # entries deleted, as XDEL
        ctx.touch(argv[1])
    return out
