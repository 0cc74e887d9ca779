"""Several commands run back to back on the engine, as one write: one record, one log append,
one settle (Primary.commit_batch). Used by EXEC and by a RESP pipeline's run of writes.

    batch = Batch()
    batch.run(engine, argv, now_ms)     per command, on the event loop with no await between
    batch.replies                       each command's reply or StreamError, in order
    batch.result                        the effects, signaled and touched keys of all of them

Each command is all-or-nothing on its own (Engine.execute): one that fails leaves its error
in its place and nothing behind, the others stay applied (Redis's EXEC: no rollback). A read
that would block answers at once, as a blocking command inside MULTI does in Redis (XREAD
BLOCK: a null array); its effects (XREADGROUP creating its consumer) are kept.
"""

from __future__ import annotations

from xstream.engine import NULL_ARRAY, Engine, Result, StreamError
from xstream.engine.reply import Reply
from xstream.node.metrics import METRICS

Argv = list[bytes]


class Batch:
    __slots__ = ("replies", "result")

    def __init__(self) -> None:
        self.replies: list[Reply | StreamError] = []  # in command order
        self.result = Result(None)  # all effects, signaled and touched keys together

    def run(self, engine: Engine, argv: Argv, now_ms: int) -> None:
        try:
            r = engine.execute(argv, now_ms)
        except StreamError as e:
            self.fail(e)
            return
        self.add(NULL_ARRAY if r.block is not None else r.reply)
        out = self.result
        if r.effects:
            out.effects += r.effects
        if r.signaled:
            out.signaled += r.signaled
        if r.touched:
            out.touched += r.touched

    def add(self, reply: Reply) -> None:
        self.replies.append(reply)

    def fail(self, error: StreamError) -> None:
        METRICS.errors.labels(error.line.split(" ", 1)[0]).inc()
        self.replies.append(error)

    def failed(self, error: StreamError) -> list[Reply | StreamError]:
        """The replies once the batch as a whole failed after running (its record could not
        be logged: rolled back; or it was not acknowledged): `error` in place of every reply
        that was not an error already, as each command sent alone would have been answered."""
        return [r if isinstance(r, StreamError) else error for r in self.replies]
