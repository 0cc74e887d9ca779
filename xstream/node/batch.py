"""Several commands run back to back on the engine, as one write: one record, one log append,
one settle (Primary.commit_batch). Used by EXEC and by a RESP pipeline's run of writes.

    batch = Batch()
    batch.run(engine, argv, now_ms)     per command, on the event loop with no await between
    batch.run_writes(engine, argvs, now_ms)   the same for a run of writes, with runs of
                                        `XADD key * field value ...` on one key as one
                                        Engine.xadd_many (one effect, XAPPEND)
    batch.replies                       each command's reply or StreamError, in order
    batch.result                        the effects, signaled and touched keys of all of them

Each command is all-or-nothing on its own (Engine.execute): one that fails leaves its error
in its place and nothing behind, the others stay applied (Redis's EXEC: no rollback). A read
that would block answers at once, as a blocking command inside MULTI does in Redis (XREAD
BLOCK: a null array); its effects (XREADGROUP creating its consumer) are kept.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import cast

from xstream.engine import NULL_ARRAY, Engine, Result, StreamError
from xstream.engine.commands import SUBCOMMANDS, lookup
from xstream.engine.reply import Reply
from xstream.node.stats import STATS

Argv = list[bytes]


class Batch:
    __slots__ = ("_alike", "_db", "_t0", "replies", "result")

    def __init__(self) -> None:
        self.replies: list[Reply | StreamError] = []  # in command order
        self.result = Result(None)  # all effects, signaled and touched keys together
        self._db = 0  # the database the batch's effects so far end in
        self._t0 = time.perf_counter()  # when the batch began (commandstats' usec)
        self._alike: bytes | None = None  # every command's head, when run_writes found one run

    def run(self, engine: Engine, argv: Argv, now_ms: int, db: int = 0) -> None:
        try:
            r = engine.execute(argv, now_ms, db)
        except StreamError as e:
            self.fail(e)
            return
        self.add(NULL_ARRAY if r.block is not None else r.reply)
        self._take(r)

    def _take(self, r: Result) -> None:
        """`r`'s effects, signaled and touched keys, into the batch's. A command's effects
        name their database (a SELECT first unless it is db 0); after effects in another
        database, db 0's need their SELECT 0, since the record applies as one run."""
        out = self.result
        if r.effects:
            selects = r.effects[0][0].upper() == b"SELECT"
            if not selects and self._db:
                out.effects.append([b"SELECT", b"0"])
            self._db = int(r.effects[0][1]) if selects else 0
            out.effects += r.effects
        if r.signaled:
            out.signaled += r.signaled
        if r.touched:
            out.touched += r.touched

    def run_writes(self, engine: Engine, argvs: list[Argv], now_ms: int, db: int = 0) -> None:
        """`run` each of `argvs` in turn, but a run of plain `XADD key * field value ...` on
        one key as one Engine.xadd_many: the same IDs, state and replies as one by one, one
        effect (XAPPEND) and one listpack write per node instead of one per entry. If such a
        run fails as a whole (xadd_many is all-or-nothing) it runs command by command, so
        each gets its own reply or error."""
        i, n = 0, len(argvs)
        while i < n:
            j = i + 1
            key = _plain_xadd_key(argvs[i])
            if key is not None:
                head, alike = argvs[i][0], True
                while j < n:
                    a = argvs[j]  # _plain_xadd_key(a) == key, inlined for a head spelt alike
                    same = a[0] == head and len(a) >= 5 and a[1] == key and a[2] == b"*"
                    if not same:
                        if _plain_xadd_key(a) != key:
                            break
                        alike = False
                    j += 1
                if i == 0 and j == n and alike:
                    self._alike = head  # one run, one spelling: `count` needs no _fullnames
            if j - i == 1 or key is None or not self._xadd_run(engine, key, argvs[i:j], now_ms, db):
                for argv in argvs[i:j]:
                    self.run(engine, argv, now_ms, db)
            i = j

    def _xadd_run(
        self, engine: Engine, key: bytes, argvs: list[Argv], now_ms: int, db: int = 0
    ) -> bool:
        try:
            r = engine.xadd_many(key, [argv[3:] for argv in argvs], now_ms, db)
        except StreamError:
            return False
        self.replies += cast("list[Reply]", r.reply)  # the IDs
        self._take(r)
        return True

    def count(self, argvs: list[Argv]) -> None:
        """Count the commands run in INFO commandstats (as Node.execute counts one), the
        batch's time so far shared among them. `argvs` are those run (by run_writes, or by
        run one by one)."""
        n, head = len(argvs), self._alike
        names = {head.lower().decode("utf-8", "replace"): n} if head else _fullnames(argvs)
        STATS.calls_in_batch(names, n, _usec(self._t0))

    def add(self, reply: Reply) -> None:
        self.replies.append(reply)

    def fail(self, error: StreamError) -> None:
        self.replies.append(error)

    def failed(self, error: StreamError) -> list[Reply | StreamError]:
        """The replies once the batch as a whole failed after running (its record could not
        be logged: rolled back; or it was not acknowledged): `error` in place of every reply
        that was not an error already, as each command sent alone would have been answered."""
        return [r if isinstance(r, StreamError) else error for r in self.replies]


def _usec(t0: float) -> int:
    return int((time.perf_counter() - t0) * 1_000_000)


def _fullnames(argvs: list[Argv]) -> dict[str, int]:
    """How many of `argvs` each commandstats name counts; a head that names no container is
    decoded once per batch (a pipeline's run of XADDs: one count of the heads, one decode)."""
    heads = [argv[0] for argv in argvs]
    if heads and heads.count(heads[0]) == len(heads) and heads[0].lower() not in SUBCOMMANDS:
        # One command (a pipeline's run of XADDs), counted without a Counter: its __init__
        # (ABC isinstance, update) cost ~1,300 instructions per XADD of 16 to a batch.
        return {heads[0].lower().decode("utf-8", "replace"): len(heads)}
    out: dict[str, int] = {}
    for head, n in Counter(heads).items():
        if head.lower() in SUBCOMMANDS:  # a container: each one's subcommand
            for argv in argvs:
                if argv[0] == head:
                    name = _fullname(argv)
                    out[name] = out.get(name, 0) + 1
            continue
        name = head.lower().decode("utf-8", "replace")
        out[name] = out.get(name, 0) + n
    return out


def _fullname(argv: Argv) -> str:
    """commandstats' name: the command's (lower case), `container|sub` for a subcommand."""
    head = argv[0].lower()
    if head in SUBCOMMANDS:
        try:
            return lookup(argv).fullname
        except StreamError:
            pass
    return head.decode("utf-8", "replace")


def _plain_xadd_key(argv: Argv) -> bytes | None:
    """The key of `XADD key * field value ...` (no options), else None."""
    if len(argv) >= 5 and argv[2] == b"*" and argv[0].upper() == b"XADD":
        return argv[1]
    return None
