"""Which commands a client may send twice, and IDMP stamping that makes any `XADD *` one of them.

A command may be repeated after an unknown outcome (the link broke after sending, ACKTIMEOUT,
LEASELOST) only if running it twice leaves the same state and answers the same reply as
running it once:

    repeatable       a read (the engine's table says it writes nothing), WAIT, PING, ROLE,
                     or an XADD carrying IDMP / IDMPAUTO (the stream remembers the producer's
                     idempotent ID, replicated, and answers a repeat with the original ID)
    not repeatable   every other write: XADD without IDMP (a second entry), XADD with an
                     explicit ID (a second call fails), XACK, XREADGROUP, XCLAIM, ...

Stamping (`Stamper`, a client's `idempotent_xadd=True`): an `XADD key ... * field value ...`
without IDMP/IDMPAUTO gets `IDMP <producer> <n>` right after the key (XADD options come in any
order before the ID), where the producer is one random name per client and n counts up per
client. The scan below mirrors the engine's XADD option parser (add_trim.parse_add_trim); an
argv it does not understand is left alone and counts as not repeatable.

A stream remembers at most `idmp_maxsize` IDs per producer (100 unless XCFGSET says otherwise),
oldest dropped first, so a pipeline carrying more than STAMP_WINDOW XADDs with one producer on
one key is not repeatable as a whole: its first IDs may be forgotten before the repeat.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import count

from xstream.engine import StreamError
from xstream.engine.commands import lookup

Argv = list[bytes]
STAMP_WINDOW = 100  # a stream's default idmp_maxsize: IDs remembered per producer
SERVER_READS = frozenset({b"WAIT", b"PING", b"ROLE"})  # node.SERVER_COMMANDS, none writes
_TRIMS = frozenset({b"maxlen", b"minid"})
_FLAGS = frozenset({b"keepref", b"delref", b"acked", b"nomkstream"})


@dataclass(frozen=True, slots=True)
class XaddShape:
    """Where an XADD's ID sits and the IDMP producer it carries."""

    id_index: int  # argv index of the ID argument
    auto: bool  # the ID is `*`
    producer: bytes | None  # IDMP / IDMPAUTO producer, None without


def scan_xadd(argv: Sequence[bytes]) -> XaddShape | None:
    """The shape of an `XADD key [options] id field value ...`; None if argv is not one."""
    if len(argv) < 3 or argv[0].upper() != b"XADD":
        return None
    i, producer = 2, None
    while i < len(argv):
        word = argv[i].lower()
        if word == b"*":
            break
        if word in _TRIMS:
            i += 3 if argv[i + 1 : i + 2] in ([b"~"], [b"="]) else 2
        elif word == b"limit":
            i += 2
        elif word in _FLAGS:
            i += 1
        elif word == b"idmpauto" and i + 1 < len(argv):
            producer, i = argv[i + 1], i + 2
        elif word == b"idmp" and i + 2 < len(argv):
            producer, i = argv[i + 1], i + 3
        else:
            break  # an explicit ID
    if i >= len(argv):
        return None
    return XaddShape(i, argv[i] == b"*", producer)


def is_idempotent_xadd(argv: Sequence[bytes]) -> bool:
    shape = scan_xadd(argv)
    return shape is not None and shape.auto and shape.producer is not None


def changes_nothing(argv: Sequence[bytes]) -> bool:
    """True for a command that writes nothing (a read, or a server command such as WAIT)."""
    if not argv:
        return False
    if argv[0].upper() in SERVER_READS:
        return True
    try:
        return not lookup(list(argv)).write
    except StreamError:  # unknown to the engine: assume the worst
        return False


def repeatable(argv: Sequence[bytes]) -> bool:
    """May this command be sent again after an unknown outcome? (see the module comment)"""
    return changes_nothing(argv) or is_idempotent_xadd(argv)


def repeatable_batch(argvs: Sequence[Sequence[bytes]]) -> bool:
    """May this pipeline be sent again as a whole? Every command repeatable, and no producer
    carrying more XADDs to one key than a stream remembers."""
    if not all(map(repeatable, argvs)):
        return False
    per_key = Counter(
        (a[1], shape.producer)
        for a in argvs
        if (shape := scan_xadd(a)) is not None and shape.producer is not None
    )
    return all(n <= STAMP_WINDOW for n in per_key.values())


def needs_stamp(argv: Sequence[bytes]) -> bool:
    """An `XADD ... *` without IDMP/IDMPAUTO."""
    shape = scan_xadd(argv)
    return shape is not None and shape.auto and shape.producer is None


def stamp(argv: Argv, producer: bytes, iid: bytes) -> Argv:
    """argv with `IDMP producer iid` after the key if it needs a stamp, else argv itself."""
    if not needs_stamp(argv):
        return argv
    return [*argv[:2], b"IDMP", producer, iid, *argv[2:]]


class Stamper:
    """One client's IDMP producer and counter (`idempotent_xadd=True`)."""

    def __init__(self, producer: str | None = None) -> None:
        self.producer = (producer or f"xstream-client:{uuid.uuid4().hex}").encode()
        self._next = count(1)  # next() is atomic under the GIL: threads may share a client

    def stamp(self, argv: Argv) -> Argv:
        if not needs_stamp(argv):
            return argv
        return stamp(argv, self.producer, b"%d" % next(self._next))
