"""How a client reaches a node: the `Transport` protocol, and an in-process one for tests.

A transport sends argvs and returns raw engine replies (`xstream.engine.reply.Reply`: bytes,
int, None, NULL_ARRAY, Status, list, ReplyMap, PairMap), exactly what the engine answered,
or raises `ResponseError` carrying Redis's error line. Shaping replies into redis-py's Python
values is the client's job, not the transport's. `write` says whether the command changes
state: a gRPC transport sends writes to the primary and may send reads to a replica.

    execute(argv, write)          -> Reply                     (raises ResponseError)
    execute_many(argvs, write)    -> [Reply | ResponseError]   (a pipeline: one round trip)
    xadd_many(key, entries)       -> [id, ...]                 (batched `XADD key *`)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol

from xstream.client.exceptions import ResponseError, error_from_line
from xstream.engine import Engine, StreamError
from xstream.engine.reply import NULL_ARRAY, Reply

Argv = list[bytes]


class Transport(Protocol):
    def execute(self, argv: Argv, *, write: bool) -> Reply: ...

    def execute_many(
        self, argvs: Sequence[Argv], *, write: bool
    ) -> list[Reply | ResponseError]: ...

    def xadd_many(self, key: bytes, entries: Sequence[Sequence[bytes]]) -> list[bytes]: ...

    def close(self) -> None: ...


class EngineTransport:
    """An in-process engine behind the Transport protocol (tests, `xstream shell`).

    A read that would block answers at once as if its timeout had passed (null array).
    """

    def __init__(self, engine: Engine | None = None) -> None:
        self.engine = engine or Engine()

    def execute(self, argv: Argv, *, write: bool) -> Reply:
        try:
            result = self.engine.execute(argv, int(time.time() * 1000))
        except StreamError as e:
            raise error_from_line(e.line) from None
        return NULL_ARRAY if result.block is not None else result.reply

    def execute_many(self, argvs: Sequence[Argv], *, write: bool) -> list[Reply | ResponseError]:
        out: list[Reply | ResponseError] = []
        for argv in argvs:
            try:
                out.append(self.execute(argv, write=write))
            except ResponseError as e:
                out.append(e)
        return out

    def xadd_many(self, key: bytes, entries: Sequence[Sequence[bytes]]) -> list[bytes]:
        try:
            result = self.engine.xadd_many(key, entries, int(time.time() * 1000))
        except StreamError as e:
            raise error_from_line(e.line) from None
        return [r for r in result.reply if isinstance(r, bytes)]  # type: ignore[union-attr]

    def close(self) -> None:
        pass
