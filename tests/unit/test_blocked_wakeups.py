"""Blocked XREAD / XREADGROUP on an in-process Primary: what wakes them, as in Redis 8.8.

* A blocked XREADGROUP hears of its key being overwritten (SET: WRONGTYPE), deleted (DEL,
  FLUSHALL: NOGROUP) or its group destroyed (NOGROUP) at once: Redis blocks it with
  unblock_on_nokey and re-executes it when the key is signaled as deleted.
* A blocked XREAD does not: a key that is deleted or stops being a stream leaves it waiting.
* XREADGROUP ... CLAIM min-idle BLOCK is re-run when its oldest pending entry becomes idle
  enough (Redis's stream_claim_pending_keys), so two CLAIM readers and one XADD answer both.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import pytest
from test_lease_gate import make_primary

from xstream.engine import StreamError
from xstream.engine.reply import Reply
from xstream.primary.primary import Primary

NOGROUP = "NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def w(*words: str | int) -> list[bytes]:
    return [str(x).encode() for x in words]


async def answer(call: Awaitable[Any], within: float) -> Reply | str:
    """The reply (or error line) of a call, failing if it takes longer than `within` s."""
    try:
        reply, _ = await asyncio.wait_for(call, within)
    except StreamError as e:
        return e.line
    return reply  # type: ignore[no-any-return]


async def group_reader(p: Primary, *extra: str | int) -> asyncio.Task[Any]:
    await p.write(w("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"), None)
    argv = w("XREADGROUP", "GROUP", "g", "c", *extra, "BLOCK", 0, "STREAMS", "s", ">")
    task = asyncio.ensure_future(p.execute(argv))
    await asyncio.sleep(0.02)
    assert not task.done()
    return task


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (("SET", "s", "x"), WRONGTYPE),
        (("DEL", "s"), NOGROUP),
        (("FLUSHALL",), NOGROUP),
        (("XGROUP", "DESTROY", "s", "g"), NOGROUP),
    ],
)
def test_blocked_xreadgroup_fails_at_once_when_its_key_or_group_goes(
    tmp_path: Path, change: tuple[str, ...], error: str
) -> None:
    async def scenario() -> Reply | str:
        p = make_primary(tmp_path)
        task = await group_reader(p)
        await p.execute(w(*change))
        return await answer(task, 1.0)

    assert asyncio.run(scenario()) == error


def test_blocked_xread_keeps_waiting_when_its_key_becomes_a_string(tmp_path: Path) -> None:
    async def scenario() -> tuple[bool, Reply | str]:
        p = make_primary(tmp_path)
        await p.write(w("XADD", "s", "1-0", "f", "v"), None)
        task = asyncio.ensure_future(p.execute(w("XREAD", "BLOCK", 0, "STREAMS", "s", "$")))
        await asyncio.sleep(0.02)
        await p.execute(w("SET", "s", "x"))
        await asyncio.sleep(0.05)
        waiting = not task.done()
        await p.execute(w("DEL", "s"))
        await p.execute(w("XADD", "s", "2-0", "f", "w"))
        return waiting, await answer(task, 1.0)

    waiting, reply = asyncio.run(scenario())
    assert waiting
    assert reply == [[b"s", [[b"2-0", [b"f", b"w"]]]]]


def test_two_claim_readers_and_one_xadd_answer_both(tmp_path: Path) -> None:
    async def scenario() -> list[Reply | str]:
        p = make_primary(tmp_path)
        await p.write(w("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"), None)
        readers = []
        for c in ("a", "b"):  # a blocks first, so a is served first
            argv = w(
                "XREADGROUP", "GROUP", "g", c, "CLAIM", 100, "BLOCK", 2000, "STREAMS", "s", ">"
            )
            readers.append(asyncio.ensure_future(p.execute(argv)))
            await asyncio.sleep(0.02)
        await p.write(w("XADD", "s", "1-0", "f", "v"), None)
        return [await answer(r, 1.5) for r in readers]

    first, second = asyncio.run(scenario())
    assert first == [[b"s", [[b"1-0", [b"f", b"v"], 0, 0]]]]
    assert isinstance(second, list)
    [[key, [[entry_id, fields, idle, count]]]] = second  # type: ignore[misc]
    assert (key, entry_id, fields, count) == (b"s", b"1-0", [b"f", b"v"], 1)
    assert isinstance(idle, int) and idle >= 100


def test_claim_reader_gets_an_entry_once_it_has_been_idle_long_enough(tmp_path: Path) -> None:
    async def scenario() -> tuple[Reply | str, float]:
        p = make_primary(tmp_path)
        await p.write(w("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"), None)
        await p.write(w("XADD", "s", "1-0", "f", "v"), None)
        await p.write(w("XREADGROUP", "GROUP", "g", "other", "STREAMS", "s", ">"), None)
        t0 = time.monotonic()
        argv = w("XREADGROUP", "GROUP", "g", "c", "BLOCK", 5000, "CLAIM", 300, "STREAMS", "s", ">")
        reply = await answer(p.execute(argv), 2.0)
        return reply, time.monotonic() - t0

    reply, took = asyncio.run(scenario())
    assert isinstance(reply, list)
    [[_, [[entry_id, _, idle, count]]]] = reply  # type: ignore[misc]
    assert (entry_id, count) == (b"1-0", 1)
    assert isinstance(idle, int) and idle >= 300
    assert 0.25 <= took < 1.0


def test_a_blocked_xread_waits_on_its_database(tmp_path: Path) -> None:
    """A read blocked in db 9 is woken by an XADD in db 9 only, and a stream MOVEd there."""

    async def scenario() -> tuple[bool, Reply | str, Reply | str]:
        p = make_primary(tmp_path)
        read = w("XREAD", "BLOCK", 0, "STREAMS", "s", "$")
        task = asyncio.ensure_future(p.execute(read, None, 0, 9))
        await asyncio.sleep(0.02)
        await p.execute(w("XADD", "s", "1-0", "f", "db0"))
        await asyncio.sleep(0.05)
        waiting = not task.done()
        await p.execute(w("XADD", "s", "2-0", "f", "db9"), None, 0, 9)
        first = await answer(task, 1.0)
        moved = asyncio.ensure_future(
            p.execute(w("XREAD", "BLOCK", 0, "STREAMS", "t", 0), None, 0, 4)
        )
        await asyncio.sleep(0.02)
        await p.execute(w("XADD", "t", "5-0", "f", "v"), None, 0, 3)
        await p.execute(w("MOVE", "t", 4), None, 0, 3)
        return waiting, first, await answer(moved, 1.0)

    waiting, first, moved = asyncio.run(scenario())
    assert waiting
    assert first == [[b"s", [[b"2-0", [b"f", b"db9"]]]]]
    assert moved == [[b"t", [[b"5-0", [b"f", b"v"]]]]]
