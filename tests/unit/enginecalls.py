"""Calling an Engine from tests: words as str/bytes/int, errors as their Redis line.

Every call checks the engine's structural integrity afterwards, and a failing call must leave
the keyspace digest unchanged (commands are all-or-nothing).
"""

from __future__ import annotations

from xstream.engine import Engine, EngineConfig, Result, StreamError
from xstream.engine.reply import Reply, ReplyMap

Word = str | bytes | int


def argv(*words: Word) -> list[bytes]:
    out = []
    for w in words:
        if isinstance(w, bytes):
            out.append(w)
        elif isinstance(w, int):
            out.append(b"%d" % w)
        else:
            out.append(w.encode())
    return out


def run(e: Engine, *words: Word, now: int = 1000, db: int = 0) -> Result:
    """Execute (in database `db`); on success check integrity, on error check nothing
    changed, then re-raise."""
    before = e.digest()
    try:
        result = e.execute(argv(*words), now_ms=now, db=db)
    except StreamError:
        assert e.digest() == before, "a failed command changed the keyspace"
        raise
    e.check_integrity()
    return result


def call(e: Engine, *words: Word, now: int = 1000, db: int = 0) -> Reply:
    return run(e, *words, now=now, db=db).reply


def error(e: Engine, *words: Word, now: int = 1000, db: int = 0) -> str:
    """The error line the command fails with (the test fails if it succeeds)."""
    try:
        reply = run(e, *words, now=now, db=db).reply
    except StreamError as err:
        return err.line
    raise AssertionError(f"expected an error, got {reply!r}")


def effects(e: Engine, *words: Word, now: int = 1000, db: int = 0) -> list[list[bytes]]:
    return run(e, *words, now=now, db=db).effects


def engine(max_bytes: int = 4096, max_entries: int = 100) -> Engine:
    return Engine(EngineConfig(node_max_bytes=max_bytes, node_max_entries=max_entries))


def stream_of(e: Engine, key: Word = "s", *ids: str) -> Engine:
    """Add entries `ids` (explicit) with one field each to `key`."""
    for i in ids:
        call(e, "XADD", key, i, "f", i)
    return e


def info(e: Engine, key: Word = "s") -> ReplyMap:
    reply = call(e, "XINFO", "STREAM", key)
    assert isinstance(reply, ReplyMap)
    return reply


def ids_of(e: Engine, key: Word = "s") -> list[bytes]:
    reply = call(e, "XRANGE", key, "-", "+")
    assert isinstance(reply, list)
    return [item[0] for item in reply]  # type: ignore[index]
