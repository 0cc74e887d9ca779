"""Replaying a record's effects: a run of shipped XADDs to one stream appended as one.

A primary ships every XADD rewritten as `XADD key <ms>-<seq> field value ...` (add_trim.py)
and logs a RESP pipeline's run of writes as one record, so a replica's records are mostly
runs of such XADDs to one key. `apply_xadds` appends a run in one pass (Stream.append_entries:
one listpack write per node) instead of dispatching one command, one option parse and one
context per entry. A run is

    effects[i:j]   each `XADD key <ms>-<seq> field value ...`, no option, on effects[i]'s key,
                   the IDs ascending from above the stream's last ID, no entry too large, the
                   key missing or a stream

and it ends at anything else: another command or key, any option (a trim, IDMP, a policy), an
ID not above the one before, a key of another type, an entry too large. Those take the
general path (Engine.apply), which applies them or raises the error the command raises. A run
is taken only where each of its XADDs would succeed, so this never raises, and it leaves what
the XADDs one by one leave: the same entries, node bytes, last_id, first_id, entries_added,
and a stream created as XADD creates it. The caller reports each XADD's signaled and touched
key (one per XADD, as the general path does).

An XAPPEND (commands/append.py: a batched `XADD *` run, the primary's effect of an Ingest
batch or a RESP pipeline of XADDs) is appended the same way by `apply_xappend`, when it is as
the primary writes it (an upper-case name, the ID as StreamID.encode writes it, the counts as
append.effect writes them and matching the arguments), its IDs do not carry into the next
millisecond, it fits in a node's hard cap and its ID is above the stream's last: then it
would succeed, and it is appended without the command's dispatch, context and effect copy,
its IDs computed as they are written rather than made one StreamID per entry. Anything else
takes the general path, which applies it or raises its error.

A replica gives `apply_packed` each record's payload first: one such XAPPEND alone in its
record is appended from the payload's bytes (packed.py), its fields compared and its numbers
read where they lie and only its values sliced, to the same bytes; any other payload is
decoded into argvs for `apply_record`.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import packed
from .commands.append import plain_bounds
from .context import Argv
from .ids import MIN_ID, UINT64_MAX, StreamID
from .keyspace import Keyspace
from .settings import EngineConfig
from .stream import LISTPACK_MAX_SIZE, Stream


def apply_xadds(keyspace: Keyspace, config: EngineConfig, effects: Sequence[Argv], i: int) -> int:
    """Append the run of XADDs starting at effects[i] (see the module doc) to its stream in
    `keyspace`; the index after the run, i when effects[i] starts none."""
    if plain_xadd_id(effects[i]) is None:
        return i
    key = effects[i][1]
    value = keyspace.get(key)
    if value is not None and not isinstance(value, Stream):
        return i
    last = value.last_id if value is not None else MIN_ID
    elements: list[bytes] = []  # every entry's field/value elements, back to back
    bounds = [0]  # entry k is elements[bounds[k] : bounds[k + 1]]
    ids: list[StreamID] = []
    j = i
    while j < len(effects):
        argv = effects[j]
        eid = plain_xadd_id(argv)
        if eid is None or argv[1] != key or not last < eid or _too_large(argv):
            break
        elements += argv[3:]
        bounds.append(len(elements))
        ids.append(eid)
        last = eid
        j += 1
    if j == i:
        return i
    s = value if value is not None else keyspace.stream_or_create(key, config.idmp)
    s.append_entries(elements, bounds, ids, config.node_max_bytes, config.node_max_entries)
    return j


def apply_xappend(keyspace: Keyspace, config: EngineConfig, argv: Argv) -> bool:
    """Append the XAPPEND `argv` to its stream in `keyspace` if it is one the module doc
    describes (it then succeeds: what commands/append.py's xappend leaves); False, with
    nothing changed, for any other."""
    if len(argv) < 6 or argv[0] != b"XAPPEND":
        return False
    first = shipped_id(argv[2])
    bounds = plain_bounds(argv[3], 4)
    if first is None or bounds is None or bounds[-1] != len(argv):
        return False
    if first.seq + len(bounds) - 2 > UINT64_MAX or _too_large(argv):
        return False
    key = argv[1]
    value = keyspace.get(key)
    if value is not None and not isinstance(value, Stream):
        return False
    if not (value.last_id if value is not None else MIN_ID) < first:
        return False
    s = value if value is not None else keyspace.stream_or_create(key, config.idmp)
    s.append_entries(argv, bounds, [], config.node_max_bytes, config.node_max_entries, first)
    return True


def apply_packed(keyspace: Keyspace, config: EngineConfig, buf: bytes) -> bytes | None:
    """apply_xappend of a record's payload `buf` (argvs.py's form) that is one XAPPEND,
    appended straight from the payload (packed.py: no bytes object per element); its key, or
    None, with nothing changed, for any other payload (the caller decodes it)."""
    lengths = packed.lengths(buf)  # None unless the payload is one whole argv
    if lengths is None or len(lengths) < 6 or len(buf) > LISTPACK_MAX_SIZE:  # (_too_large)
        return None
    a, b = 4 + 4 * len(lengths), 4 + 4 * len(lengths) + lengths[0]
    if buf[a:b] != b"XAPPEND":
        return None
    a, b = b, b + lengths[1]
    key = buf[a:b]
    a, b = b, b + lengths[2]
    first = shipped_id(buf[a:b])
    a, b = b, b + lengths[3]
    counts = plain_counts(buf[a:b])
    if first is None or counts is None or first.seq + len(counts) - 1 > UINT64_MAX:
        return None
    elements = 0
    for c in counts:
        elements += c
    if elements != len(lengths) - 4:
        return None
    value = keyspace.get(key)
    if value is not None and not isinstance(value, Stream):
        return None
    if not (value.last_id if value is not None else MIN_ID) < first:
        return None
    s = value if value is not None else keyspace.stream_or_create(key, config.idmp)
    run = packed.PackedRun(buf, lengths, 4, b, counts)
    s.append_packed(run, first, config.node_max_bytes, config.node_max_entries)
    return key


def plain_counts(arg: bytes) -> list[int] | None:
    """The counts of an XAPPEND's counts argument as append.effect writes them, the forms
    append.plain_bounds takes (even decimal counts of 2 or more, one comma between two); None
    for any other (which the general path reads, or refuses). A batch's rows are mostly
    alike: one count repeated is recognized whole (compiled, a walk costs ~170 instructions
    a byte: 8 KB for an Ingest batch of 4,000)."""
    comma = arg.find(b",")
    if comma > 0:
        one = arg[:comma]
        m = (len(arg) + 1) // (comma + 1)
        if (one + b",") * (m - 1) + one == arg:
            counts = plain_counts(one)
            return counts * m if counts is not None else None
    out: list[int] = []
    count = 0
    digits = 0
    for i in range(len(arg)):
        c = arg[i]
        if 48 <= c <= 57:
            count = count * 10 + c - 48
            digits += 1
        elif c == 44 and digits and count >= 2 and not count & 1:
            out.append(count)
            count = digits = 0
        else:
            return None
    if not digits or count < 2 or count & 1:
        return None
    out.append(count)
    return out


def plain_xadd_id(argv: Argv) -> StreamID | None:
    """The ID of `XADD key <ms>-<seq> field value ...` (no option, whole pairs), else None.

    XADD's parser takes such an argv[2] as the ID at once (no option word is an ID)."""
    argc = len(argv)
    if argc < 5 or not argc & 1:
        return None
    name = argv[0]
    if name != b"XADD" and name.upper() != b"XADD":
        return None
    return shipped_id(argv[2])


def shipped_id(arg: bytes) -> StreamID | None:
    """`<ms>-<seq>`, 1 to 19 digits a side (how StreamID.encode writes every shipped ID), else
    None: the forms, and the answer, of ids.py's fast path for them (where every such number
    is below 2**64), read digit by digit (compiled, a quarter of partition and int()). Times
    ten is two shifts: compiled, a product past 2**31 leaves machine words (a long multiply,
    ~500 instructions per digit of a 13-digit ms), a shift stays in them up to 2**62."""
    n = len(arg)
    dash = arg.find(b"-")
    if not 0 < dash < 20 or not 0 < n - dash - 1 < 20:
        return None
    ms = 0
    for i in range(dash):
        c = arg[i]
        if c < 48 or c > 57:
            return None
        ms = (ms << 3) + (ms << 1) + c - 48
    seq = 0
    for i in range(dash + 1, n):
        c = arg[i]
        if c < 48 or c > 57:
            return None
        seq = (seq << 3) + (seq << 1) + c - 48
    return StreamID(ms, seq)


def _too_large(argv: Argv) -> bool:
    """Whether the XADD may hit "Elements are too large" (counting every word: a bound)."""
    total = 0
    for word in argv:
        total += len(word)
    return total > LISTPACK_MAX_SIZE
